//! The pool-pressure rule, for both backends: what the driver does when a receive finds
//! the core's pool dry.
//!
//! The share (`delivery::falls_behind`) bounds what one receive's waiting pieces pin:
//! an eighth of the pool. It does not bound what several hold together: nine
//! connections whose readers do not read, each a little under its share, hold the whole
//! default pool, and then every other connection of the core starves (its receive
//! parks on `ENOBUFS` and is re-armed only when a buffer comes back, which is never if
//! those readers never read).
//!
//! So when a receive is parked on a dry pool and no buffer has come back by the next
//! turn, the driver copies out of the pool the pieces that wait in the queues of the
//! core's receive streams (pieces its readers have not taken: the tasks that were woken
//! for them have run since, so those readers are not reading), gives their buffers
//! back, and stops those receives as the share does: TCP's window holds their peers'
//! further bytes, and each resumes once its reader has taken half of what waited
//! (`Slot::resume_at`). The parked receives are then re-armed in the same turn. Bytes
//! are copied, never dropped or reordered: a copy takes its piece's place in the queue.
//!
//! What it cannot reach: pieces a reader has taken and keeps (ringway-http keeps at
//! most one per connection while it parses), and the low-level face's completions
//! (handed to their owner in the turn they arrive). A sweep that would find nothing new
//! is skipped: none is made again until a piece has been cut since the last, so a pool
//! held by readers outside the driver's reach costs one sweep, not one per turn.
//!
//! Counted: `DriverStats::pool_pressure_stops` (receives stopped) and
//! `DriverStats::pool_reclaimed` (buffers the copies gave back).

use super::delivery::{resume_point, Delivery};
use super::slot::{Flight, Owner, Slot};

/// Applies the rule if the pool is dry (no buffer came back since the receives parked,
/// or since the last re-arm) and a piece was cut since the last sweep (`swept_at`: the pool's count of pieces
/// then). The receives it stops are in `d.backlogged`, for the backend to stop (io_uring
/// cancels those it has; epoll does not try them again). Returns whether it stopped
/// any.
#[cold]
#[inline(never)]
pub(crate) fn relieve(d: &mut Delivery<'_>, swept_at: &mut u64) -> bool {
    let pool = d.pool;
    // Dry by the kernel's word (the receives parked on `ENOBUFS`; epoll: no free
    // buffer), unless a buffer came back since: then the re-arm is all it takes.
    if !pool.relieves_pressure() || pool.has_returned() {
        return false;
    }
    let cut = pool.pieces_cut();
    if cut == *swept_at {
        return false;
    }
    *swept_at = cut;
    let free = pool.free_count();
    let mut stopped = 0;
    for (id, slot) in d.table.live_mut() {
        if copy_out_waiting(slot) {
            d.backlogged.push(id);
            stopped += 1;
        }
    }
    d.stats.pool_pressure_stops += stopped;
    d.stats.pool_reclaimed += pool.free_count().saturating_sub(free) as u64;
    stopped > 0
}

/// Copies out of the pool the pieces waiting in `slot`'s queue, if it is a task's
/// receive stream that has any; true if the receive is to be stopped (it was going on,
/// and now waits for its reader to catch up).
fn copy_out_waiting(slot: &mut Slot) -> bool {
    let Slot {
        owner,
        queue,
        resume_at,
        flight,
        ..
    } = slot;
    let Owner::Stream {
        shared, backlogged, ..
    } = owner
    else {
        return false;
    };
    let mut copied = false;
    let waiting = match shared {
        Some(w) => {
            let mut items = w.items.borrow_mut();
            for (_, b) in items.iter_mut() {
                copied |= copy_out(b.as_mut());
            }
            items.len()
        }
        None => {
            for c in queue.iter_mut() {
                copied |= copy_out(c.buf.as_mut());
            }
            queue.len()
        }
    };
    // A stream stopped already keeps no piece in the pool (its pieces are copied as they
    // come); one that is over or being cancelled has nothing to stop.
    if !copied || *backlogged || matches!(flight, Flight::Done | Flight::Cancelling) {
        return false;
    }
    *backlogged = true;
    if let Some(w) = shared {
        w.backlogged.set(true);
    }
    *resume_at = resume_point(waiting);
    true
}

