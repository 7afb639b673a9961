//! The loop's timers: a binary heap ordered by deadline, then by scheduling order (so
//! timers with the same deadline fire in the order they were set), with O(1)
//! cancellation.
//!
//! Cancelling marks the timer's handle and bumps a counter here; the entry stays in the
//! heap and is dropped when it reaches the top. When cancelled entries make up more than
//! half of a heap of over [`PURGE_MIN`] entries, the heap is rebuilt without them, so a
//! program that sets and cancels many long timers (timeouts that never fire) keeps the
//! heap small: amortised O(1) per cancel, O(log n) per set and per fire. This module
//! knows nothing of Python: the payload's cancelled flag is read through a closure.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Heaps smaller than this are never purged (asyncio uses the same threshold).
pub const PURGE_MIN: usize = 100;

struct Entry<T> {
    when: f64,
    seq: u64,
    payload: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    /// Reversed: `BinaryHeap` is a max-heap and the earliest deadline must be on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .when
            .total_cmp(&self.when)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Deadline-ordered timers with lazy, counted cancellation.
pub struct TimerHeap<T> {
    heap: BinaryHeap<Entry<T>>,
    seq: u64,
    cancelled: usize,
}

impl<T> std::fmt::Debug for TimerHeap<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerHeap")
            .field("entries", &self.heap.len())
            .field("cancelled", &self.cancelled)
            .finish_non_exhaustive()
    }
}

impl<T> Default for TimerHeap<T> {
    fn default() -> Self {
        TimerHeap {
            heap: BinaryHeap::new(),
            seq: 0,
            cancelled: 0,
        }
    }
}

impl<T> TimerHeap<T> {
    /// Adds a timer due at `when`.
    pub fn push(&mut self, when: f64, payload: T) {
        self.seq += 1;
        self.heap.push(Entry {
            when,
            seq: self.seq,
            payload,
        });
    }

    /// Entries in the heap, cancelled ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no entry is left.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Cancelled entries still in the heap.
    pub fn cancelled(&self) -> usize {
        self.cancelled
    }

    /// Records that one entry's payload was marked cancelled; purges the heap when
    /// cancelled entries dominate.
    pub fn note_cancelled(&mut self, is_cancelled: impl Fn(&T) -> bool) {
        self.cancelled += 1;
        if self.heap.len() > PURGE_MIN && self.cancelled * 2 > self.heap.len() {
            let entries = std::mem::take(&mut self.heap).into_vec();
            self.heap = entries
                .into_iter()
                .filter(|e| !is_cancelled(&e.payload))
                .collect();
            self.cancelled = 0;
        }
    }

    /// Drops cancelled entries from the top; returns the earliest live deadline.
    pub fn next_deadline(&mut self, is_cancelled: impl Fn(&T) -> bool) -> Option<f64> {
        while let Some(top) = self.heap.peek() {
            if !is_cancelled(&top.payload) {
                return Some(top.when);
            }
            self.heap.pop();
            self.cancelled = self.cancelled.saturating_sub(1);
        }
        None
    }

    /// Pops the earliest timer if it is due before `end` (and not cancelled: cancelled
    /// entries met on the way are dropped).
    pub fn pop_due(&mut self, end: f64, is_cancelled: impl Fn(&T) -> bool) -> Option<T> {
        let when = self.next_deadline(&is_cancelled)?;
        if when >= end {
            return None;
        }
        self.heap.pop().map(|e| e.payload)
    }

    /// Removes every entry (the loop closes).
    pub fn drain(&mut self) -> Vec<T> {
        self.cancelled = 0;
        std::mem::take(&mut self.heap)
            .into_vec()
            .into_iter()
            .map(|e| e.payload)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    type Flag = Rc<Cell<bool>>;
    fn flag() -> Flag {
        Rc::new(Cell::new(false))
    }
    fn is_cancelled(f: &(u32, Flag)) -> bool {
        f.1.get()
    }

    #[test]
    fn fires_in_deadline_order_then_in_scheduling_order() {
        let mut h = TimerHeap::default();
        for (i, when) in [3.0, 1.0, 2.0, 1.0, 0.5].into_iter().enumerate() {
            h.push(when, (i as u32, flag()));
        }
        let mut order = Vec::new();
        while let Some((i, _)) = h.pop_due(10.0, is_cancelled) {
            order.push(i);
        }
        assert_eq!(order, vec![4, 1, 3, 2, 0]);
    }

    #[test]
    fn only_due_timers_pop() {
        let mut h = TimerHeap::default();
        h.push(5.0, (0, flag()));
        assert!(
            h.pop_due(5.0, is_cancelled).is_none(),
            "due means before end"
        );
        assert_eq!(h.next_deadline(is_cancelled), Some(5.0));
        assert!(h.pop_due(5.1, is_cancelled).is_some());
        assert!(h.is_empty());
    }

    #[test]
    fn cancelled_timers_never_fire_and_are_purged_when_they_dominate() {
        let mut h = TimerHeap::default();
        let flags: Vec<Flag> = (0..1000).map(|_| flag()).collect();
        for (i, f) in flags.iter().enumerate() {
            h.push(i as f64, (i as u32, f.clone()));
        }
        for (i, f) in flags.iter().enumerate() {
            if i % 4 != 0 {
                f.set(true);
                h.note_cancelled(is_cancelled);
            }
        }
        assert!(h.len() < 1000, "purged: {} entries left", h.len());
        assert!(h.cancelled() * 2 <= h.len() + 1);
        let mut fired = Vec::new();
        while let Some((i, _)) = h.pop_due(f64::INFINITY, is_cancelled) {
            fired.push(i);
        }
        assert_eq!(fired, (0..1000).step_by(4).collect::<Vec<u32>>());
        assert_eq!(h.cancelled(), 0);
    }

    #[test]
    fn small_heaps_are_not_purged_but_skip_cancelled_tops() {
        let mut h = TimerHeap::default();
        let a = flag();
        h.push(1.0, (1, a.clone()));
        h.push(2.0, (2, flag()));
        a.set(true);
        h.note_cancelled(is_cancelled);
        assert_eq!(h.len(), 2);
        assert_eq!(h.next_deadline(is_cancelled), Some(2.0));
        assert_eq!(h.cancelled(), 0);
    }
}
