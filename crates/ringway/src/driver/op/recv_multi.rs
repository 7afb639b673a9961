//! `RecvMulti`: receives into buffers the driver picks from the core's provided-buffer
//! pool, so that a connection waiting for bytes holds no buffer.
//!
//! On io_uring the kernel picks the buffer from the provided-buffer ring
//! (`IORING_RECV_MULTISHOT` with a buffer group) and, on an incremental ring, puts each
//! receive's bytes after the previous one's; on epoll the backend does the same from the
//! pool's free list just before `recv`. Either way an empty pool is `-ENOBUFS`, and
//! [`AfterEnd::AwaitBuffer`] parks the receive until a buffer returns: that rule is
//! written here once, for both backends.
//!
//! There is no single-shot receive into the pool: on an incremental ring the kernel
//! posts a single-shot completion later than the multishot ones committed after it (it
//! goes through the request's completion path, they are posted at once), so where its
//! bytes lie in the buffer could not be told from the order of completions.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{AfterEnd, Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::{BufferPool, PoolBuf};
use crate::driver::completion::Completion;

/// Receives into pool buffers until cancelled, end of stream (a completion of 0) or an
/// error: one completion per piece of a buffer filled.
#[derive(Debug, Clone, Copy)]
pub struct RecvMulti {
    /// The socket.
    pub fd: RawFd,
}

impl OpKind for RecvMulti {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
    fn is_multishot(&self) -> bool {
        true
    }
    fn ends(&self, result: i32) -> bool {
        result <= 0
    }
    fn after_end(&self, result: i32) -> AfterEnd {
        match result {
            r if r == -libc::ENOBUFS => AfterEnd::AwaitBuffer,
            // The kernel stopped it after bytes (a full CQ, say): nothing is wrong.
            r if r > 0 => AfterEnd::Rearm,
            _ => AfterEnd::Finish,
        }
    }
}

impl UringOp for RecvMulti {
    fn sqe(&self, _: &mut UringScratch, env: &UringEnv) -> squeue::Entry {
        // A cap on the bytes each trigger takes (kernels that do not take a length get
        // 0: no cap; the probe found out): a socket with a lot waiting cannot take the
        // whole pool in one go, and the driver sees the backlog building (and stops the
        // receive) before it can.
        let per_trigger = match env.recv_len_cap {
            true => env.recv_per_trigger,
            false => 0,
        };
        opcode::RecvMulti::new(types::Fd(self.fd), env.bgid)
            .len(per_trigger)
            .build()
    }
}

impl EpollOp for RecvMulti {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, pool: &BufferPool) -> Attempt {
        match recv_bytes(self.fd, pool) {
            Ok((buf, drained)) => Attempt::Done {
                c: Completion {
                    result: buf.len() as i32,
                    buf: Some(buf),
                    addr: None,
                },
                drained,
            },
            Err(other) => other,
        }
    }
}

/// One `recv` into the pool's open buffer (epoll): the bytes and whether they drained
/// the socket (fewer than offered), or what else the try came to (it would block, end
/// of stream, an error, an empty pool).
#[inline]
pub(crate) fn recv_bytes(fd: RawFd, pool: &BufferPool) -> Result<(PoolBuf, bool), Attempt> {
    pool.receive(|ptr, room| {
        // SAFETY: the pool offers `room` writable bytes at `ptr` that nobody else holds.
        super::syscall_result(unsafe { libc::recv(fd, ptr.cast(), room, 0) })
    })
    .map_err(|r| Attempt::from_syscall(r, |_| false))
}
