//! `WaitId`: waits for a child process to exit, through its pidfd.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Waits until the child behind `pidfd` has exited and reaps it
/// (`waitid(P_PIDFD, pidfd, info, WEXITED)`); completes with 0 and the child's
/// status in `*info`. io_uring has `IORING_OP_WAITID` from Linux 6.7 (callers check
/// [`supported`](super::supported) first and wait with a `Poll` on the pidfd
/// otherwise); epoll waits for the pidfd to be readable (it is once the child has
/// exited), then reaps without blocking.
#[derive(Debug, Clone, Copy)]
pub struct WaitId {
    /// A pidfd (`pidfd_open`) of a child of this process.
    pub pidfd: RawFd,
    /// Where the kernel writes the child's status: writable until the final completion.
    pub info: *mut libc::siginfo_t,
}

impl OpKind for WaitId {
    fn fd(&self) -> Option<RawFd> {
        Some(self.pidfd)
    }
}

impl UringOp for WaitId {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::WaitId::new(libc::P_PIDFD, self.pidfd as libc::id_t, libc::WEXITED)
            .infop(self.info.cast_const())
            .build()
    }
}

impl EpollOp for WaitId {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.pidfd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `info` is writable. A zeroed `si_pid` after a
        // successful WNOHANG call means the child has not exited yet.
        let r = unsafe {
            (*self.info).si_signo = 0;
            libc::waitid(
                libc::P_PIDFD,
                self.pidfd as libc::id_t,
                self.info,
                libc::WEXITED | libc::WNOHANG,
            )
        };
        if r < 0 {
            return Attempt::result(super::syscall_result(r as isize));
        }
        // SAFETY: waitid succeeded and wrote (or left zeroed) the struct.
        if unsafe { (*self.info).si_signo } == 0 {
            return Attempt::Blocked;
        }
        Attempt::result(0)
    }
}
