//! Background sends on io_uring, kept apart from the op table.
//!
//! A background send (`send_all`) has no future and is never cancelled by its socket:
//! all the driver owes it is to keep its buffer until the kernel is done and to tell its
//! socket how it ended. So it needs none of a slot's machinery (waker, completion
//! queue, generation, scratch): its SQE goes straight into the submission queue when it
//! starts, carrying the index of an entry of this table in its `user_data`, and its CQE
//! finishes that entry without touching the op table. (An op in the table waits for the
//! enter before reaching the SQ so that a cancel before the enter can take it back; a
//! background send is never taken back, so it does not have to wait.)
//!
//! `user_data` of a background send: the entry's index in the high 32 bits, [`TAG`] in
//! the low 32 (a slot index the op table never reaches). An entry's index is reused
//! only after its CQE, and the socket forgets the send (`Background::finish`) in that
//! same step, so nothing can name a finished entry: no generation is needed.

use crate::driver::completion::OpId;
use crate::driver::held::{Held, HeldValue};

/// The low 32 bits of a background send's `user_data`.
pub(crate) const TAG: u32 = u32::MAX - 1;

/// What the driver keeps of each background send in flight, by index.
#[derive(Default)]
pub(crate) struct BackgroundSends {
    /// `Some` while the send at that index is in flight.
    entries: Vec<Option<HeldValue>>,
    /// The indices whose entry is `None` (the rest are in flight).
    free: Vec<u32>,
}

impl BackgroundSends {
    /// Keeps what `held` makes until the send's CQE (a free entry is always `None`);
    /// returns the send's id (its `user_data` form goes into the SQE).
    #[inline]
    pub(crate) fn insert<H: Held>(&mut self, held: impl FnOnce() -> H) -> OpId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push(None);
                (self.entries.len() - 1) as u32
            }
        };
        // Made in place: the entry is a few words, and a send starts per message.
        HeldValue::put(&mut self.entries[index as usize], held);
        OpId {
            index: TAG,
            gen: index,
        }
    }

    /// The CQE of the send at `index`: its held value hears the result, then is
    /// dropped (a pool buffer goes back to the ring).
    #[inline]
    pub(crate) fn finish(&mut self, index: u32, result: i32) {
        let Some(entry) = self.entries.get_mut(index as usize) else {
            return;
        };
        if entry.is_none() {
            return;
        }
        self.free.push(index);
        HeldValue::finish_in_place(entry, result);
    }

    /// Whether the send `id` names is still in flight.
    pub(crate) fn is_live(&self, id: OpId) -> bool {
        id.index == TAG
            && self
                .entries
                .get(id.gen as usize)
                .is_some_and(|e| e.is_some())
    }

    /// How many are in flight.
    pub(crate) fn live(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// The `user_data` of every send in flight (to cancel them at shutdown).
    pub(crate) fn live_user_data(&self) -> Vec<u64> {
        (0..self.entries.len() as u32)
            .filter(|&i| self.entries[i as usize].is_some())
            .map(|i| OpId { index: TAG, gen: i }.to_user_data())
            .collect()
    }
}
