//! Routing a completion to whoever owns its operation.

use super::table::{Notify, OpTable, Slot, SlotState, StreamQueue, BACKLOG};
use super::{Completion, DriverStats, OpId};
use crate::buf::{BufferPool, PoolBuf};

/// A completion sink for the low-level face: `(token, completion, last)`.
pub(crate) type Sink<'a> = &'a mut dyn FnMut(u64, Completion, bool);

/// What a backend needs to hand completions over: the op table, the pool, the turn's
/// sink (or, outside a turn, the queue of completions for the next one) and the stats.
pub(crate) struct Delivery<'a> {
    pub table: &'a mut OpTable,
    pub pool: &'a BufferPool,
    pub sink: Option<Sink<'a>>,
    /// Token completions produced outside a turn (epoll finishes some ops at submit),
    /// handed to the next turn's sink.
    pub deferred: &'a mut Vec<(u64, Completion, bool)>,
    pub stats: &'a mut DriverStats,
    /// Multishot receives that just became backlogged: the backend stops them.
    pub backlogged: &'a mut Vec<OpId>,
}

impl Delivery<'_> {
    /// Routes one completion of `id` to whoever owns the operation. `last` says the
    /// kernel will not mention `id` again.
    pub(crate) fn deliver(&mut self, id: OpId, c: Completion, last: bool) {
        let Some(slot) = self.table.get_mut(id) else {
            return; // stale: dropping `c` returns any pool buffer
        };
        match slot.state {
            SlotState::Free => {}
            SlotState::Orphaned => {
                if c.result >= 0 && super::op::OpKind::yields_fd(&slot.op) {
                    // SAFETY: the kernel handed us this fd and nobody else knows it.
                    unsafe { libc::close(c.result) };
                }
                if last {
                    if let Some(held) = slot.held.take() {
                        held.finished(c.result);
                    }
                    self.table.release(id);
                }
                drop(c);
            }
            SlotState::Owned => {
                if last {
                    slot.done = true;
                }
                match slot.notify {
                    Notify::Waker(_) => {
                        to_waker(slot, id, c, last, self.stats, self.backlogged);
                    }
                    Notify::Token(token) => {
                        if last {
                            self.table.release(id);
                        }
                        match self.sink.as_mut() {
                            Some(sink) => sink(token, c, last),
                            None => self.deferred.push((token, c, last)),
                        }
                    }
                }
            }
        }
    }
}

/// Hands a completion to an executor-face slot (`Notify::Waker`) that is `Owned`: a
/// multishot op's completions queue (bounded by `BACKLOG`), a single-shot op's is kept
/// for its future; the task is woken if its waker is armed. The caller has marked the
/// slot `done` if `last`.
#[inline(always)]
pub(crate) fn to_waker(
    slot: &mut Slot,
    id: OpId,
    c: Completion,
    last: bool,
    stats: &mut DriverStats,
    backlogged: &mut Vec<OpId>,
) {
    if let Some(shared) = &slot.watch {
        to_stream(shared, &mut slot.backlogged, id, c, last, stats, backlogged);
    } else if slot.multishot {
        slot.queue.push_back(c);
        if slot.backlogged {
            // Its reader is behind: keep the bytes, not the pool buffer.
            if let Some(b) = slot.queue.back_mut().and_then(|c| c.buf.as_mut()) {
                b.unshare();
            }
        }
        if !last && !slot.backlogged && slot.queue.len() >= BACKLOG {
            // The reader fell behind: the receive stops (the backend sees to it), and
            // what waits for the reader gives its pool buffers back (copied), so a
            // stalled reader cannot hold the core's pool however much arrived at once.
            slot.backlogged = true;
            stats.recv_backlogged += 1;
            backlogged.push(id);
            for waiting in slot.queue.iter_mut() {
                if let Some(b) = waiting.buf.as_mut() {
                    b.unshare();
                }
            }
        }
    } else {
        slot.single = Some(c);
    }
    // Woken in place and kept registered: a task's waker is the same on every poll, so
    // the next registration costs nothing.
    if let (true, Notify::Waker(Some(w))) = (slot.armed, &slot.notify) {
        w.wake_by_ref();
    }
}

/// [`to_waker`] for the commonest completion of all: bytes (`result > 0`, in the pool
/// buffer `buf` makes) of a multishot receive that will go on. For a stream that holds
/// its queue, the buffer's handle is made straight into the queue (not built, moved
/// and copied on the way); anything else goes through `to_waker`.
#[inline(always)]
pub(crate) fn received_to_waker(
    slot: &mut Slot,
    id: OpId,
    result: i32,
    buf: impl FnOnce() -> PoolBuf,
    stats: &mut DriverStats,
    backlogged: &mut Vec<OpId>,
) {
    let Some(shared) = &slot.watch else {
        let c = Completion {
            result,
            buf: Some(buf()),
            addr: None,
        };
        return to_waker(slot, id, c, false, stats, backlogged);
    };
    {
        let mut items = shared.items.borrow_mut();
        if items.is_empty() && !slot.backlogged {
            // The reader took everything before: nothing to bound or copy.
            items.push_back((result, Some(buf())));
        } else {
            drop(items);
            let c = Completion {
                result,
                buf: Some(buf()),
                addr: None,
            };
            to_stream(
                shared,
                &mut slot.backlogged,
                id,
                c,
                false,
                stats,
                backlogged,
            );
        }
    }
    if let (true, Notify::Waker(Some(w))) = (slot.armed, &slot.notify) {
        w.wake_by_ref();
    }
}

/// [`to_waker`]'s queueing for a receive whose stream holds its queue: the same bound
/// and the same copying of a backlogged reader's buffers, in the stream's queue.
#[inline(always)]
fn to_stream(
    shared: &StreamQueue,
    slot_backlogged: &mut bool,
    id: OpId,
    c: Completion,
    last: bool,
    stats: &mut DriverStats,
    backlogged: &mut Vec<OpId>,
) {
    let mut items = shared.items.borrow_mut();
    items.push_back((c.result, c.buf));
    if last {
        shared.done.set(true);
    }
    if *slot_backlogged {
        if let Some(b) = items.back_mut().and_then(|(_, b)| b.as_mut()) {
            b.unshare();
        }
    }
    if !last && !*slot_backlogged && items.len() >= BACKLOG {
        *slot_backlogged = true;
        shared.backlogged.set(true);
        stats.recv_backlogged += 1;
        backlogged.push(id);
        for (_, waiting) in items.iter_mut() {
            if let Some(b) = waiting.as_mut() {
                b.unshare();
            }
        }
    }
}
