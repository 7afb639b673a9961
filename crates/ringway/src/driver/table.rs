//! Where an operation's state lives while the kernel works on it, whatever the backend.
//!
//! The table is a slab of slots, reused: after warm-up an operation costs no heap
//! allocation. A slot holds what both backends need (the op, who to tell, the
//! completions not yet taken, the resources of an operation whose owner is gone); what
//! only one backend needs lives with that backend, indexed by the same slot index
//! (`uring::ScratchPages`, `epoll::EpollOpState`). Nothing in a slot is visible to the
//! kernel (that is the backends' scratch, which never moves), so the slots themselves
//! may move when the table grows: one flat vector, one bounds check per lookup.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::Waker;
use std::time::Duration;

use super::first_inline::FirstInline;
use super::held::HeldValue;
use super::op::{Nop, Op};
use super::{Completion, OpId};
use crate::buf::PoolBuf;

/// Who hears about an operation's completions.
pub(crate) enum Notify {
    /// Completions queue in the slot and this waker is woken (the executor's face).
    Waker(Option<Waker>),
    /// Completions go straight to the caller of `turn` with this token (the low-level
    /// face); the slot frees itself at the final completion.
    Token(u64),
}

/// Who holds a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotState {
    /// Nobody: on the free list.
    Free,
    /// The submitter: a future awaits it, or a token names it.
    Owned,
    /// The driver: its future was dropped; its resources (`held`) are kept until the
    /// final completion, then dropped.
    Orphaned,
}

/// One operation's backend-neutral state.
pub(crate) struct Slot {
    /// Bumped at each reuse, so a stale [`OpId`] cannot reach the next operation.
    pub gen: u32,
    pub state: SlotState,
    pub op: Op,
    pub notify: Notify,
    /// The final completion has been seen: no CQE or readiness will name this slot again.
    pub done: bool,
    /// `op.is_multishot()`, read once at insertion.
    pub multishot: bool,
    /// Executor face: the waker in `notify` belongs to this operation's task (it may be
    /// a previous user's until `register_waker`), so completions may wake it.
    pub armed: bool,
    /// Executor face, single-shot op: its completion, until the future takes it.
    pub single: Option<Completion>,
    /// Executor face, multishot op: completions not yet taken by the stream.
    pub queue: VecDeque<Completion>,
    /// What an orphaned operation keeps until its final completion.
    pub held: Option<HeldValue>,
    pub cancel_requested: bool,
    /// Fails with `ETIMEDOUT` if not complete by then (relative to submission).
    pub timeout: Option<Duration>,
    /// A multishot receive parked on an empty buffer pool (see `driver::starved`).
    pub starved: bool,
    /// Executor face, multishot: the consumer is `BACKLOG` completions behind, so the
    /// backend receives no more until it has caught up (see `Delivery::deliver`).
    pub backlogged: bool,
    /// Executor face, multishot receive: the queue its consumer (a `RecvStream`) shares
    /// with the driver; completions go there rather than to `queue` once it is set.
    pub watch: Option<QueueWatch>,
}

/// A multishot receive's completions, shared by the driver (which pushes) and its
/// stream (which pops, without borrowing the driver). Single-threaded: both live on
/// the core.
#[derive(Default)]
pub(crate) struct StreamQueue {
    /// `(result, buffer)` of each completion not yet taken.
    pub items: RefCell<FirstInline<(i32, Option<PoolBuf>)>>,
    /// The final completion is in `items` (or taken), or the slot is gone: once
    /// `items` is empty, only the driver can say what comes next.
    pub done: Cell<bool>,
    /// The receive is stopped until the stream has caught up (see `Slot::backlogged`):
    /// the stream tells the driver when it has.
    pub backlogged: Cell<bool>,
}

/// A [`StreamQueue`] as the slot and its stream hold it.
pub(crate) type QueueWatch = Rc<StreamQueue>;

/// How many completions a multishot receive may have waiting for its consumer before
/// it stops receiving. Each holds a pool buffer: without a bound, one connection whose
/// reader stops (an application that no longer polls its stream) would take every
/// buffer of the core's pool and stall every other connection. Past the bound the bytes
/// wait in the socket, where TCP's flow control slows the peer.
pub(crate) const BACKLOG: usize = 16;

impl Slot {
    fn vacant() -> Slot {
        Slot {
            gen: 0,
            state: SlotState::Free,
            op: Op::Nop(Nop),
            notify: Notify::Token(0),
            done: true,
            multishot: false,
            armed: false,
            single: None,
            queue: VecDeque::new(),
            held: None,
            cancel_requested: false,
            timeout: None,
            starved: false,
            backlogged: false,
            watch: None,
        }
    }
}

/// Slots per page of backend scratch that must not move (`uring::ScratchPages`).
pub(crate) const PAGE: usize = 64;

/// The slab of operation slots.
pub(crate) struct OpTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
}

