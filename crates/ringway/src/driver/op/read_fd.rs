//! `ReadFd`: reads from a pollable fd that is not a socket (a pipe, a signalfd).

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Reads up to `len` bytes into `buf` at the fd's current position (`read(2)`);
/// completes with the count, 0 at end of file. For fds that have readiness but are not
/// sockets, where `Recv` answers `ENOTSOCK` and `ReadAt` `ESPIPE`: pipes, signalfds,
/// eventfds. io_uring waits for data itself (the fd may be non-blocking: pipes and
/// signalfds arm a poll inside the kernel); epoll waits for readability, then reads.
#[derive(Debug, Clone, Copy)]
pub struct ReadFd {
    /// The fd.
    pub fd: RawFd,
    /// Where the bytes go: writable and unaliased until the final completion.
    pub buf: *mut u8,
    /// Room at `buf`.
    pub len: u32,
}

impl OpKind for ReadFd {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for ReadFd {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        // Offset -1: the fd's own position (a pipe has none and takes no other).
        opcode::Read::new(types::Fd(self.fd), self.buf, self.len)
            .offset(u64::MAX)
            .build()
    }
}

impl EpollOp for ReadFd {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `buf` is writable for `len` bytes.
        let r = unsafe { libc::read(self.fd, self.buf.cast(), self.len as usize) };
        // A short read emptied the pipe.
        Attempt::from_syscall(super::syscall_result(r), |n| n > 0 && (n as u32) < self.len)
    }
}
