//! The per-core timer structure.
//!
//! Timers live in a slab (their key is a slab index and a sequence number, so a stale
//! key cannot reach the next timer in that slot) and are ordered by a binary min-heap of
//! `(deadline, key)` items. The nearest deadline ([`Timers::next_wake`]) becomes the
//! core's timer in the ring (io_uring) or the timeout of the driver's wait (epoll): no
//! timerfd, no syscall of its own.
//!
//! The heap is lazy, because timers are mostly removed before they fire (a request's
//! header timeout, say) and mostly moved later (a connection's idle deadline):
//! - removing a timer frees its slab entry and leaves its heap item behind, dead; dead
//!   items are skipped when they reach the top, and the heap is rebuilt from the live
//!   items when the dead outnumber them, so it stays within about twice the live count;
//! - moving a timer later only changes the entry's deadline: its heap item stays where
//!   it was, and when it reaches the top the entry is pushed again at its real deadline.
//!
//! Timers far from due (more than twice [`HORIZON`] ahead of the turn clock when they
//! are made, or when a moved one reaches the top of the heap) are not in the heap at
//! all: they wait in the slab, marked far, under one lower bound of their deadlines.
//! Making and removing one costs a slab operation, no heap item and no rebuild; that is
//! the life of most timers (hyper's header-read timeout of 30 s is made and dropped per
//! request). When the lower bound comes within `HORIZON` of the time, one pass over the
//! slab files the far timers due within twice `HORIZON` into the heap and computes the
//! bound afresh. Passes are at least `HORIZON` apart however the timers come and go:
//! after a pass the bound is more than `2 * HORIZON` ahead, a new far timer is too,
//! and a far timer moved earlier goes to the heap instead of lowering the bound. The
//! driver's wait never runs past the bound, so a far timer is never late.
//!
//! So the common cases cost a slab operation and at most a heap push that rarely sifts
//! (a new deadline is usually the latest), with no allocation once the slab and heap
//! have grown: no rebalancing tree per read.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::task::Waker;
use std::time::{Duration, Instant};

use slab::Slab;

/// Key of a registered timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimerKey {
    index: u32,
    seq: u64,
}

struct Entry {
    /// When it fires (may be later than its heap item's, see the module docs).
    deadline: Instant,
    waker: Waker,
    /// Which timer this is (slab slots are reused).
    seq: u64,
    /// The sequence number of the heap item that stands for it; older items are dead.
    /// [`FAR`] for a timer that has no heap item (see the module docs).
    item: u64,
}

/// A heap item; ordered so that `BinaryHeap` (a max-heap) yields the earliest first.
struct Item {
    deadline: Instant,
    index: u32,
    seq: u64,
}

impl PartialEq for Item {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Item {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .deadline
            .cmp(&self.deadline)
            .then(other.seq.cmp(&self.seq))
    }
}

pub(crate) struct Timers {
    entries: Slab<Entry>,
    heap: BinaryHeap<Item>,
    /// Heap items that no longer stand for a live timer.
    dead: usize,
    seq: u64,
    /// Timers marked [`FAR`].
    far: usize,
    /// No far timer is due before this (a lower bound: removing or moving one later
    /// leaves it be); `None` when there is no far timer.
    far_min: Option<Instant>,
    /// The turn clock (see [`Timers::now`]): the first reading since the core last
    /// waited, or `None` when it has waited since.
    turn_now: Option<Instant>,
    /// Readings of the monotonic clock taken for the turn clock.
    #[cfg(test)]
    pub(super) clock_reads: u64,
    /// Passes over the slab to file far timers.
    #[cfg(test)]
    far_passes: u64,
    /// Calls of `take_due`: the core's looks at its timers.
    #[cfg(test)]
    pub(super) due_passes: u64,
}

/// Below this many dead items the heap is never rebuilt.
const MIN_DEAD_TO_COMPACT: usize = 64;

/// Far timers are filed into the heap when their bound comes within this of the time;
/// a timer due more than twice this ahead is far.
const HORIZON: Duration = Duration::from_secs(1);

/// [`Entry::item`] of a timer kept out of the heap (heap items' sequence numbers start
/// at 1).
const FAR: u64 = 0;

