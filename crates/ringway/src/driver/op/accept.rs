//! `Accept` and `AcceptMulti`: connections from a listening socket.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{AfterEnd, Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;
use crate::driver::addr::RawAddr;
use crate::driver::completion::Completion;

/// Accepts one connection; the completion carries the new fd (`O_CLOEXEC`) and the
/// peer's address.
#[derive(Debug, Clone, Copy)]
pub struct Accept {
    /// The listening socket.
    pub fd: RawFd,
}

impl OpKind for Accept {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
    fn yields_fd(&self) -> bool {
        true
    }
}

impl UringOp for Accept {
    fn sqe(&self, scratch: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        scratch.addr = RawAddr::empty();
        let (addr, len) = scratch.addr.as_out_ptr();
        opcode::Accept::new(types::Fd(self.fd), addr, len)
            .flags(libc::SOCK_CLOEXEC)
            .build()
    }
    const FILLS: bool = true;
    fn fill(&self, scratch: &UringScratch, c: &mut Completion) {
        c.addr = scratch.addr.to_socket_addr();
    }
}

impl EpollOp for Accept {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        let mut peer = RawAddr::empty();
        let (addr, len) = peer.as_out_ptr();
        // SAFETY: `addr` and `len` point into `peer`, live for the call.
        let r =
            unsafe { libc::accept4(self.fd, addr, len, libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) };
        let attempt = Attempt::from_syscall(super::syscall_result(r as isize), |_| false);
        match attempt {
            Attempt::Done { mut c, drained } => {
                if c.result >= 0 {
                    c.addr = peer.to_socket_addr();
                }
                Attempt::Done { c, drained }
            }
            blocked => blocked,
        }
    }
}

/// Accepts connections until cancelled: one completion per connection (its fd; no
/// address, which multishot accept does not report).
#[derive(Debug, Clone, Copy)]
pub struct AcceptMulti {
    /// The listening socket.
    pub fd: RawFd,
}

impl OpKind for AcceptMulti {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
    fn yields_fd(&self) -> bool {
        true
    }
    fn is_multishot(&self) -> bool {
        true
    }
    fn after_end(&self, result: i32) -> AfterEnd {
        // The kernel may stop a multishot accept after a success (a full CQ): go on.
        // An error (EMFILE, say) is the owner's to see and decide on.
        if result >= 0 {
            AfterEnd::Rearm
        } else {
            AfterEnd::Finish
        }
    }
}

impl UringOp for AcceptMulti {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::AcceptMulti::new(types::Fd(self.fd))
            .flags(libc::SOCK_CLOEXEC)
            .build()
    }
}

impl EpollOp for AcceptMulti {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: null address pointers: the peer is not asked for.
        let r = unsafe {
            libc::accept4(
                self.fd,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        Attempt::from_syscall(super::syscall_result(r as isize), |_| false)
    }
}
