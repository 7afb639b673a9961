//! `Send`: sends a caller buffer.
//!
//! On io_uring a send of at least `DriverConfig::send_zc_min` bytes goes as `SEND_ZC`.
//! A socket that refuses zero-copy (a Unix socket) answers `EOPNOTSUPP` having sent
//! nothing; the backend then sends the same bytes the ordinary way (`plain_send`).

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Sends `len` bytes from `buf` (`MSG_NOSIGNAL`); completes with the count sent.
#[derive(Debug, Clone, Copy)]
pub struct Send {
    /// The socket.
    pub fd: RawFd,
    /// The bytes: readable until the final completion.
    pub buf: *const u8,
    /// How many.
    pub len: u32,
}

impl Send {
    /// True if io_uring sends this one with `SEND_ZC`.
    pub(crate) fn zero_copy(&self, scratch: &UringScratch, env: &UringEnv) -> bool {
        self.len as usize >= env.send_zc_min && !scratch.plain_send
    }
}

impl OpKind for Send {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for Send {
    fn sqe(&self, scratch: &mut UringScratch, env: &UringEnv) -> squeue::Entry {
        if self.zero_copy(scratch, env) {
            return opcode::SendZc::new(types::Fd(self.fd), self.buf, self.len)
                .flags(libc::MSG_NOSIGNAL)
                .build();
        }
        opcode::Send::new(types::Fd(self.fd), self.buf, self.len)
            .flags(libc::MSG_NOSIGNAL)
            .build()
    }
}

impl EpollOp for Send {
    fn readiness(&self) -> Readiness {
        Readiness::Write(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `buf` is readable for `len` bytes.
        let r = unsafe {
            libc::send(
                self.fd,
                self.buf.cast(),
                self.len as usize,
                libc::MSG_NOSIGNAL,
            )
        };
        // A short send filled the socket buffer.
        Attempt::from_syscall(super::syscall_result(r), |n| {
            n >= 0 && (n as u32) < self.len
        })
    }
}
