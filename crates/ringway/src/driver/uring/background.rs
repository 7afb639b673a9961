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
//! only after its final CQE, and the socket forgets the send (`Background::finish`) in
//! that same step, so nothing can name a finished entry: no generation is needed.
//!
//! # The first try does not wait
//!
//! No task hears of a send whose buffer wakes nobody when dropped
//! ([`IoBuf::drop_wakes_nobody`](crate::buf::IoBuf::drop_wakes_nobody)), unless one
//! waits for it (`flush`, a second `send_all`: then it is *uncounted*). Its first SQE
//! carries `MSG_DONTWAIT`, so the kernel never parks it: it queues what fits in the
//! socket's buffer during the enter that submits it and posts its CQE there and then
//! (the whole length, a short count, or `-EAGAIN`). The enter can therefore wait for
//! one completion *beyond* those (`Uring::turn`): a server that answers one request at a
//! time makes one enter per request, not two (the send's own CQE used to end the wait
//! that was meant for the next request). What did not fit is sent by a second SQE, an
//! ordinary `MSG_WAITALL` send of the rest, submitted after the reap
//! ([`take_rests`](BackgroundSends::take_rests)); the entry completes once, with the
//! whole count, as before. A send of any other buffer (ringway-compat's writer learns
//! from its buffer's drop that the send has ended) is one `MSG_WAITALL` SQE, not
//! counted. Not under SQPOLL, whose kernel thread submits on its own time.
//!
//! Between the two SQEs no operation holds the socket's file, so a socket dropped with
//! its send in flight is not closed through the ring behind the send: its fd is kept
//! in the entry ([`close_when_done`](BackgroundSends::close_when_done)) and closed once
//! the send has ended, so that its number cannot be reused by a new connection while the
//! rest still has to go out on it.

use std::os::fd::{IntoRawFd, OwnedFd, RawFd};

use crate::driver::completion::OpId;
use crate::driver::held::{Held, HeldValue};
use crate::driver::op::SendAll;

/// The low 32 bits of a background send's `user_data`.
pub(crate) const TAG: u32 = u32::MAX - 1;

/// What the driver keeps of each background send in flight, by index.
#[derive(Default)]
pub(crate) struct BackgroundSends {
    /// One per index; its `held` is `Some` while the send at that index is in flight.
    entries: Vec<Entry>,
    /// The indices whose entry is free (the rest are in flight).
    free: Vec<u32>,
    /// Entries whose first try did not all fit: their rest goes in after the reap.
    rests: Vec<u32>,
    /// Shutting down: a short first try ends its send (with its short count) instead
    /// of going on.
    stopping: bool,
}

/// One background send: what it holds, and where it stands.
struct Entry {
    /// The buffer and the socket's record, until the send's final CQE.
    held: Option<HeldValue>,
    /// The whole send (its rest is made from it).
    send: SendAll,
    /// Bytes the first try queued (0 until it completes, and for a send with none).
    sent: u32,
    /// Its next CQE is a first try's (`MSG_DONTWAIT`), not a whole send's or a rest's.
    first_try: bool,
    /// That first try is counted among the CQEs the turn's wait looks beyond (no task
    /// waits for it).
    counted: bool,
    /// The socket's fd, if the socket was dropped first: closed once the send ends.
    close: Option<OwnedFd>,
}

impl Default for Entry {
    fn default() -> Self {
        Entry {
            held: None,
            send: SendAll {
                fd: -1,
                buf: std::ptr::null(),
                len: 0,
            },
            sent: 0,
            first_try: false,
            counted: false,
            close: None,
        }
    }
}

