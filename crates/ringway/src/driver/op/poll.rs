//! `Poll`: waits for readiness, for loops (like asyncio's) that do their own I/O.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{AfterEnd, Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Waits until `fd` has any of `events` (`POLLIN`, `POLLOUT`, ...); completes with the
/// ready mask. `multishot` keeps reporting, once per readiness change, until cancelled.
#[derive(Debug, Clone, Copy)]
pub struct Poll {
    /// The fd.
    pub fd: RawFd,
    /// `poll(2)` event bits.
    pub events: u32,
    /// Report every change until cancelled.
    pub multishot: bool,
}

impl OpKind for Poll {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
    fn is_multishot(&self) -> bool {
        self.multishot
    }
    fn after_end(&self, result: i32) -> AfterEnd {
        if result >= 0 {
            AfterEnd::Rearm
        } else {
            AfterEnd::Finish
        }
    }
}

impl UringOp for Poll {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::PollAdd::new(types::Fd(self.fd), self.events)
            .multi(self.multishot)
            .build()
    }
}

impl EpollOp for Poll {
    fn readiness(&self) -> Readiness {
        if self.events & libc::POLLIN as u32 != 0 {
            Readiness::Read(self.fd)
        } else {
            Readiness::Write(self.fd)
        }
    }
    fn once_per_edge(&self) -> bool {
        // A poll reports readiness, it does not consume it: a multishot poll on a ready
        // (or closed) fd would otherwise never stop completing. A one-shot poll ends
        // with its report and leaves the readiness as it was, so the next one on an fd
        // still ready completes at once (its `poll(2)` says so), as io_uring's does:
        // asyncio's `add_reader` is level-triggered, and a callback that reads part of
        // what is there must be called again.
        self.multishot
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        let mut p = libc::pollfd {
            fd: self.fd,
            events: self.events as i16,
            revents: 0,
        };
        // SAFETY: one pollfd, live for the call; a zero timeout never blocks.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        match r {
            0 => Attempt::Blocked,
            r if r < 0 => Attempt::result(super::syscall_result(r as isize)),
            _ => Attempt::result(p.revents as i32),
        }
    }
}
