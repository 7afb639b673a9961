//! A core's run queue: the tasks that are ready, in the order they were woken.
//!
//! Every I/O completion that wakes a task pushes here and every poll pops from here, so
//! both are kept to a few instructions: a ring whose length is a power of two, indexed
//! by two free-running counters (no wrap test, no `RefCell` flag to set and clear as a
//! `RefCell<VecDeque>` costs). The queue is only touched by its own core's thread, and
//! its methods run no foreign code, so they can never be re-entered.

use std::cell::{Cell, UnsafeCell};

/// A run-queue entry: the task's slab key and its header's address. The address tells a
/// stale entry (the task ended and its key was reused) from a live one; at worst an
/// address reused by a new header costs one spurious poll, which futures tolerate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunQueueEntry {
    pub(crate) key: usize,
    pub(crate) header: usize,
}

/// Filler for slots not in use: no header lives at address 0, so it matches no task.
const EMPTY: RunQueueEntry = RunQueueEntry { key: 0, header: 0 };

/// The ring's first length.
const FIRST_LEN: usize = 256;

/// A FIFO of ready tasks (see the module doc).
pub(crate) struct RunQueue {
    /// `len()` is zero or a power of two; entry `i` of the queue (counting from the
    /// first pushed) is at `i & (len - 1)`.
    slots: UnsafeCell<Vec<RunQueueEntry>>,
    /// Count of entries popped, ever (wrapping).
    head: Cell<usize>,
    /// Count of entries pushed, ever (wrapping).
    tail: Cell<usize>,
}

impl Default for RunQueue {
    fn default() -> Self {
        RunQueue {
            slots: UnsafeCell::new(Vec::new()),
            head: Cell::new(0),
            tail: Cell::new(0),
        }
    }
}

impl RunQueue {
    /// Queues `entry` last.
    #[inline]
    pub(crate) fn push(&self, entry: RunQueueEntry) {
        let tail = self.tail.get();
        // SAFETY: only this type's methods touch `slots`, none of them keeps a reference
        // past its return or calls out while holding one, and the queue is `!Sync`
        // (its cells): no other reference to `slots` exists now.
        let slots = unsafe { &mut *self.slots.get() };
        if tail.wrapping_sub(self.head.get()) == slots.len() {
            // Last, so a tail call: the common push needs no stack frame.
            return self.push_grown(entry);
        }
        let at = tail & (slots.len() - 1);
        // SAFETY: the queue is not full, so `slots` is not empty: its length is a power
        // of two and `at < len`.
        unsafe { *slots.get_unchecked_mut(at) = entry };
        self.tail.set(tail.wrapping_add(1));
    }

    /// `push` onto a full ring: grows it first.
    #[cold]
    #[inline(never)]
    fn push_grown(&self, entry: RunQueueEntry) {
        self.grow();
        self.push(entry);
    }

    /// Takes the first entry, if any.
    #[inline]
    pub(crate) fn pop(&self) -> Option<RunQueueEntry> {
        let head = self.head.get();
        if head == self.tail.get() {
            return None;
        }
        // SAFETY: as in `push`.
        let slots = unsafe { &*self.slots.get() };
        // SAFETY: the queue is not empty, so `slots` is not (its length is a power of
        // two) and the masked index is inside it.
        let entry = unsafe { *slots.get_unchecked(head & (slots.len() - 1)) };
        self.head.set(head.wrapping_add(1));
        Some(entry)
    }

    /// Whether nothing is queued.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.get() == self.tail.get()
    }

    /// How many entries are queued.
    pub(crate) fn len(&self) -> usize {
        self.tail.get().wrapping_sub(self.head.get())
    }

    /// Forgets every entry.
    pub(crate) fn clear(&self) {
        self.head.set(self.tail.get());
    }

    /// Doubles the ring (full): the entries keep their order, from index 0 on.
    fn grow(&self) {
        // SAFETY: as in `push`; the caller holds no reference to `slots` across this.
        let slots = unsafe { &mut *self.slots.get() };
        let len = self.len();
        let new_len = (slots.len() * 2).max(FIRST_LEN);
        let mut grown = Vec::with_capacity(new_len);
        let head = self.head.get();
        grown.extend((0..len).map(|i| slots[head.wrapping_add(i) & (slots.len() - 1)]));
        grown.resize(new_len, EMPTY);
        *slots = grown;
        self.head.set(0);
        self.tail.set(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> RunQueueEntry {
        RunQueueEntry {
            key: i,
            header: i + 1,
        }
    }

    #[test]
    fn entries_come_out_in_order_across_growth_and_wraparound() {
        let q = RunQueue::default();
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
        let mut next_in = 0;
        let mut next_out = 0;
        // Interleave pushes and pops so the counters wrap the ring many times, with
        // growth happening while the live part straddles the end of the ring.
        for round in 0..40 {
            for _ in 0..(round * 37 % 300 + 1) {
                q.push(entry(next_in));
                next_in += 1;
            }
            for _ in 0..(round * 53 % 290) {
                match q.pop() {
                    Some(e) => {
                        assert_eq!(e, entry(next_out));
                        next_out += 1;
                    }
                    None => break,
                }
            }
            assert_eq!(q.len(), next_in - next_out);
        }
        while let Some(e) = q.pop() {
            assert_eq!(e, entry(next_out));
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        assert!(q.is_empty());
        q.push(entry(1));
        q.clear();
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }
}
