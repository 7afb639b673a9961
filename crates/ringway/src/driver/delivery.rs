//! Routing a completion to whoever owns its operation.

use super::table::{Notify, OpTable, SlotState};
use super::{Completion, DriverStats, OpId};
use crate::buf::BufferPool;

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
                drop(c);
                if last {
                    self.table.release(id);
                }
            }
            SlotState::Owned => {
                if last {
                    slot.done = true;
                }
                match &mut slot.notify {
                    Notify::Waker(w) => {
                        if slot.multishot {
                            slot.queue.push_back(c);
                        } else {
                            slot.single = Some(c);
                        }
                        // Woken in place and kept registered: a task's waker is the same
                        // on every poll, so the next registration costs nothing.
                        if let (true, Some(w)) = (slot.armed, w) {
                            w.wake_by_ref();
                        }
                    }
                    Notify::Token(t) => {
                        let token = *t;
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
