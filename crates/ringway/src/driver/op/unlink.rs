//! `Unlink`: removes a file or an empty directory.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Removes `path`: a file, or with `dir` an empty directory
/// (`unlinkat(AT_FDCWD, path, dir ? AT_REMOVEDIR : 0)`); completes with 0. On epoll it
/// runs at submission.
#[derive(Debug, Clone, Copy)]
pub struct Unlink {
    /// A NUL-terminated path, readable until the final completion.
    pub path: *const libc::c_char,
    /// Remove a directory (`rmdir`) rather than a file.
    pub dir: bool,
}

impl Unlink {
    fn flags(&self) -> i32 {
        if self.dir {
            libc::AT_REMOVEDIR
        } else {
            0
        }
    }
}

impl OpKind for Unlink {
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

impl UringOp for Unlink {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::UnlinkAt::new(types::Fd(libc::AT_FDCWD), self.path)
            .flags(self.flags())
            .build()
    }
}

impl EpollOp for Unlink {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `path` is a NUL-terminated string.
        let r = unsafe { libc::unlinkat(libc::AT_FDCWD, self.path, self.flags()) };
        Attempt::result(super::syscall_result(r as isize))
    }
}
