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
/// multishot op's completions queue (bounded by [`BACKLOG`] and by the pool's
/// [share](crate::buf::BufferPool::share): see [`falls_behind`]); the task is woken if its
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
    let Slot {
        owner,
        queue,
        resume_at,
        ..
    } = slot;
    match owner {
        Owner::Single { completion, .. } => *completion = Some(c),
        Owner::Stream {
            shared: Some(shared),
            backlogged: behind,
            ..
        } => to_stream(shared, behind, resume_at, id, c, last, stats, backlogged),
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
            if !last && !*behind {
                if let Some(why) = falls_behind(queue.len(), queue.iter().map(|c| c.buf.as_ref())) {
                    // The receive stops (the backend sees to it), and what waits for
                    // the reader gives its pool buffers back (copied), so a stalled
                    // reader cannot hold the core's pool however much arrived at once.
                    *behind = true;
                    *resume_at = resume_point(queue.len());
                    stopped(why, stats);
                    backlogged.push(id);
                    for waiting in queue.iter_mut() {
                        if let Some(b) = waiting.buf.as_mut() {
                            b.unshare();
                        }
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
            to_stream(
                shared,
                behind,
                &mut slot.resume_at,
                id,
                c,
                false,
                stats,
                backlogged,
            );
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
#[allow(clippy::too_many_arguments)]
fn to_stream(
    shared: &StreamQueue,
    behind: &mut bool,
    resume_at: &mut u16,
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
    if last || *behind {
        return;
    }
    let Some(why) = falls_behind(items.len(), items.iter().map(|(_, b)| b.as_ref())) else {
        return;
    };
    *behind = true;
    *resume_at = resume_point(items.len());
    shared.backlogged.set(true);
    stopped(why, stats);
    backlogged.push(id);
    for (_, waiting) in items.iter_mut() {
        if let Some(b) = waiting.as_mut() {
            b.unshare();
        }
    }
}

/// Why a receive's reader is too far behind for the receive to go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behind {
    /// [`BACKLOG`] completions wait.
    Backlog,
    /// The pieces that wait pin the receive's share of the pool
    /// ([`BufferPool::share`]).
    Share,
}

/// Whether the reader of a receive whose `len` completions wait in `waiting` (their
/// pieces, oldest first; `None` for one without bytes) is too far behind: [`BACKLOG`]
/// completions, or pieces that pin the receive's [share](BufferPool::share) of the
/// pool.
///
/// A piece pins its whole pool buffer until it is dropped, however few bytes it holds,
/// so the share counts buffers, not bytes: the distinct buffers the pieces come from.
/// Pieces of one buffer are cut one after the other and a buffer is filled again only
/// once all its pieces are gone, so one receive's pieces of one buffer follow each
/// other in its queue: a change of buffer from one piece to the next is a buffer more.
/// Pieces copied out of the pool (`pool_index` `None`) pin nothing. Called only with
/// something already waiting (a piece pushed into an empty queue pins one buffer, within
/// any share), so the hot path never scans.
#[inline(never)]
pub(crate) fn falls_behind<'a>(
    len: usize,
    waiting: impl Iterator<Item = Option<&'a PoolBuf>>,
) -> Option<Behind> {
    if len >= BACKLOG {
        return Some(Behind::Backlog);
    }
    let (mut pinned, mut share, mut last) = (0, usize::MAX, None);
    for b in waiting.flatten() {
        let Some(i) = b.pool_index() else {
            continue;
        };
        if last != Some(i) {
            last = Some(i);
            pinned += 1;
            share = b.pool_share();
        }
    }
    (pinned >= share).then_some(Behind::Share)
}

/// How many completions may still wait when a reader that fell behind with `waiting`
/// has caught up: half of them (at most `BACKLOG / 2`), so that a stop is followed by a
/// run of receives, not by one.
#[inline]
pub(crate) fn resume_point(waiting: usize) -> u16 {
    (waiting / 2).min(BACKLOG / 2) as u16
}

/// Counts a stop for `why`.
#[cold]
fn stopped(why: Behind, stats: &mut DriverStats) {
    stats.recv_backlogged += 1;
    if why == Behind::Share {
        stats.recv_share_stops += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece of up to `len` bytes, cut by an epoll-style receive.
    fn piece(pool: &BufferPool, len: usize) -> PoolBuf {
        pool.receive(|_, room| len.min(room) as i32).unwrap().0
    }

    #[test]
    fn the_share_counts_buffers_pinned_not_pieces_or_bytes() {
        let pool = BufferPool::new_list(16, 16, 64).unwrap();
        assert_eq!(pool.share(), 2, "an eighth of 16 buffers");
        // Three pieces of one buffer (the third fills it), then one of the next.
        let (a, b, c) = (piece(&pool, 10), piece(&pool, 10), piece(&pool, 64));
        let mut d = piece(&pool, 1);
        assert_eq!(a.pool_index(), c.pool_index());
        assert_ne!(c.pool_index(), d.pool_index());
        let one_buffer = [Some(&a), None, Some(&b), Some(&c)];
        assert_eq!(falls_behind(4, one_buffer.into_iter()), None);
        let two = [Some(&a), Some(&b), Some(&c), Some(&d)];
        assert_eq!(
            falls_behind(4, two.into_iter()),
            Some(Behind::Share),
            "one byte in a second buffer reaches the share"
        );
        d.unshare();
        let copied = [Some(&a), Some(&b), Some(&c), Some(&d)];
        assert_eq!(
            falls_behind(4, copied.into_iter()),
            None,
            "a piece copied out pins nothing"
        );
        assert_eq!(
            falls_behind(BACKLOG, std::iter::empty()),
            Some(Behind::Backlog)
        );
        // A pool too small to share out: only the backlog bounds.
        let tiny = BufferPool::new_list(2, 2, 8).unwrap();
        assert_eq!(tiny.share(), usize::MAX);
        let (e, f) = (piece(&tiny, 8), piece(&tiny, 8));
        assert_eq!(falls_behind(2, [Some(&e), Some(&f)].into_iter()), None);
    }
}
