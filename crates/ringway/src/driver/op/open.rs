//! `Open`: opens a file.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Opens `path` (`openat(AT_FDCWD, ...)`, always with `O_CLOEXEC`); completes with the
/// new fd. On epoll it runs at submission.
#[derive(Debug, Clone, Copy)]
pub struct Open {
    /// A NUL-terminated path, readable until the final completion.
    pub path: *const libc::c_char,
    /// `open(2)` flags.
    pub flags: i32,
    /// The mode of a file it creates.
    pub mode: u32,
}

impl OpKind for Open {
    fn fd(&self) -> Option<RawFd> {
        None
    }
    fn yields_fd(&self) -> bool {
        true
    }
}

impl UringOp for Open {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), self.path)
            .flags(self.flags | libc::O_CLOEXEC)
            .mode(self.mode)
            .build()
    }
}

impl EpollOp for Open {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `path` is a readable NUL-terminated string.
        let r = unsafe { libc::open(self.path, self.flags | libc::O_CLOEXEC, self.mode) };
        Attempt::result(super::syscall_result(r as isize))
    }
}
