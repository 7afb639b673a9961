//! `RecvFrom`: one datagram and its source address.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::send_vectored::empty_msghdr;
use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;
use crate::driver::addr::RawAddr;
use crate::driver::completion::Completion;

/// Receives one datagram into `buf`; the completion carries its source address.
#[derive(Debug, Clone, Copy)]
pub struct RecvFrom {
    /// The socket.
    pub fd: RawFd,
    /// Where the datagram goes: writable and unaliased until the final completion.
    pub buf: *mut u8,
    /// Room at `buf`.
    pub len: u32,
}

impl OpKind for RecvFrom {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for RecvFrom {
    fn sqe(&self, scratch: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        scratch.addr = RawAddr::empty();
        scratch.iov = libc::iovec {
            iov_base: self.buf.cast(),
            iov_len: self.len as usize,
        };
        scratch.msg = empty_msghdr();
        let (name, namelen) = scratch.addr.as_out_ptr();
        scratch.msg.msg_name = name.cast();
        // SAFETY: `namelen` points at the address's length field, just written.
        scratch.msg.msg_namelen = unsafe { *namelen };
        scratch.msg.msg_iov = &mut scratch.iov;
        scratch.msg.msg_iovlen = 1;
        opcode::RecvMsg::new(types::Fd(self.fd), &mut scratch.msg).build()
    }
    const FILLS: bool = true;
    fn fill(&self, scratch: &UringScratch, c: &mut Completion) {
        c.addr = scratch.addr.to_socket_addr();
    }
}

impl EpollOp for RecvFrom {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        let mut source = RawAddr::empty();
        let (addr, len) = source.as_out_ptr();
        // SAFETY: `buf` is writable for `len` bytes (the caller's promise); the address
        // pointers point into `source`, live for the call.
        let r =
            unsafe { libc::recvfrom(self.fd, self.buf.cast(), self.len as usize, 0, addr, len) };
        match Attempt::from_syscall(super::syscall_result(r), |_| false) {
            Attempt::Done { mut c, drained } => {
                if c.result >= 0 {
                    c.addr = source.to_socket_addr();
                }
                Attempt::Done { c, drained }
            }
            blocked => blocked,
        }
    }
}
