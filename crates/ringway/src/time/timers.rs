//! The per-core timer structure.
//!
//! An ordered map from `(deadline, sequence)` to the waker to call. Insertion and
//! removal are `O(log n)`; the earliest deadline is the first key, and it becomes the
//! timeout of the driver's wait (no timerfd, no syscall of its own). A wheel would make
//! insertion `O(1)`, but this map has kept up with every load measured so far; revisit it
//! with a benchmark in hand.

use std::collections::BTreeMap;
use std::task::Waker;
use std::time::Instant;

/// Key of a registered timer.
pub(crate) type TimerKey = (Instant, u64);

pub(crate) struct Timers {
    map: BTreeMap<TimerKey, Waker>,
    seq: u64,
}

impl Timers {
    pub fn new() -> Self {
        Timers {
            map: BTreeMap::new(),
            seq: 0,
        }
    }

    pub fn insert(&mut self, at: Instant, waker: Waker) -> TimerKey {
        self.seq += 1;
        let key = (at, self.seq);
        self.map.insert(key, waker);
        key
    }

    /// Replaces the waker of a live timer; false if it already fired.
    pub fn update(&mut self, key: TimerKey, waker: &Waker) -> bool {
        match self.map.get_mut(&key) {
            Some(w) => {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
                true
            }
            None => false,
        }
    }

    pub fn remove(&mut self, key: TimerKey) {
        self.map.remove(&key);
    }

    /// Removes and returns the wakers due at `now`, and the next deadline after them.
    pub fn take_due(&mut self, now: Instant) -> (Vec<Waker>, Option<Instant>) {
        let mut due = Vec::new();
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 > now {
                return (due, Some(entry.key().0));
            }
            due.push(entry.remove());
        }
        (due, None)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
}