impl Timers {
    pub(crate) fn new() -> Self {
        Timers {
            entries: Slab::new(),
            heap: BinaryHeap::new(),
            dead: 0,
            seq: 0,
            far: 0,
            far_min: None,
            turn_now: None,
            #[cfg(test)]
            clock_reads: 0,
            #[cfg(test)]
            far_passes: 0,
            #[cfg(test)]
            due_passes: 0,
        }
    }

    /// The turn clock: the time, read once per turn. The first call after
    /// [`forget_now`](Self::forget_now) reads the monotonic clock; later ones return
    /// that reading, so it is never later than [`Instant::now`] and earlier than it by
    /// the time the core has run since that first call.
    #[inline]
    pub(crate) fn now(&mut self) -> Instant {
        match self.turn_now {
            Some(now) => now,
            None => self.read_clock(),
        }
    }

    #[cold]
    fn read_clock(&mut self) -> Instant {
        #[cfg(test)]
        {
            self.clock_reads += 1;
        }
        *self.turn_now.insert(Instant::now())
    }

    /// Takes `now`, a reading of the real clock, as the turn clock if this turn has
    /// none yet (as if it had been read for it).
    #[inline]
    pub(crate) fn note_now(&mut self, now: Instant) {
        self.turn_now.get_or_insert(now);
    }

