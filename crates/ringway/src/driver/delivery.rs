//! Routing a completion to whoever owns its operation (see [`Owner`]).

use super::completion::{Completion, OpId};
use super::op::OpKind;
use super::slot::{Flight, Owner, Slot, BACKLOG};
use super::stats::DriverStats;
use super::stream_queue::StreamQueue;
use super::table::OpTable;
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
        match &mut slot.owner {
            Owner::Free => {}
            Owner::Orphaned(held) => {
                if c.result >= 0 && slot.op.yields_fd() {
                    // SAFETY: the kernel handed us this fd and nobody else knows it.
                    unsafe { libc::close(c.result) };
                }
                if last {
                    if let Some(held) = held.take() {
                        held.finished(c.result);
                    }
                    self.table.release(id);
                }
                drop(c);
            }
            Owner::Token(token) => {
                let token = *token;
                if last {
                    self.table.release(id);
                }
                match self.sink.as_mut() {
                    Some(sink) => sink(token, c, last),
                    None => self.deferred.push((token, c, last)),
                }
            }
            Owner::Single { .. } | Owner::Stream { .. } => {
                if last {
                    slot.flight = Flight::Done;
                }
                to_task(slot, id, c, last, self.stats, self.backlogged);
            }
        }
    }
}

/// Hands a completion to a task's slot: a single-shot op's is kept for its future, a
/// multishot op's completions queue (bounded by [`BACKLOG`]); the task is woken if its
/// waker is armed. The caller has marked the slot `Done` if `last`.
#[inline(always)]
pub(crate) fn to_task(
    slot: &mut Slot,
    id: OpId,
    c: Completion,
    last: bool,
    stats: &mut DriverStats,
    backlogged: &mut Vec<OpId>,
) {
    let Slot { owner, queue, .. } = slot;
    match owner {
        Owner::Single { completion, .. } => *completion = Some(c),
        Owner::Stream {
            shared: Some(shared),
            backlogged: behind,
            ..
        } => to_stream(shared, behind, id, c, last, stats, backlogged),
        Owner::Stream {
            shared: None,
            backlogged: behind,
            ..
        } => {
            queue.push_back(c);
            if *behind {
                // Its reader is behind: keep the bytes, not the pool buffer.
                if let Some(b) = queue.back_mut().and_then(|c| c.buf.as_mut()) {
                    b.unshare();
                }
            }
            if !last && !*behind && queue.len() >= BACKLOG {
                // The reader fell behind: the receive stops (the backend sees to it),
                // and what waits for the reader gives its pool buffers back (copied),
                // so a stalled reader cannot hold the core's pool however much arrived
                // at once.
                *behind = true;
                stats.recv_backlogged += 1;
                backlogged.push(id);
                for waiting in queue.iter_mut() {
                    if let Some(b) = waiting.buf.as_mut() {
                        b.unshare();
                    }
                }
            }
        }
        Owner::Free | Owner::Token(_) | Owner::Orphaned(_) => {
            unreachable!("to_task on a slot no task owns")
        }
    }
    // Woken in place and kept registered: a task's waker is the same on every poll, so
    // the next registration costs nothing.
    slot.wake();
}

/// [`to_task`] for the commonest completion of all: bytes (`result > 0`, in the pool
/// piece `buf` makes) of a multishot receive a task reads that will go on. For a stream
/// that holds its queue, the piece's handle is made straight into the queue (not built,
/// moved and copied on the way); anything else goes through `to_task`.
#[inline(always)]
pub(crate) fn received_to_task(
    slot: &mut Slot,
    id: OpId,
    result: i32,
    buf: impl FnOnce() -> PoolBuf,
    stats: &mut DriverStats,
    backlogged: &mut Vec<OpId>,
) {
    let Owner::Stream {
        shared: Some(shared),
        backlogged: behind,
        armed,
    } = &mut slot.owner
    else {
        let c = Completion {
            result,
            buf: Some(buf()),
            addr: None,
        };
        return to_task(slot, id, c, false, stats, backlogged);
    };
    {
        let mut items = shared.items.borrow_mut();
        if items.is_empty() && !*behind {
            // The reader took everything before: nothing to bound or copy.
            items.push_back((result, Some(buf())));
        } else {
            drop(items);
            let c = Completion {
                result,
                buf: Some(buf()),
                addr: None,
            };
            to_stream(shared, behind, id, c, false, stats, backlogged);
        }
    }
    // `Slot::wake`, without matching the owner a second time.
    if let (true, Some(w)) = (*armed, &slot.waker) {
        w.wake_by_ref();
    }
}

/// [`to_task`]'s queueing for a receive whose stream holds its queue: the same bound
/// and the same copying of a backlogged reader's buffers, in the stream's queue.
#[inline(always)]
fn to_stream(
    shared: &StreamQueue,
    behind: &mut bool,
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
    if *behind {
        if let Some(b) = items.back_mut().and_then(|(_, b)| b.as_mut()) {
            b.unshare();
        }
    }
    if !last && !*behind && items.len() >= BACKLOG {
        *behind = true;
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
