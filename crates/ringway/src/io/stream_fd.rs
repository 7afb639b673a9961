//! [`StreamFd`]: an owned fd that is pollable but not a socket (a pipe end, a
//! signalfd), read and written through the driver like a socket.

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use super::{OpFuture, Operation};
use crate::buf::{IoBuf, IoBufMut, Slice};
use crate::driver::{op as raw, Completion, Op};

/// An owned pollable fd, non-blocking, closed on drop after the driver forgets it.
#[derive(Debug)]
pub(crate) struct StreamFd {
    fd: Option<OwnedFd>,
}

impl StreamFd {
    /// Adopts `fd` as it is, for fds whose blocking mode has a meaning of its own (a
    /// pidfd: non-blocking, `waitid` on it would not wait).
    pub(crate) fn as_is(fd: OwnedFd) -> StreamFd {
        StreamFd { fd: Some(fd) }
    }

    /// Adopts `fd`, making it non-blocking (epoll needs that; io_uring waits for pipes
    /// and signalfds inside the kernel either way).
    pub(crate) fn new(fd: OwnedFd) -> io::Result<StreamFd> {
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on an fd we own; no pointers.
        unsafe {
            let fl = libc::fcntl(raw, libc::F_GETFL);
            if fl < 0 || libc::fcntl(raw, libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(StreamFd { fd: Some(fd) })
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_ref().expect("fd is open").as_raw_fd()
    }

    /// Reads into `buf`; `Ok(0)` at end of file.
    pub(crate) fn read<B: IoBufMut + Unpin>(&self, buf: B) -> OpFuture<FdRead<B>> {
        OpFuture::new(FdRead { fd: self.fd(), buf })
    }

    /// Writes from `buf`; returns how many bytes went.
    pub(crate) fn write<B: IoBuf + Unpin>(&self, buf: B) -> OpFuture<FdWrite<B>> {
        OpFuture::new(FdWrite { fd: self.fd(), buf })
    }

    /// Writes all of `buf`.
    pub(crate) fn write_all<B: IoBuf + Unpin>(&self, buf: B) -> FdWriteAll<B> {
        let total = buf.bytes_init();
        FdWriteAll {
            fd: self.fd(),
            write: Some(OpFuture::new(FdWrite {
                fd: self.fd(),
                buf: Slice::new(buf, 0, total),
            })),
            done: 0,
            total,
        }
    }
}

impl StreamFd {
    /// Gives the fd up without closing it; the driver forgets it first.
    pub(crate) fn into_owned(mut self) -> OwnedFd {
        let fd = self.fd.take().expect("fd is open");
        super::forget_fd(fd.as_raw_fd());
        fd
    }
}

impl Drop for StreamFd {
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take() {
            super::forget_fd(fd.as_raw_fd());
        }
    }
}

/// Read from a pipe or another pollable fd that is not a socket.
pub struct FdRead<B> {
    fd: RawFd,
    buf: B,
}

impl<B: IoBufMut + Unpin + 'static> Operation for FdRead<B> {
    type Output = (io::Result<usize>, B);
    fn op(&mut self) -> Op {
        raw::ReadFd {
            fd: self.fd,
            buf: self.buf.stable_mut_ptr(),
            len: self.buf.bytes_total().min(u32::MAX as usize) as u32,
        }
        .into()
    }
    fn complete(mut self, c: Completion) -> Self::Output {
        let r = c.io_result();
        if let Ok(n) = r {
            // SAFETY: the kernel wrote `n` bytes at the start of the buffer.
            unsafe { self.buf.set_init(n) };
        }
        (r, self.buf)
    }
}

/// Write to a pipe or another pollable fd that is not a socket.
pub struct FdWrite<B> {
    fd: RawFd,
    buf: B,
}

impl<B: IoBuf + Unpin + 'static> Operation for FdWrite<B> {
    type Output = (io::Result<usize>, B);
    fn op(&mut self) -> Op {
        raw::WriteFd {
            fd: self.fd,
            buf: self.buf.stable_ptr(),
            len: self.buf.bytes_init().min(u32::MAX as usize) as u32,
        }
        .into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        (c.io_result(), self.buf)
    }
}

/// Future of a whole write to a pipe: one write after another until every byte is
/// taken, then the buffer comes back.
#[must_use = "futures do nothing unless awaited"]
pub struct FdWriteAll<B: IoBuf + Unpin + 'static> {
    fd: RawFd,
    write: Option<OpFuture<FdWrite<Slice<B>>>>,
    done: usize,
    total: usize,
}

impl<B: IoBuf + Unpin + 'static> Future for FdWriteAll<B> {
    type Output = (io::Result<()>, B);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            let write = this
                .write
                .as_mut()
                .expect("FdWriteAll polled after completion");
            let (r, slice) = ready!(Pin::new(write).poll(cx));
            this.write = None;
            let buf = slice.into_inner();
            match r {
                Ok(0) if this.done < this.total => {
                    let e = io::Error::new(io::ErrorKind::WriteZero, "the pipe took no bytes");
                    return Poll::Ready((Err(e), buf));
                }
                Ok(n) => this.done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready((Err(e), buf)),
            }
            if this.done >= this.total {
                return Poll::Ready((Ok(()), buf));
            }
            this.write = Some(OpFuture::new(FdWrite {
                fd: this.fd,
                buf: Slice::new(buf, this.done, this.total),
            }));
        }
    }
}

impl<B> std::fmt::Debug for FdRead<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FdRead")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl<B> std::fmt::Debug for FdWrite<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FdWrite")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl<B: IoBuf + Unpin + 'static> std::fmt::Debug for FdWriteAll<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FdWriteAll")
            .field("total", &self.total)
            .field("done", &self.done)
            .finish()
    }
}