    /// The core is back from waiting (or starts running): the turn clock is stale.
    /// The core calls this whenever its thread may have been away, which is what
    /// bounds how far [`now`](Self::now) can lag the real time.
    #[inline]
    pub(crate) fn forget_now(&mut self) {
        self.turn_now = None;
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Registers a timer that wakes `waker` at `deadline`.
    pub(crate) fn insert(&mut self, deadline: Instant, waker: Waker) -> TimerKey {
        let seq = self.next_seq();
        // Far by the turn clock if this turn has read it (hyper's timer has: its
        // deadline is `now()` plus the timeout); no clock read of its own. The turn
        // clock may lag: a timer it calls far may be a little nearer. That is only a
        // matter of where it waits; `far_min` keeps it on time either way.
        let far = self
            .turn_now
            .is_some_and(|now| deadline > now + 2 * HORIZON);
        let index = self.entries.insert(Entry {
            deadline,
            waker,
            seq,
            item: if far { FAR } else { seq },
        }) as u32;
        if far {
            self.add_far(deadline);
        } else {
            self.heap.push(Item {
                deadline,
                index,
                seq,
            });
        }
        TimerKey { index, seq }
    }

    /// Counts one more far timer, due at `deadline`.
    fn add_far(&mut self, deadline: Instant) {
        self.far += 1;
        self.far_min = Some(self.far_min.map_or(deadline, |m| m.min(deadline)));
    }

    /// Files the far timers due by `now + 2 * HORIZON` into the heap and computes
    /// `far_min` afresh over the rest: one pass over the slab.
    #[cold]
    fn file_far(&mut self, now: Instant) {
        #[cfg(test)]
        {
            self.far_passes += 1;
        }
        let limit = now + 2 * HORIZON;
        let mut far_min: Option<Instant> = None;
        let mut filed = 0;
        for (index, e) in self.entries.iter_mut() {
            if e.item != FAR {
                continue;
            }
            if e.deadline <= limit {
                self.seq += 1;
                e.item = self.seq;
                self.heap.push(Item {
                    deadline: e.deadline,
                    index: index as u32,
                    seq: self.seq,
                });
                filed += 1;
            } else {
                far_min = Some(far_min.map_or(e.deadline, |m| m.min(e.deadline)));
            }
        }
        self.far -= filed;
        self.far_min = far_min;
    }

    fn entry(&mut self, key: TimerKey) -> Option<&mut Entry> {
        self.entries
            .get_mut(key.index as usize)
            .filter(|e| e.seq == key.seq)
    }

    /// Replaces the waker of a live timer; false if it has fired (or was removed).
    pub(crate) fn update(&mut self, key: TimerKey, waker: &Waker) -> bool {
        match self.entry(key) {
            Some(e) => {
                if !e.waker.will_wake(waker) {
                    e.waker = waker.clone();
                }
                true
            }
            None => false,
        }
    }

    /// True if the timer has neither fired nor been removed.
    pub(crate) fn is_live(&self, key: TimerKey) -> bool {
        self.entries
            .get(key.index as usize)
            .is_some_and(|e| e.seq == key.seq)
    }

    /// Moves a live timer to `deadline`; false if it has fired (or was removed). Later
    /// is a store; earlier pushes a new heap item (the old one dies; a far timer
    /// joins the heap, so the far bound never moves earlier but by a new timer).
    pub(crate) fn reset(&mut self, key: TimerKey, deadline: Instant) -> bool {
        let seq = self.next_seq();
        let Some(e) = self.entry(key) else {
            return false;
        };
        let earlier = deadline < e.deadline;
        e.deadline = deadline;
        if e.item == FAR {
            if earlier {
                e.item = seq;
                self.heap.push(Item {
                    deadline,
                    index: key.index,
                    seq,
                });
                self.far -= 1;
                if self.far == 0 {
                    self.far_min = None;
                }
            }
        } else if earlier {
            e.item = seq;
            self.heap.push(Item {
                deadline,
                index: key.index,
                seq,
            });
            self.dead += 1;
            self.maybe_compact();
        }
        true
    }

    /// Removes a timer (no effect if it has fired).
    pub(crate) fn remove(&mut self, key: TimerKey) {
        let Some(e) = self.entry(key) else {
            return;
        };
        let far = e.item == FAR;
        self.entries.remove(key.index as usize);
        if far {
            // No heap item to leave behind; `far_min` stays a valid lower bound.
            self.far -= 1;
            if self.far == 0 {
                self.far_min = None;
            }
        } else {
            self.dead += 1;
            self.maybe_compact();
        }
    }

    fn maybe_compact(&mut self) {
        if self.dead < MIN_DEAD_TO_COMPACT || self.dead <= self.entries.len() - self.far {
            return;
        }
        let entries = &self.entries;
        let live = |it: &Item| {
            entries
                .get(it.index as usize)
                .is_some_and(|e| e.item == it.seq)
        };
        let mut items = std::mem::take(&mut self.heap).into_vec();
        items.retain(live);
        self.heap = BinaryHeap::from(items);
        self.dead = 0;
    }

    /// Moves the wakers of the timers due at `now` into `due` (the timers are gone) and
    /// returns when the driver must look again: the next timer's deadline, or earlier
    /// (a dead heap item's, or the far timers' lower bound). Only items due by `now` are
    /// popped: a dead item still in the future stays until it is due or a rebuild drops
    /// it, so removing a timer never costs a pop, and at worst the driver wakes once,
    /// early, for a timer that is gone.
    pub(crate) fn take_due(&mut self, now: Instant, due: &mut Vec<Waker>) -> Option<Instant> {
        #[cfg(test)]
        {
            self.due_passes += 1;
        }
        if self.far_min.is_some_and(|m| m <= now + HORIZON) {
            self.file_far(now);
        }
        let next = self.take_due_in_heap(now, due);
        match (next, self.far_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// [`take_due`](Self::take_due) in the heap: returns the deadline of its next item.
    fn take_due_in_heap(&mut self, now: Instant, due: &mut Vec<Waker>) -> Option<Instant> {
        loop {
            let top = self.heap.peek()?;
            let (index, seq, at) = (top.index, top.seq, top.deadline);
            if at > now {
                return Some(at);
            }
            self.heap.pop();
            let Some(e) = self.entries.get(index as usize).filter(|e| e.item == seq) else {
                // A removed or moved timer's old item.
                self.dead = self.dead.saturating_sub(1);
                continue;
            };
            if e.deadline > now + 2 * HORIZON {
                // Moved far later (a connection's idle deadline): out of the heap.
                let deadline = e.deadline;
                self.entries[index as usize].item = FAR;
                self.add_far(deadline);
                continue;
            }
            if e.deadline > now {
                // Moved later: re-file it at its real deadline.
                let deadline = e.deadline;
                let seq = self.next_seq();
                self.entries[index as usize].item = seq;
                self.heap.push(Item {
                    deadline,
                    index,
                    seq,
                });
                continue;
            }
            due.push(self.entries.remove(index as usize).waker);
        }
    }

    /// When [`take_due`](Self::take_due) must run next, read without the clock: the
    /// earliest heap item (which may be a dead or moved timer's: then a pass finds
    /// nothing due, and says when to look again) or the far timers' bound, whichever
    /// is first; `None` with no timer at all. Nothing is due before it.
    #[inline]
    pub(crate) fn next_wake(&self) -> Option<Instant> {
        let top = self.heap.peek().map(|it| it.deadline);
        match (top, self.far_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Live timers.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// No live timer.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
    use std::sync::Arc;
    use std::task::Wake;
    use std::time::Duration;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, AtomicOrdering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    #[test]
    fn fires_in_deadline_order_and_reports_the_next() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut t = Timers::new();
        let (a, wa) = waker();
        let (b, wb) = waker();
        t.insert(t0 + ms(20), wa);
        t.insert(t0 + ms(10), wb);
        let mut due = Vec::new();
        assert_eq!(t.take_due(t0, &mut due), Some(t0 + ms(10)));
        assert!(due.is_empty());
        assert_eq!(t.take_due(t0 + ms(15), &mut due), Some(t0 + ms(20)));
        due.drain(..).for_each(Waker::wake);
        assert_eq!(
            (
                a.0.load(AtomicOrdering::SeqCst),
                b.0.load(AtomicOrdering::SeqCst)
            ),
            (0, 1)
        );
        assert_eq!(t.take_due(t0 + ms(20), &mut due), None);
        assert_eq!(due.len(), 1);
        assert!(t.is_empty());
    }

    #[test]
    fn removed_and_moved_timers_keep_their_promises() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut t = Timers::new();
        let (_, w) = waker();
        let gone = t.insert(t0 + ms(5), w.clone());
        let later = t.insert(t0 + ms(6), w.clone());
        let earlier = t.insert(t0 + ms(50), w.clone());
        t.remove(gone);
        assert!(t.reset(later, t0 + ms(40)));
        assert!(t.reset(earlier, t0 + ms(7)));
        let mut due = Vec::new();
        // The removed timer's item may still say 5 ms: at worst an early wake.
        assert_eq!(t.take_due(t0, &mut due), Some(t0 + ms(5)));
        assert!(due.is_empty());
        assert_eq!(
            t.take_due(t0 + ms(7), &mut due),
            Some(t0 + ms(40)),
            "the removed one is dropped, the one moved later re-filed"
        );
        assert_eq!(due.len(), 1, "only the one moved earlier fired");
        assert!(!t.update(earlier, &w), "a fired timer is gone");
        assert!(t.update(later, &w));
        // The item left behind when `earlier` moved from 50 ms is dead but not due.
        assert_eq!(t.take_due(t0 + ms(40), &mut due), Some(t0 + ms(50)));
        assert_eq!(due.len(), 2);
        assert_eq!(t.take_due(t0 + ms(50), &mut due), None);
        assert_eq!(due.len(), 2, "a dead item wakes nobody");
        assert!(!t.reset(later, t0), "a fired timer cannot be moved");
    }

    #[test]
    fn the_turn_clock_is_kept_until_forgotten() {
        let mut t = Timers::new();
        let first = t.now();
        assert_eq!(t.now(), first);
        assert_eq!(t.clock_reads, 1);
        std::thread::sleep(Duration::from_millis(1));
        t.forget_now();
        let second = t.now();
        assert!(second >= first + Duration::from_millis(1));
        assert_eq!(t.clock_reads, 2);
    }

    #[test]
    fn the_heap_stays_bounded_under_churn() {
        let t0 = Instant::now();
        let mut t = Timers::new();
        let (_, w) = waker();
        let keep = t.insert(t0 + Duration::from_millis(900), w.clone());
        for i in 0..100_000u64 {
            // Near timers (within HORIZON): heap items, left dead when removed.
            let k = t.insert(
                t0 + Duration::from_millis(500) + Duration::from_nanos(i),
                w.clone(),
            );
            t.remove(k);
        }
        assert_eq!(t.len(), 1);
        assert!(
            t.heap.len() <= 2 * MIN_DEAD_TO_COMPACT + 2,
            "heap holds {} items",
            t.heap.len()
        );
        assert!(t.update(keep, &w));
    }

    #[test]
    fn far_timers_stay_out_of_the_heap_and_fire_on_time() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut t = Timers::new();
        t.note_now(t0);
        let (a, wa) = waker();
        let (b, wb) = waker();
        // Made and dropped per request (hyper's 30 s header timeout): no heap work.
        for _ in 0..10_000 {
            let k = t.insert(t0 + s(30), wa.clone());
            t.remove(k);
        }
        assert_eq!((t.heap.len(), t.far, t.far_min), (0, 0, None));
        let late = t.insert(t0 + s(30), wa.clone());
        let soon = t.insert(t0 + s(5), wb.clone());
        assert_eq!(t.heap.len(), 0, "both are far");
        let mut fresh = Timers::new();
        fresh.insert(t0 + s(30), wa.clone());
        assert_eq!(
            (fresh.heap.len(), fresh.clock_reads),
            (1, 0),
            "without a turn clock a timer goes to the heap: no clock read to decide"
        );
        let mut due = Vec::new();
        assert_eq!(
            t.take_due(t0, &mut due),
            Some(t0 + s(5)),
            "the driver wakes for the nearest far timer"
        );
        // Within the horizon: filed into the heap, fired at its deadline, not before.
        let near = t0 + s(5) - HORIZON / 2;
        assert_eq!(t.take_due(near, &mut due), Some(t0 + s(5)));
        assert!(due.is_empty());
        assert_eq!(t.heap.len(), 1, "only the one within twice the horizon");
        assert_eq!(t.take_due(t0 + s(5), &mut due), Some(t0 + s(30)));
        due.drain(..).for_each(Waker::wake);
        assert_eq!(b.0.load(AtomicOrdering::SeqCst), 1);
        assert!(!t.is_live(soon) && t.is_live(late));
        // Moved earlier while far: into the heap; moved later: it fires then.
        assert!(t.reset(late, t0 + s(20)));
        assert_eq!(t.take_due(t0 + s(6), &mut due), Some(t0 + s(20)));
        assert!(t.reset(late, t0 + s(40)));
        assert_eq!(t.take_due(t0 + s(20), &mut due), Some(t0 + s(40)));
        assert!(due.is_empty(), "moved later: not fired at the old deadline");
        assert_eq!(t.take_due(t0 + s(40), &mut due), None);
        due.drain(..).for_each(Waker::wake);
        assert_eq!(a.0.load(AtomicOrdering::SeqCst), 1);
        assert!(t.is_empty());
    }

    #[test]
    fn far_passes_stay_a_horizon_apart() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut t = Timers::new();
        let (_, w) = waker();
        let mut due = Vec::new();
        let mut keys = Vec::new();
        // A timer per millisecond for 5 s, each due just past the far threshold (the
        // worst case: each would pull the bound near at once), half of them dropped,
        // one lowered while far.
        for i in 0..5_000u64 {
            let now = t0 + ms(i);
            t.forget_now();
            t.note_now(now);
            let k = t.insert(now + 2 * HORIZON + ms(1), w.clone());
            if i % 2 == 0 {
                t.remove(k);
            } else {
                keys.push(k);
            }
            if i == 2_001 {
                assert!(t.reset(keys[0], now + ms(1)));
            }
            t.take_due(now, &mut due);
        }
        assert!(
            t.far_passes <= 6,
            "{} passes over the slab in 5 s",
            t.far_passes
        );
        // And none fired early: every one fired is due by the last `now`.
        assert!(due.len() <= keys.len());
        let end = t0 + ms(5_000) + 3 * HORIZON;
        t.take_due(end, &mut due);
        assert_eq!(due.len(), keys.len(), "all fire in the end");
        assert!(t.is_empty());
    }

    #[test]
    fn a_heap_timer_moved_far_later_leaves_the_heap() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut t = Timers::new();
        t.note_now(t0);
        let (a, w) = waker();
        let k = t.insert(t0 + ms(100), w);
        assert_eq!(t.heap.len(), 1);
        assert!(t.reset(k, t0 + ms(60_000)));
        let mut due = Vec::new();
        assert_eq!(t.take_due(t0 + ms(100), &mut due), Some(t0 + ms(60_000)));
        assert_eq!((t.heap.len(), t.far), (0, 1));
        assert!(due.is_empty());
        assert_eq!(t.take_due(t0 + ms(60_000), &mut due), None);
        due.drain(..).for_each(Waker::wake);
        assert_eq!(a.0.load(AtomicOrdering::SeqCst), 1);
        assert!(t.is_empty());
    }
}
