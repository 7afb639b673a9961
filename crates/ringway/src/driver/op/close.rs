//! `Close`: closes an fd.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Closes `fd`. The caller gives up the fd at submission. On epoll it runs at submission.
#[derive(Debug, Clone, Copy)]
pub struct Close {
    /// The fd.
    pub fd: RawFd,
}

impl OpKind for Close {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for Close {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Close::new(types::Fd(self.fd)).build()
    }
}

impl EpollOp for Close {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: no pointers; the caller gave the fd up.
        let r = unsafe { libc::close(self.fd) };
        Attempt::result(super::syscall_result(r as isize))
    }
}
