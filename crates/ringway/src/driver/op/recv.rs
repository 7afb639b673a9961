//! `Recv`: receives into a caller buffer.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Receives up to `len` bytes into `buf`; completes with the count, 0 at end of stream.
#[derive(Debug, Clone, Copy)]
pub struct Recv {
    /// The socket.
    pub fd: RawFd,
    /// Where the bytes go: writable and unaliased until the final completion.
    pub buf: *mut u8,
    /// Room at `buf`.
    pub len: u32,
}

impl OpKind for Recv {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for Recv {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Recv::new(types::Fd(self.fd), self.buf, self.len).build()
    }
}

impl EpollOp for Recv {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `buf` is writable for `len` bytes.
        let r = unsafe { libc::recv(self.fd, self.buf.cast(), self.len as usize, 0) };
        // A short read emptied the socket (for a stream socket).
        Attempt::from_syscall(super::syscall_result(r), |n| n > 0 && (n as u32) < self.len)
    }
}
