//! `SendAll`: sends a whole buffer, however many tries the socket needs.
//!
//! On io_uring it is a send with `MSG_WAITALL`: the kernel itself retries a short
//! transfer until every byte is queued or an error ends it, so one completion means
//! everything went. On epoll the backend keeps the count sent so far in the operation's
//! state and parks between tries, so the op still completes once, with the total.
//! Either way a completion of less than `len` is an error that stopped it part way.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Sends all `len` bytes from `buf` (`MSG_NOSIGNAL`); completes once, with `len`, or
/// with an error (a negative result) if the socket failed part way.
#[derive(Debug, Clone, Copy)]
pub struct SendAll {
    /// The socket (a stream socket: a datagram cannot be sent in parts).
    pub fd: RawFd,
    /// The bytes: readable until the final completion.
    pub buf: *const u8,
    /// How many.
    pub len: u32,
}

impl OpKind for SendAll {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for SendAll {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        self.entry()
    }
}

impl EpollOp for SendAll {
    fn readiness(&self) -> Readiness {
        Readiness::Write(self.fd)
    }
    unsafe fn attempt(&self, state: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise for `buf`.
        match unsafe { self.send_rest(&mut state.progress) } {
            None => Attempt::Blocked,
            Some(r) => Attempt::result(r),
        }
    }
}

impl SendAll {
    /// Its SQE (it needs no scratch and no ring setting).
    #[inline]
    pub(crate) fn entry(&self) -> squeue::Entry {
        self.entry_with(false)
    }

    /// Its SQE; with `first_try`, one that never waits (`MSG_DONTWAIT` instead of
    /// `MSG_WAITALL`: the kernel does not park it, so it completes in the enter that
    /// submits it, with what fit in the socket's buffer, or `-EAGAIN`). A background
    /// send's first SQE on io_uring; see `driver/uring/background.rs`.
    #[inline(always)]
    pub(crate) fn entry_with(&self, first_try: bool) -> squeue::Entry {
        let wait = if first_try {
            libc::MSG_DONTWAIT
        } else {
            libc::MSG_WAITALL
        };
        opcode::Send::new(types::Fd(self.fd), self.buf, self.len)
            .flags(libc::MSG_NOSIGNAL | wait)
            .build()
    }

    /// Sends what is left from `*progress` on: `Some(len)` once every byte went,
    /// `Some(-errno)` if the socket failed, `None` if it is full (what went is counted
    /// in `progress`; the next try goes on from there).
    ///
    /// # Safety
    ///
    /// `buf` is readable for `len` bytes.
    #[inline]
    pub(crate) unsafe fn send_rest(&self, progress: &mut usize) -> Option<i32> {
        let total = self.len as usize;
        while *progress < total {
            let left = total - *progress;
            // SAFETY: the caller's promise: `buf` is readable for `len` bytes, and
            // `progress < len`.
            let r = unsafe {
                libc::send(
                    self.fd,
                    self.buf.add(*progress).cast(),
                    left,
                    libc::MSG_NOSIGNAL,
                )
            };
            let r = super::syscall_result(r);
            if r == -libc::EAGAIN || r == -libc::EWOULDBLOCK {
                // The socket is full; what was sent so far stays counted.
                return None;
            }
            if r < 0 {
                return Some(r);
            }
            *progress += r as usize;
            if (r as usize) < left {
                // A short send filled the socket: the next try would only say EAGAIN.
                return None;
            }
        }
        Some(self.len as i32)
    }
}
