//! `Splice`: moves bytes between two fds inside the kernel.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Moves up to `len` bytes from `fd_in` to `fd_out` (`splice(2)`); one of the two must be
/// a pipe. Completes with the count moved, 0 at the end of the input.
///
/// On epoll it waits for `fd_out` to be writable (the input is a file or a pipe the
/// caller filled, which does not make it wait). On io_uring the kernel runs it in a
/// worker which, while it waits for room in a socket, holds the pipe's lock: closing the
/// pipe then blocks until it is done, so keep the pipe open until the final completion
/// (`io::Pipe` does).
#[derive(Debug, Clone, Copy)]
pub struct Splice {
    /// Where the bytes come from.
    pub fd_in: RawFd,
    /// The offset to read a file at; `None` for the fd's own position (pipes and
    /// sockets need that).
    pub off_in: Option<u64>,
    /// Where the bytes go.
    pub fd_out: RawFd,
    /// At most this many.
    pub len: u32,
}

impl OpKind for Splice {
    fn fd(&self) -> Option<RawFd> {
        // The side that may have to wait for room.
        Some(self.fd_out)
    }
}

impl UringOp for Splice {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        // -1: no offset (the fd's position); the pipe side must have none.
        let off = self.off_in.map_or(-1, |o| o as i64);
        opcode::Splice::new(
            types::Fd(self.fd_in),
            off,
            types::Fd(self.fd_out),
            -1,
            self.len,
        )
        .flags(libc::SPLICE_F_MOVE)
        .build()
    }
}

impl EpollOp for Splice {
    fn readiness(&self) -> Readiness {
        Readiness::Write(self.fd_out)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        let mut off = self.off_in.unwrap_or(0) as libc::loff_t;
        let off_ptr = match self.off_in {
            Some(_) => &mut off as *mut libc::loff_t,
            None => std::ptr::null_mut(),
        };
        // SAFETY: `off_ptr` is null or points at `off`, live for the call.
        let r = unsafe {
            libc::splice(
                self.fd_in,
                off_ptr,
                self.fd_out,
                std::ptr::null_mut(),
                self.len as usize,
                libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
            )
        };
        // A short splice may be the end of the file, not a full output: never count it
        // as drained (that would wait for an edge that may not come).
        Attempt::from_syscall(super::syscall_result(r), |_| false)
    }
}
