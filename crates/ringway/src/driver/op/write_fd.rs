//! `WriteFd`: writes to a pollable fd that is not a socket (a pipe).

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Writes up to `len` bytes from `buf` at the fd's current position (`write(2)`);
/// completes with the count. The writing twin of [`ReadFd`](super::ReadFd): for pipes
/// (a child's stdin), where `Send` answers `ENOTSOCK` and `WriteAt` `ESPIPE`.
#[derive(Debug, Clone, Copy)]
pub struct WriteFd {
    /// The fd.
    pub fd: RawFd,
    /// The bytes: readable until the final completion.
    pub buf: *const u8,
    /// How many.
    pub len: u32,
}

impl OpKind for WriteFd {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for WriteFd {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Write::new(types::Fd(self.fd), self.buf, self.len)
            .offset(u64::MAX)
            .build()
    }
}

impl EpollOp for WriteFd {
    fn readiness(&self) -> Readiness {
        Readiness::Write(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `buf` is readable for `len` bytes.
        let r = unsafe { libc::write(self.fd, self.buf.cast(), self.len as usize) };
        // A short write filled the pipe.
        Attempt::from_syscall(super::syscall_result(r), |n| {
            n >= 0 && (n as u32) < self.len
        })
    }
}
