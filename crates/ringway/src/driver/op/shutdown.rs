//! `Shutdown`: ends one or both directions of a socket.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// `shutdown(2)` with `how` (`SHUT_RD`, `SHUT_WR` or `SHUT_RDWR`). On epoll it runs at
/// submission.
#[derive(Debug, Clone, Copy)]
pub struct Shutdown {
    /// The socket.
    pub fd: RawFd,
    /// Which direction(s).
    pub how: i32,
}

impl OpKind for Shutdown {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for Shutdown {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Shutdown::new(types::Fd(self.fd), self.how).build()
    }
}

impl EpollOp for Shutdown {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: no pointers.
        let r = unsafe { libc::shutdown(self.fd, self.how) };
        Attempt::result(super::syscall_result(r as isize))
    }
}
