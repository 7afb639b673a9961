//! The driver's counters ([`DriverStats`]): what a test can read without timing
//! anything.

use super::op::Op;

/// Counters a test can read without timing anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Calls to `turn`.
    pub turns: u64,
    /// The one syscall of each turn that submits and waits: `io_uring_enter` or
    /// `epoll_wait`. The rare extra enters are counted apart (`sq_full_flushes`,
    /// `cq_overflow_flushes`).
    pub enters: u64,
    /// Operations submitted.
    pub submitted: u64,
    /// Completions reaped (all CQEs for io_uring).
    pub completions: u64,
    /// Multishot operations started again after the kernel ended them with nothing
    /// wrong (a multishot accept or receive stopped by a full completion queue).
    pub rearmed: u64,
    /// Multishot receives parked because the buffer pool was empty (`ENOBUFS`).
    pub pool_starved: u64,
    /// Parked receives re-armed when a buffer came back.
    pub pool_resumed: u64,
    /// Times the pool doubled because receives were parked on it
    /// (`DriverConfig::pool_buffers_max`).
    pub pool_grown: u64,
    /// Multishot receives stopped because their consumer fell behind: `BACKLOG`
    /// completions waited, or their pieces pinned the receive's share of the pool
    /// (resumed when it catches up). TCP's window holds the peer's further bytes.
    pub recv_backlogged: u64,
    /// Of `recv_backlogged`, the stops because the waiting pieces pinned the receive's
    /// [share](crate::buf::BufferPool::share) of the pool.
    pub recv_share_stops: u64,
    /// Stopped receives started again because their consumer caught up.
    pub recv_resumed: u64,
    /// Multishot receives stopped by the pool-pressure rule: a receive found the pool
    /// dry (parked on `ENOBUFS`), so the pieces waiting for each receive's reader were
    /// copied out of the pool and those receives stopped until their readers catch up
    /// (resumed as after any stop, counted in `recv_resumed`). Connections that each stay
    /// within their share can together hold the whole pool; this is what keeps the
    /// others served. Not counted in `recv_backlogged`.
    pub pool_pressure_stops: u64,
    /// Pool buffers given back to the ring (or the epoll free list) by the copies of the
    /// pool-pressure rule: what the receives parked on the dry pool got to go on with.
    pub pool_reclaimed: u64,
    /// io_uring: extra submits because the submission queue was full.
    pub sq_full_flushes: u64,
    /// io_uring: extra enters to flush completions the kernel kept after a CQ overflow.
    pub cq_overflow_flushes: u64,
    /// Send operations submitted (`Send`, `SendAll`, `SendVectored`, `SendTo`): each is
    /// one send on the wire. (Received pieces are counted by the pool:
    /// [`PoolStats::pieces`](crate::buf::PoolStats::pieces).)
    pub sends: u64,
    /// io_uring: background sends whose first try (which never waits) found less room
    /// in the socket's buffer than it had bytes, so that the rest went as a second,
    /// waiting send (counted in `sends` too).
    pub send_rests: u64,
}

impl DriverStats {
    /// Counts an operation submitted.
    #[inline]
    pub(super) fn count(&mut self, op: &Op) {
        self.submitted += 1;
        if op.is_send() {
            self.sends += 1;
        }
    }
}
