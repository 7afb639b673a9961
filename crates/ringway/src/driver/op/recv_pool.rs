//! `RecvPool` and `RecvMulti`: receives into buffers the driver picks from the core's
//! provided-buffer pool, so that a connection waiting for bytes holds no buffer.
//!
//! On io_uring the kernel picks the buffer from the provided-buffer ring
//! (`IOSQE_BUFFER_SELECT`); on epoll the backend takes one from the pool's free list
//! just before `recv` and gives it back if nothing came. Either way an empty pool is
//! `-ENOBUFS`, and [`AfterEnd::AwaitBuffer`] parks the receive until a buffer returns:
//! that rule is written here once, for both backends.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::{AfterEnd, Attempt, EpollOp, OpKind, Readiness, UringOp};
use crate::buf::{BufferPool, PoolBuf};
use crate::driver::epoll::EpollOpState;
use crate::driver::table::BACKLOG;
use crate::driver::uring::{UringEnv, UringScratch};
use crate::driver::Completion;

/// Receives once into a pool buffer; the completion's `buf` holds the bytes.
#[derive(Debug, Clone, Copy)]
pub struct RecvPool {
    /// The socket.
    pub fd: RawFd,
}

/// Receives into pool buffers until cancelled, end of stream (a completion of 0) or an
/// error: one completion per buffer filled.
#[derive(Debug, Clone, Copy)]
pub struct RecvMulti {
    /// The socket.
    pub fd: RawFd,
}

impl OpKind for RecvPool {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
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

impl UringOp for RecvPool {
    fn sqe(&self, _: &mut UringScratch, env: &UringEnv) -> squeue::Entry {
        opcode::Recv::new(types::Fd(self.fd), std::ptr::null_mut(), env.buf_size)
            .buf_group(env.bgid)
            .build()
            .flags(squeue::Flags::BUFFER_SELECT)
    }
}

impl UringOp for RecvMulti {
    fn sqe(&self, _: &mut UringScratch, env: &UringEnv) -> squeue::Entry {
        // At most half a backlog's worth of buffers per trigger: a socket with a lot
        // waiting cannot take the whole pool in one go, and the driver sees the
        // backlog building (and stops the receive) before it can.
        // (Kernels that do not take a length get 0: no cap; the probe found out.)
        let per_trigger = match env.recv_len_cap {
            true => env.buf_size.saturating_mul((BACKLOG / 2) as u32),
            false => 0,
        };
        opcode::RecvMulti::new(types::Fd(self.fd), env.bgid)
            .len(per_trigger)
            .build()
    }
}

impl EpollOp for RecvPool {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, pool: &BufferPool) -> Attempt {
        recv_into_pool(self.fd, pool)
    }
}

impl EpollOp for RecvMulti {
    fn readiness(&self) -> Readiness {
        Readiness::Read(self.fd)
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, pool: &BufferPool) -> Attempt {
        recv_into_pool(self.fd, pool)
    }
}

/// One `recv` into a buffer taken from the pool's free list (epoll).
fn recv_into_pool(fd: RawFd, pool: &BufferPool) -> Attempt {
    match recv_bytes(fd, pool) {
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

/// [`recv_into_pool`] as parts: the bytes and whether they drained the socket, or what
/// else the try came to (it would block, end of stream, an error, an empty pool).
#[inline]
pub(crate) fn recv_bytes(fd: RawFd, pool: &BufferPool) -> Result<(PoolBuf, bool), Attempt> {
    let Some((bid, ptr)) = pool.take_free() else {
        return Err(Attempt::result(-libc::ENOBUFS));
    };
    let size = pool.buf_size();
    // SAFETY: `ptr` is a free pool buffer of `size` bytes that nobody else holds.
    let r = super::syscall_result(unsafe { libc::recv(fd, ptr.cast(), size, 0) });
    if r <= 0 {
        pool.recycle(bid);
        return Err(Attempt::from_syscall(r, |_| false));
    }
    Ok((pool.provided(bid, r as usize), (r as usize) < size))
}
