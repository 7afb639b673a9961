//! Multishot receives parked on an empty buffer pool, and the one rule that re-arms
//! them, for both backends.
//!
//! When the pool runs dry a receive ends with `ENOBUFS` (io_uring) or finds no free
//! buffer (epoll). Nothing is lost: the bytes wait in the socket. The receive is parked
//! here, oldest first, and re-armed when buffers come back: only as many at a time as
//! there are free buffers, because re-arming every parked receive for one returned
//! buffer would send all but one straight back to `ENOBUFS`. The rest wait for the next
//! turn, which the re-armed ones' completions bring.
//!
//! Receives parked at all say the pool is smaller than the core's traffic: before the
//! next re-arm the pool doubles, up to its capacity (`BufferPool::grow`), and the
//! parked receives take the new buffers. Only a pool at its capacity that got no buffer
//! back by the next turn meets the pool-pressure rule, which takes back what waits for
//! readers (`driver::pressure`).

use std::collections::VecDeque;

use super::completion::OpId;
use super::delivery::Delivery;
use super::pressure;
use crate::buf::BufferPool;

/// Parked receives, oldest first.
#[derive(Default)]
pub(crate) struct Starved {
    parked: VecDeque<OpId>,
    /// The pool's count of pieces at the pool-pressure rule's last sweep.
    swept_at: u64,
}

impl Starved {
    /// Whether any receive is parked (checked every turn, inline: almost never).
    #[inline]
    pub(super) fn any(&self) -> bool {
        !self.parked.is_empty()
    }

    /// While receives are parked: grows the pool if it can grow, or else, if no buffer
    /// came back, applies the pool-pressure rule (`driver::pressure::relieve`): the
    /// receives it stops are in `d.backlogged`, and true says so. Call before
    /// [`take_rearmable`](Self::take_rearmable), which then sees the buffers added or
    /// given back.
    pub(super) fn relieve(&mut self, d: &mut Delivery<'_>) -> bool {
        if self.parked.is_empty() {
            return false;
        }
        if d.pool.grow() {
            d.stats.pool_grown += 1;
            return false;
        }
        pressure::relieve(d, &mut self.swept_at)
    }

    /// Parks `id` until a buffer comes back.
    pub(super) fn park(&mut self, id: OpId) {
        self.parked.push_back(id);
    }

    /// Takes `id` out (it was cancelled); false if it was not parked.
    pub(super) fn forget(&mut self, id: OpId) -> bool {
        match self.parked.iter().position(|p| *p == id) {
            Some(i) => {
                self.parked.remove(i);
                true
            }
            None => false,
        }
    }

    /// If a buffer came back since the last call, moves the oldest parked receives into
    /// `out`, as many as the pool has free buffers. If some stay parked,
    /// the pool's mark is set again so the next turn looks once more.
    pub(super) fn take_rearmable(&mut self, pool: &BufferPool, out: &mut Vec<OpId>) {
        if self.parked.is_empty() || !pool.take_returned() {
            return;
        }
        // A buffer that came back may have been taken again already (or been one that a
        // receive took and returned unused): only free buffers count.
        let free = pool.free_count();
        if free == 0 {
            return;
        }
        let n = free.min(self.parked.len());
        out.extend(self.parked.drain(..n));
        if !self.parked.is_empty() {
            pool.mark_returned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(index: u32) -> OpId {
        OpId { index, gen: 1 }
    }

    #[test]
    fn rearms_oldest_first_only_as_many_as_buffers_came_back() {
        let pool = BufferPool::new_list(4, 4, 8).unwrap();
        // Each receive fills a whole buffer: all four are held.
        let mut held: Vec<_> =
            std::iter::from_fn(|| pool.receive(|_, room| room as i32).ok().map(|(b, _)| b))
                .collect();
        assert_eq!(held.len(), 4);
        let mut s = Starved::default();
        for i in 0..3 {
            s.park(id(i));
        }
        let mut out = Vec::new();
        s.take_rearmable(&pool, &mut out);
        assert!(out.is_empty(), "no buffer came back yet");
        held.pop();
        s.take_rearmable(&pool, &mut out);
        assert_eq!(out, vec![id(0)], "one buffer back: the oldest only");
        out.clear();
        s.take_rearmable(&pool, &mut out);
        assert_eq!(out, vec![id(1)], "the mark stays while receives are parked");
        out.clear();
        assert!(s.forget(id(2)));
        assert!(!s.forget(id(2)));
        s.take_rearmable(&pool, &mut out);
        assert!(out.is_empty(), "nothing left parked");
        drop(held);
    }
}
