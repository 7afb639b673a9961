//! `MkDir`: makes a directory.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Makes the directory `path` with `mode` (less the umask)
/// (`mkdirat(AT_FDCWD, path, mode)`); completes with 0. On epoll it runs at submission.
#[derive(Debug, Clone, Copy)]
pub struct MkDir {
    /// A NUL-terminated path, readable until the final completion.
    pub path: *const libc::c_char,
    /// Permission bits.
    pub mode: u32,
}

impl OpKind for MkDir {
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

impl UringOp for MkDir {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::MkDirAt::new(types::Fd(libc::AT_FDCWD), self.path)
            .mode(self.mode)
            .build()
    }
}

impl EpollOp for MkDir {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `path` is a NUL-terminated string.
        let r = unsafe { libc::mkdirat(libc::AT_FDCWD, self.path, self.mode) };
        Attempt::result(super::syscall_result(r as isize))
    }
}
