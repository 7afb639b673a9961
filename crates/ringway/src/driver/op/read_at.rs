//! `ReadAt`: reads a file at an offset.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Reads up to `len` bytes at `offset` into `buf` (`pread`). On epoll it runs at
/// submission: regular files are always "ready".
#[derive(Debug, Clone, Copy)]
pub struct ReadAt {
    /// The file.
    pub fd: RawFd,
    /// Where the bytes go: writable and unaliased until the final completion.
    pub buf: *mut u8,
    /// Room at `buf`.
    pub len: u32,
    /// Where in the file.
    pub offset: u64,
}

impl OpKind for ReadAt {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for ReadAt {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Read::new(types::Fd(self.fd), self.buf, self.len)
            .offset(self.offset)
            .build()
    }
}

impl EpollOp for ReadAt {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `buf` is writable for `len` bytes.
        let r = unsafe {
            libc::pread(
                self.fd,
                self.buf.cast(),
                self.len as usize,
                self.offset as libc::off_t,
            )
        };
        Attempt::result(super::syscall_result(r))
    }
}
