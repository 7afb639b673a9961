//! `SendVectored`: several buffers in one `sendmsg`.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Sends `iovcnt` buffers described by `iov`, in order, in one call (`MSG_NOSIGNAL`).
#[derive(Debug, Clone, Copy)]
pub struct SendVectored {
    /// The socket.
    pub fd: RawFd,
    /// The buffers: the array and what it points to stay readable until the final
    /// completion.
    pub iov: *const libc::iovec,
    /// How many entries `iov` has.
    pub iovcnt: u32,
}

impl OpKind for SendVectored {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for SendVectored {
    fn sqe(&self, scratch: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        scratch.msg = empty_msghdr();
        scratch.msg.msg_iov = self.iov as *mut libc::iovec;
        scratch.msg.msg_iovlen = self.iovcnt as usize;
        opcode::SendMsg::new(types::Fd(self.fd), &scratch.msg)
            .flags(libc::MSG_NOSIGNAL as u32)
            .build()
    }
}

impl EpollOp for SendVectored {
    fn readiness(&self) -> Readiness {
        Readiness::Write(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        let mut msg = empty_msghdr();
        msg.msg_iov = self.iov as *mut libc::iovec;
        msg.msg_iovlen = self.iovcnt as usize;
        // SAFETY: the caller's promise: `iov` and its buffers are readable.
        let r = unsafe { libc::sendmsg(self.fd, &msg, libc::MSG_NOSIGNAL) };
        Attempt::from_syscall(super::syscall_result(r), |n| {
            // SAFETY: as above, `iov` has `iovcnt` readable entries.
            let total: usize = (0..self.iovcnt as usize)
                .map(|i| unsafe { (*self.iov.add(i)).iov_len })
                .sum();
            n >= 0 && (n as usize) < total
        })
    }
}

/// A `msghdr` with no name, no buffers, no control data.
pub(crate) fn empty_msghdr() -> libc::msghdr {
    // SAFETY: msghdr is plain old data; all zeroes (null pointers, zero lengths) is valid.
    unsafe { std::mem::zeroed() }
}
