//! `Rename`: renames a file or directory.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Renames `from` to `to`, replacing `to` if it exists
/// (`renameat2(AT_FDCWD, from, AT_FDCWD, to, 0)`); completes with 0. On epoll it runs at
/// submission.
#[derive(Debug, Clone, Copy)]
pub struct Rename {
    /// A NUL-terminated path, readable until the final completion.
    pub from: *const libc::c_char,
    /// A NUL-terminated path, readable until the final completion.
    pub to: *const libc::c_char,
}

impl OpKind for Rename {
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

impl UringOp for Rename {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        let cwd = types::Fd(libc::AT_FDCWD);
        opcode::RenameAt::new(cwd, self.from, cwd, self.to).build()
    }
}

impl EpollOp for Rename {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: both paths are NUL-terminated strings.
        let r = unsafe { libc::renameat(libc::AT_FDCWD, self.from, libc::AT_FDCWD, self.to) };
        Attempt::result(super::syscall_result(r as isize))
    }
}