impl BackgroundSends {
    /// Keeps what `held` makes until the send's final CQE (a free entry's `held` is
    /// always `None`); returns the send's id (its `user_data` form goes into the SQE).
    /// `first_try`: its SQE is `send.entry_with(true)` (see the module doc).
    #[inline(always)]
    pub(crate) fn insert<H: Held>(
        &mut self,
        held: impl FnOnce() -> H,
        send: &SendAll,
        first_try: bool,
    ) -> OpId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push(Entry::default());
                (self.entries.len() - 1) as u32
            }
        };
        let entry = &mut self.entries[index as usize];
        // Made in place: the entry is a few words, and a send starts per message.
        HeldValue::put(&mut entry.held, held);
        entry.send = *send;
        entry.sent = 0;
        entry.first_try = first_try;
        entry.counted = first_try;
        id_of(index)
    }

    /// A CQE of the send at `index`. A first try that queued less than the whole
    /// (`-EAGAIN` included) leaves its rest to [`take_rests`](Self::take_rests);
    /// otherwise the send has ended: its held value hears the total (or the error) and
    /// is dropped (a pool buffer goes back to the ring), and a kept fd goes to `closes`.
    #[inline]
    pub(crate) fn complete(&mut self, index: u32, result: i32, closes: &mut Vec<RawFd>) {
        let Some(entry) = self.entries.get_mut(index as usize) else {
            return;
        };
        if entry.held.is_none() {
            return;
        }
        let mut total = result;
        if entry.first_try {
            entry.first_try = false;
            if i64::from(result) != i64::from(entry.send.len)
                && short_first_try(entry, result, self.stopping)
            {
                self.rests.push(index);
                return;
            }
        } else if entry.sent != 0 && result >= 0 {
            // A rest: at most `len - sent` bytes, so the sum fits.
            total = (entry.sent + result as u32) as i32;
        }
        if let Some(fd) = entry.close.take() {
            closes.push(fd.into_raw_fd());
        }
        self.free.push(index);
        HeldValue::finish_in_place(&mut entry.held, total);
    }

    /// The sends whose first try did not all fit, each with the rest of its bytes as a
    /// waiting (`MSG_WAITALL`) send, and its id. Their buffers are still held.
    pub(crate) fn take_rests(&mut self) -> impl Iterator<Item = (OpId, SendAll)> + '_ {
        let entries = &self.entries;
        self.rests.drain(..).filter_map(move |index| {
            let e = entries.get(index as usize).filter(|e| e.held.is_some())?;
            let rest = SendAll {
                fd: e.send.fd,
                // SAFETY: `sent < len`, so this stays inside the held buffer.
                buf: unsafe { e.send.buf.add(e.sent as usize) },
                len: e.send.len - e.sent,
            };
            Some((id_of(index), rest))
        })
    }

    /// Whether a first try left a rest to submit.
    #[inline]
    pub(crate) fn has_rests(&self) -> bool {
        !self.rests.is_empty()
    }

    /// The entry of send `id`, if it is in flight.
    fn live_entry(&mut self, id: OpId) -> Option<&mut Entry> {
        if id.index != TAG {
            return None;
        }
        self.entries
            .get_mut(id.gen as usize)
            .filter(|e| e.held.is_some())
    }

    /// Keeps `fd` (the socket of background send `id`, dropped) until that send has
    /// ended, then hands it to the ring's closes; gives it back if the send has ended
    /// already.
    pub(crate) fn close_when_done(&mut self, id: OpId, fd: OwnedFd) -> Result<(), OwnedFd> {
        match self.live_entry(id) {
            Some(e) => {
                e.close = Some(fd);
                Ok(())
            }
            None => Err(fd),
        }
    }

    /// A task waits for send `id`: true if its first try was counted for the turn's
    /// wait and has not completed (it is counted no more).
    pub(crate) fn uncount(&mut self, id: OpId) -> bool {
        match self.live_entry(id) {
            Some(e) if e.first_try && e.counted => {
                e.counted = false;
                true
            }
            _ => false,
        }
    }

    /// From now on a short first try ends its send (shutdown: nothing new goes in).
    pub(crate) fn stop(&mut self) {
        self.stopping = true;
    }

    /// Whether the send `id` names is still in flight.
    pub(crate) fn is_live(&self, id: OpId) -> bool {
        id.index == TAG
            && self
                .entries
                .get(id.gen as usize)
                .is_some_and(|e| e.held.is_some())
    }

    /// How many are in flight.
    pub(crate) fn live(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// The `user_data` of every send in flight (to cancel them at shutdown).
    pub(crate) fn live_user_data(&self) -> Vec<u64> {
        (0..self.entries.len() as u32)
            .filter(|&i| self.entries[i as usize].held.is_some())
            .map(|i| id_of(i).to_user_data())
            .collect()
    }
}

/// A first try of `entry` that did not send the whole: true if its rest is to go out
/// (what went is kept in `sent`); false if the send ends here (an error, or shutting
/// down).
#[cold]
#[inline(never)]
fn short_first_try(entry: &mut Entry, result: i32, stopping: bool) -> bool {
    let went = match result {
        r if r >= 0 => r as u32,
        r if r == -libc::EAGAIN => 0,
        _ => return false,
    };
    if stopping {
        return false;
    }
    entry.sent = went;
    true
}

/// The id of the entry at `index`.
#[inline]
fn id_of(index: u32) -> OpId {
    OpId {
        index: TAG,
        gen: index,
    }
}
