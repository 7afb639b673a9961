//! `SendTo`: one datagram to an address.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::send_vectored::empty_msghdr;
use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;
use crate::driver::addr::RawAddr;

/// Sends `len` bytes from `buf` as one datagram to `addr` (`MSG_NOSIGNAL`).
#[derive(Debug, Clone, Copy)]
pub struct SendTo {
    /// The socket.
    pub fd: RawFd,
    /// The datagram: readable until the final completion.
    pub buf: *const u8,
    /// Its length.
    pub len: u32,
    /// Where to. Read only while the op is submitted (copied), like `Connect`'s.
    pub addr: *const RawAddr,
}

impl OpKind for SendTo {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
    fn input_addr(&self) -> Option<*const RawAddr> {
        Some(self.addr)
    }
}

impl UringOp for SendTo {
    fn sqe(&self, scratch: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        scratch.iov = libc::iovec {
            iov_base: self.buf as *mut libc::c_void,
            iov_len: self.len as usize,
        };
        scratch.msg = empty_msghdr();
        let (name, namelen) = scratch.addr.as_ptr();
        scratch.msg.msg_name = name as *mut libc::c_void;
        scratch.msg.msg_namelen = namelen;
        scratch.msg.msg_iov = &mut scratch.iov;
        scratch.msg.msg_iovlen = 1;
        opcode::SendMsg::new(types::Fd(self.fd), &scratch.msg)
            .flags(libc::MSG_NOSIGNAL as u32)
            .build()
    }
}

impl EpollOp for SendTo {
    fn readiness(&self) -> Readiness {
        Readiness::Write(self.fd)
    }
    unsafe fn attempt(&self, state: &mut EpollOpState, _: &BufferPool) -> Attempt {
        let (addr, addrlen) = state.addr().as_ptr();
        // SAFETY: `buf` is readable for `len` bytes (the caller's promise); the address
        // lives in `state` for the call.
        let r = unsafe {
            libc::sendto(
                self.fd,
                self.buf.cast(),
                self.len as usize,
                libc::MSG_NOSIGNAL,
                addr,
                addrlen,
            )
        };
        Attempt::from_syscall(super::syscall_result(r), |_| false)
    }
}
