//! [`Pipe`]: a kernel pipe for zero-copy transfers with `splice` (see its docs).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use crate::fs::File;
use crate::io::ops::Splice;
use crate::io::OpFuture;
use crate::runtime::context::with_driver;

/// A kernel pipe owned by the current core, for zero-copy transfers with `splice`.
///
/// Sending a file over a socket normally copies every byte twice through user space
/// (read into a buffer, send from it). `splice` moves page references instead: file ->
/// pipe -> socket, with no copy into the process. A pipe is the kernel's only handle for
/// that, so a sender keeps one (per connection or per core) and pushes a file through it
/// in pipe-sized chunks (64 KiB by default): [`Pipe::splice_from_file`], then
/// [`Pipe::splice_to`] until what went in has come out.
///
/// On io_uring both ends are blocking fds (the kernel runs a splice in a worker). That
/// worker holds the pipe's lock while it waits for room in a socket, so closing the pipe
/// then would block the core until the peer reads: each splice holds the pipe's fds,
/// which are closed only after the last splice's final completion, even if its future
/// was dropped (a connection timed out mid-send). On epoll both ends are non-blocking,
/// and a splice into a full pipe or socket waits for the output to become writable like
/// a send does.
#[derive(Debug)]
pub struct Pipe {
    fds: Rc<Ends>,
}

/// The two ends, closed when the pipe and every splice that uses it are gone.
#[derive(Debug)]
struct Ends {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    /// A new pipe, with the blocking mode the current backend wants. Must be called on a
    /// runtime thread.
    pub fn new() -> io::Result<Pipe> {
        let nonblocking = with_driver(|d| d.socket_flags()) & libc::SOCK_NONBLOCK != 0;
        let mut flags = libc::O_CLOEXEC;
        if nonblocking {
            flags |= libc::O_NONBLOCK;
        }
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two fds pipe2 writes; the result is checked.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both fds are fresh and ours.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Pipe {
            fds: Rc::new(Ends { read, write }),
        })
    }

    /// Moves up to `len` bytes of `file`, from offset `off`, into the pipe. Completes
    /// with the count moved (0 at the end of the file); the file's position is unused.
    pub fn splice_from_file(&self, file: &File, off: u64, len: usize) -> OpFuture<Splice> {
        OpFuture::new(Splice {
            fd_in: file.as_raw_fd(),
            off_in: Some(off),
            fd_out: self.write_fd(),
            len: len.min(u32::MAX as usize) as u32,
            _hold: Some(self.fds.clone()),
        })
    }

    /// Moves up to `len` bytes from the pipe to `out` (a socket, a file or another
    /// pipe), waiting for room in `out`. Completes with the count moved.
    pub fn splice_to(&self, out: &impl AsRawFd, len: usize) -> OpFuture<Splice> {
        OpFuture::new(Splice {
            fd_in: self.read_fd(),
            off_in: None,
            fd_out: out.as_raw_fd(),
            len: len.min(u32::MAX as usize) as u32,
            _hold: Some(self.fds.clone()),
        })
    }

    /// The read end.
    pub fn read_fd(&self) -> RawFd {
        self.fds.read.as_raw_fd()
    }

    /// The write end.
    pub fn write_fd(&self) -> RawFd {
        self.fds.write.as_raw_fd()
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // The epoll backend must forget the fds before their numbers can be reused (it
        // fails what is still parked on them). The fds themselves close when the last
        // splice holding them has ended.
        for fd in [self.read_fd(), self.write_fd()] {
            super::forget_fd(fd);
        }
    }
}
