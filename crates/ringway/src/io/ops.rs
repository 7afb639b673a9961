//! The operations the runtime's I/O types use, each with the resources it owns.

use std::ffi::CString;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::Operation;
use crate::buf::{IoBuf, IoBufMut};
use crate::driver::{op as raw, Completion, Op, RawAddr};

/// Receive into a caller buffer (`recv`), or read at an offset when `offset` is set.
pub struct Read<B> {
    pub(crate) fd: RawFd,
    pub(crate) buf: B,
    pub(crate) offset: Option<u64>,
}

impl<B: IoBufMut + Unpin> Operation for Read<B> {
    type Output = (io::Result<usize>, B);
    fn op(&mut self) -> Op {
        let len = self.buf.bytes_total().min(u32::MAX as usize) as u32;
        let buf = self.buf.stable_mut_ptr();
        match self.offset {
            Some(offset) => raw::ReadAt {
                fd: self.fd,
                buf,
                len,
                offset,
            }
            .into(),
            None => raw::Recv {
                fd: self.fd,
                buf,
                len,
            }
            .into(),
        }
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

/// Send a caller buffer (`send`), or write at an offset when `offset` is set.
pub struct Write<B> {
    pub(crate) fd: RawFd,
    pub(crate) buf: B,
    pub(crate) offset: Option<u64>,
}

impl<B: IoBuf + Unpin> Operation for Write<B> {
    type Output = (io::Result<usize>, B);
    fn op(&mut self) -> Op {
        let len = self.buf.bytes_init().min(u32::MAX as usize) as u32;
        let buf = self.buf.stable_ptr();
        match self.offset {
            Some(offset) => raw::WriteAt {
                fd: self.fd,
                buf,
                len,
                offset,
            }
            .into(),
            None => raw::Send {
                fd: self.fd,
                buf,
                len,
            }
            .into(),
        }
    }
    fn complete(self, c: Completion) -> Self::Output {
        (c.io_result(), self.buf)
    }
}

/// Send several buffers with one `sendmsg`.
pub struct WriteVectored<B> {
    pub(crate) fd: RawFd,
    pub(crate) bufs: Vec<B>,
    pub(crate) iov: Vec<libc::iovec>,
}

impl<B: IoBuf + Unpin> Operation for WriteVectored<B> {
    type Output = (io::Result<usize>, Vec<B>);
    fn op(&mut self) -> Op {
        self.iov.clear();
        self.iov.extend(self.bufs.iter().map(|b| libc::iovec {
            iov_base: b.stable_ptr() as *mut libc::c_void,
            iov_len: b.bytes_init(),
        }));
        raw::SendVectored {
            fd: self.fd,
            iov: self.iov.as_ptr(),
            iovcnt: self.iov.len() as u32,
        }
        .into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        (c.io_result(), self.bufs)
    }
}

/// Receive one datagram and its source.
pub struct RecvFrom<B> {
    pub(crate) fd: RawFd,
    pub(crate) buf: B,
}

impl<B: IoBufMut + Unpin> Operation for RecvFrom<B> {
    type Output = (io::Result<(usize, SocketAddr)>, B);
    fn op(&mut self) -> Op {
        raw::RecvFrom {
            fd: self.fd,
            buf: self.buf.stable_mut_ptr(),
            len: self.buf.bytes_total().min(u32::MAX as usize) as u32,
        }
        .into()
    }
    fn complete(mut self, c: Completion) -> Self::Output {
        let r = c.io_result().and_then(|n| {
            // SAFETY: the kernel wrote `n` bytes.
            unsafe { self.buf.set_init(n) };
            let addr = c
                .addr
                .ok_or_else(|| io::Error::other("datagram without an IP source address"))?;
            Ok((n, addr))
        });
        (r, self.buf)
    }
}

/// Send one datagram to an address.
pub struct SendTo<B> {
    pub(crate) fd: RawFd,
    pub(crate) buf: B,
    pub(crate) addr: RawAddr,
}

impl<B: IoBuf + Unpin> Operation for SendTo<B> {
    type Output = (io::Result<usize>, B);
    fn op(&mut self) -> Op {
        raw::SendTo {
            fd: self.fd,
            buf: self.buf.stable_ptr(),
            len: self.buf.bytes_init().min(u32::MAX as usize) as u32,
            addr: &self.addr,
        }
        .into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        (c.io_result(), self.buf)
    }
}

/// Accept one connection.
#[derive(Debug)]
pub struct Accept {
    pub(crate) fd: RawFd,
}

impl Operation for Accept {
    type Output = io::Result<(OwnedFd, Option<SocketAddr>)>;
    fn op(&mut self) -> Op {
        raw::Accept { fd: self.fd }.into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        let fd = c.io_result()?;
        // SAFETY: the kernel just created this fd for us.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        Ok((fd, c.addr))
    }
}

/// Connect a socket, optionally with a (linked) timeout.
#[derive(Debug)]
pub struct Connect {
    pub(crate) fd: RawFd,
    pub(crate) addr: RawAddr,
    pub(crate) timeout: Option<Duration>,
}

impl Operation for Connect {
    type Output = io::Result<()>;
    fn op(&mut self) -> Op {
        raw::Connect {
            fd: self.fd,
            addr: &self.addr,
        }
        .into()
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    fn complete(self, c: Completion) -> Self::Output {
        c.io_result().map(drop)
    }
}

/// Open a file.
#[derive(Debug)]
pub struct Open {
    pub(crate) path: CString,
    pub(crate) flags: i32,
    pub(crate) mode: u32,
}

impl Operation for Open {
    type Output = io::Result<OwnedFd>;
    fn op(&mut self) -> Op {
        raw::Open {
            path: self.path.as_ptr(),
            flags: self.flags,
            mode: self.mode,
        }
        .into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        let fd = c.io_result()?;
        // SAFETY: the kernel just opened this fd for us.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }
}

/// An op whose only output is its result (fsync, shutdown, nop).
#[derive(Debug)]
pub struct ResultOnly(pub(crate) Op);

impl Operation for ResultOnly {
    type Output = io::Result<usize>;
    fn op(&mut self) -> Op {
        self.0
    }
    fn complete(self, c: Completion) -> Self::Output {
        c.io_result()
    }
}

/// Move bytes between two fds inside the kernel (`splice`); one must be a pipe.
pub struct Splice {
    pub(crate) fd_in: RawFd,
    pub(crate) off_in: Option<u64>,
    pub(crate) fd_out: RawFd,
    pub(crate) len: u32,
    /// Kept alive until the final completion, even if the future is dropped: the fds'
    /// owner (see `io::Pipe`).
    pub(crate) _hold: Option<std::rc::Rc<dyn std::any::Any>>,
}

impl Operation for Splice {
    type Output = io::Result<usize>;
    fn op(&mut self) -> Op {
        raw::Splice {
            fd_in: self.fd_in,
            off_in: self.off_in,
            fd_out: self.fd_out,
            len: self.len,
        }
        .into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        c.io_result()
    }
}

impl<B> std::fmt::Debug for Read<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Read")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl<B> std::fmt::Debug for Write<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Write")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl<B> std::fmt::Debug for WriteVectored<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteVectored")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl<B> std::fmt::Debug for RecvFrom<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvFrom")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl<B> std::fmt::Debug for SendTo<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendTo")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Splice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Splice")
            .field("fd_in", &self.fd_in)
            .field("off_in", &self.off_in)
            .field("fd_out", &self.fd_out)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}