impl OpTable {
    pub(crate) fn new() -> Self {
        OpTable {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// Operations in flight or not yet released.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Takes a free slot for `op`, whose completions go to the low-level face's sink
    /// with `token`.
    #[inline]
    pub(crate) fn insert_token(&mut self, op: Op, token: u64, timeout: Option<Duration>) -> OpId {
        let id = self.take(op, timeout);
        self.slots[id.index as usize].notify = Notify::Token(token);
        id
    }

    /// Takes a free slot for `op`, for the executor's face. Its waker is registered
    /// separately ([`register_waker`](Self::register_waker)), after the op has started:
    /// an op that completes while its own task is being polled must not wake it.
    #[inline]
    pub(crate) fn insert_for_waker(&mut self, op: Op, timeout: Option<Duration>) -> OpId {
        let id = self.take(op, timeout);
        let notify = &mut self.slots[id.index as usize].notify;
        if !matches!(notify, Notify::Waker(_)) {
            *notify = Notify::Waker(None);
        }
        id
    }

    #[inline]
    fn take(&mut self, op: Op, timeout: Option<Duration>) -> OpId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => self.grow(),
        };
        let slot = &mut self.slots[index as usize];
        debug_assert_eq!(slot.state, SlotState::Free);
        slot.gen = slot.gen.wrapping_add(1);
        slot.state = SlotState::Owned;
        slot.op = op;
        slot.multishot = op.is_multishot();
        slot.armed = false;
        slot.done = false;
        slot.cancel_requested = false;
        slot.timeout = timeout;
        slot.starved = false;
        slot.backlogged = false;
        debug_assert!(slot.queue.is_empty() && slot.single.is_none() && slot.held.is_none());
        debug_assert!(slot.watch.is_none());
        let gen = slot.gen;
        self.live += 1;
        OpId { index, gen }
    }

    /// Makes `waker` the one a live executor-face slot wakes. A slot keeps its last
    /// waker when freed, and the same task usually takes the same slot again (the free
    /// list is last-in first-out): then nothing is cloned.
    #[inline]
    pub(crate) fn register_waker(slot: &mut Slot, waker: &Waker) {
        slot.armed = true;
        match &mut slot.notify {
            Notify::Waker(Some(w)) if w.will_wake(waker) => {}
            notify => *notify = Notify::Waker(Some(waker.clone())),
        }
    }

    /// Takes a free slot for `op`, already orphaned: nobody awaits it, `held` keeps its
    /// resources and hears its result.
    #[inline]
    pub(crate) fn insert_detached(&mut self, op: Op, held: HeldValue) -> OpId {
        let id = self.take(op, None);
        let slot = &mut self.slots[id.index as usize];
        slot.state = SlotState::Orphaned;
        slot.held = Some(held);
        id
    }

    /// Adds a slot and returns its index.
    #[cold]
    fn grow(&mut self) -> u32 {
        self.slots.push(Slot::vacant());
        (self.slots.len() - 1) as u32
    }

    /// The slot of a live operation, or `None` if `id` is stale.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: OpId) -> Option<&mut Slot> {
        let slot = self.slots.get_mut(id.index as usize)?;
        (slot.gen == id.gen && slot.state != SlotState::Free).then_some(slot)
    }

    /// Frees a slot; its resources are dropped.
    #[inline]
    pub(crate) fn release(&mut self, id: OpId) {
        if let Some(slot) = self.get_mut(id) {
            slot.state = SlotState::Free;
            // A waker stays (see `register_waker`); it is not woken while the slot is
            // free, and no completion can reach a free slot.
            if slot.held.is_some()
                || slot.single.is_some()
                || !slot.queue.is_empty()
                || slot.watch.is_some()
            {
                slot.held = None;
                slot.single = None;
                slot.queue.clear();
                if let Some(w) = slot.watch.take() {
                    // Its stream must ask the driver from now on (and hear it is gone).
                    w.done.set(true);
                }
            }
            self.free.push(id.index);
            self.live -= 1;
        }
    }

    /// Frees the slot of `id`, which the caller has just found live and emptied (its
    /// `held`, `single` and `queue` taken): no second lookup.
    #[inline]
    pub(crate) fn release_emptied(&mut self, id: OpId) {
        let slot = &mut self.slots[id.index as usize];
        debug_assert!(slot.gen == id.gen && slot.state != SlotState::Free);
        debug_assert!(slot.held.is_none() && slot.single.is_none() && slot.queue.is_empty());
        debug_assert!(slot.watch.is_none());
        slot.state = SlotState::Free;
        self.free.push(id.index);
        self.live -= 1;
    }

    /// Ids of every live operation (used at shutdown).
    pub(crate) fn live_ids(&self) -> Vec<OpId> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.state != SlotState::Free)
            .map(|(i, s)| OpId {
                index: i as u32,
                gen: s.gen,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Completions are moved on their way to the task: keep them small (a
    /// sockaddr_storage inside cost ~120 ns per echoed message).
    #[test]
    fn completions_stay_small() {
        assert!(
            std::mem::size_of::<Completion>() <= 72,
            "Completion is {} bytes",
            std::mem::size_of::<Completion>()
        );
    }

    #[test]
    fn user_data_round_trips_and_slots_reuse_with_new_generations() {
        let id = OpId {
            index: 7,
            gen: 0xdead,
        };
        assert_eq!(OpId::from_user_data(id.to_user_data()), id);
        let mut t = OpTable::new();
        let a = t.insert_token(Op::Nop(Nop), 1, None);
        t.release(a);
        let b = t.insert_token(Op::Nop(Nop), 2, None);
        assert_eq!(a.index, b.index, "slot reused");
        assert_ne!(a.gen, b.gen, "with a new generation");
        assert!(
            t.get_mut(a).is_none(),
            "the stale id no longer reaches the slot"
        );
        assert!(t.get_mut(b).is_some());
        assert_eq!(t.live(), 1);
    }
}
