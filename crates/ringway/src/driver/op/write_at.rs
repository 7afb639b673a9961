//! `WriteAt`: writes a file at an offset.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Writes `len` bytes from `buf` at `offset` (`pwrite`). On epoll it runs at submission.
#[derive(Debug, Clone, Copy)]
pub struct WriteAt {
    /// The file.
    pub fd: RawFd,
    /// The bytes: readable until the final completion.
    pub buf: *const u8,
    /// How many.
    pub len: u32,
    /// Where in the file.
    pub offset: u64,
}

impl OpKind for WriteAt {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for WriteAt {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Write::new(types::Fd(self.fd), self.buf, self.len)
            .offset(self.offset)
            .build()
    }
}

impl EpollOp for WriteAt {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `buf` is readable for `len` bytes.
        let r = unsafe {
            libc::pwrite(
                self.fd,
                self.buf.cast(),
                self.len as usize,
                self.offset as libc::off_t,
            )
        };
        Attempt::result(super::syscall_result(r))
    }
}
