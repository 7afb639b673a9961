//! `RecvMsg`: one message into a `msghdr` the submitter owns.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Receives one message (`recvmsg(fd, msg, 0)`); completes with the byte count. Unlike
/// `RecvFrom`, whose source address must be an IP one (it travels in the completion),
/// the kernel writes the source into the caller's `msg_name`, whatever its family: a
/// Unix datagram socket's sender path.
#[derive(Debug, Clone, Copy)]
pub struct RecvMsg {
    /// The socket.
    pub fd: RawFd,
    /// The header, its iovecs and its name buffer: valid, writable where the kernel
    /// writes, and unaliased until the final completion.
    pub msg: *mut libc::msghdr,
}

impl OpKind for RecvMsg {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for RecvMsg {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::RecvMsg::new(types::Fd(self.fd), self.msg).build()
    }
}

impl EpollOp for RecvMsg {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `msg` and what it points to are valid.
        let r = unsafe { libc::recvmsg(self.fd, self.msg, 0) };
        // One datagram per call: a datagram socket may hold more.
        Attempt::from_syscall(super::syscall_result(r), |_| false)
    }
}