/// Copies one waiting piece out of the pool; true if it was in the pool.
fn copy_out(b: Option<&mut crate::buf::PoolBuf>) -> bool {
    match b {
        Some(b) if b.pool_index().is_some() => {
            b.unshare();
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::BufferPool;
    use crate::driver::completion::Completion;
    use crate::driver::op::{Op, RecvMulti};
    use crate::driver::stats::DriverStats;
    use crate::driver::table::OpTable;

    /// A piece of `len` bytes of `fill`, cut by an epoll-style receive.
    fn piece(pool: &BufferPool, len: usize, fill: u8) -> crate::buf::PoolBuf {
        pool.receive(|ptr, room| {
            let n = len.min(room);
            // SAFETY: the pool offers `room` writable bytes at `ptr`.
            unsafe { std::ptr::write_bytes(ptr, fill, n) };
            n as i32
        })
        .unwrap()
        .0
    }

    #[test]
    fn a_dry_pool_gets_back_what_waits_for_readers() {
        let pool = BufferPool::new_list(4, 4, 16).unwrap();
        let mut table = OpTable::new();
        let recv = || Op::from(RecvMulti { fd: 3 });
        let a = table.insert_for_waker(recv(), None);
        let b = table.insert_for_waker(recv(), None);
        // `a` waits with two pieces in two buffers, `b` with one filling a third; a
        // fourth is held outside any queue (a reader took it and keeps it).
        for (id, fill) in [(a, 1), (a, 2), (b, 3)] {
            let c = Completion {
                result: 16,
                buf: Some(piece(&pool, 16, fill)),
                addr: None,
            };
            table.get_mut(id).unwrap().queue.push_back(c);
        }
        let kept = piece(&pool, 16, 4);
        assert_eq!(pool.free_count(), 0, "dry");
        let mut stats = DriverStats::default();
        let (mut backlogged, mut deferred) = (Vec::new(), Vec::new());
        let mut swept_at = 0;
        let mut d = Delivery {
            table: &mut table,
            pool: &pool,
            sink: None,
            deferred: &mut deferred,
            stats: &mut stats,
            backlogged: &mut backlogged,
        };
        assert!(relieve(&mut d, &mut swept_at));
        assert_eq!(*d.backlogged, vec![a, b], "both receives stop");
        assert_eq!(d.stats.pool_pressure_stops, 2);
        assert_eq!(
            d.stats.pool_reclaimed, 3,
            "the kept piece still pins its buffer"
        );
        assert_eq!(pool.free_count(), 3);
        for (id, fills) in [(a, &[1u8, 2][..]), (b, &[3][..])] {
            let slot = d.table.get_mut(id).unwrap();
            assert!(slot.backlogged());
            assert_eq!(slot.resume_at as usize, fills.len() / 2);
            let got: Vec<u8> = slot
                .queue
                .iter()
                .map(|c| c.buf.as_ref().unwrap()[0])
                .collect();
            assert_eq!(got, fills, "the same bytes, in the same order");
            let copied = slot
                .queue
                .iter()
                .all(|c| c.buf.as_ref().unwrap().pool_index().is_none());
            assert!(copied, "out of the pool");
        }
        // Dry again, held by readers outside the queues: nothing to take, nobody stops.
        d.backlogged.clear();
        let held: Vec<_> = (5..8).map(|i| piece(&pool, 16, i)).collect();
        assert_eq!(pool.free_count(), 0);
        assert!(
            !relieve(&mut d, &mut swept_at),
            "buffers came back since the last turn"
        );
        pool.take_returned();
        assert!(!relieve(&mut d, &mut swept_at));
        assert_eq!(
            (d.stats.pool_pressure_stops, d.stats.pool_reclaimed),
            (2, 3)
        );
        assert!(d.backlogged.is_empty());
        drop(held);
        // Turned off: never, even with something to take.
        let c = Completion {
            result: 16,
            buf: Some(piece(&pool, 16, 9)),
            addr: None,
        };
        let e = d.table.insert_for_waker(recv(), None);
        d.table.get_mut(e).unwrap().queue.push_back(c);
        let _rest: Vec<_> = (0..2).map(|i| piece(&pool, 16, i)).collect();
        assert_eq!(pool.free_count(), 0);
        pool.take_returned(); // (as the re-arm of the turn before does)
        pool.set_policy(crate::buf::PoolShare::default(), false);
        assert!(!relieve(&mut d, &mut swept_at));
        pool.set_policy(crate::buf::PoolShare::default(), true);
        assert!(relieve(&mut d, &mut swept_at), "on again");
        assert_eq!(*d.backlogged, vec![e]);
        drop(kept);
    }
}
