//! Where an operation's state lives while the kernel works on it, whatever the backend.
//!
//! The table is a slab of slots in fixed-size pages that never move, and slots are
//! reused: after warm-up an operation costs no heap allocation. A slot holds what both
//! backends need (the op, who to tell, the completions not yet taken, the resources of
//! an operation whose owner is gone); what only one backend needs lives with that
//! backend, indexed by the same slot index (`uring::ScratchPages`, `epoll::EpollOpState`).

use std::any::Any;
use std::collections::VecDeque;
use std::task::Waker;
use std::time::Duration;

use super::op::{Nop, Op};
use super::{Completion, OpId};

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
    /// Completions not yet taken by the awaiting future.
    pub queue: VecDeque<Completion>,
    /// Resources (buffers) of an orphaned operation, dropped at the final completion.
    pub held: Option<Box<dyn Any>>,
    pub cancel_requested: bool,
    /// Fails with `ETIMEDOUT` if not complete by then (relative to submission).
    pub timeout: Option<Duration>,
    /// A multishot receive parked on an empty buffer pool (see `driver::starved`).
    pub starved: bool,
}

impl Slot {
    fn vacant() -> Slot {
        Slot {
            gen: 0,
            state: SlotState::Free,
            op: Op::Nop(Nop),
            notify: Notify::Token(0),
            done: true,
            queue: VecDeque::new(),
            held: None,
            cancel_requested: false,
            timeout: None,
            starved: false,
        }
    }
}

/// Slots per page.
pub(crate) const PAGE: usize = 64;

/// Stable-address slab of operation slots.
pub(crate) struct OpTable {
    pages: Vec<Box<[Slot]>>,
    free: Vec<u32>,
    live: usize,
}

impl OpTable {
    pub fn new() -> Self {
        OpTable {
            pages: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// Operations in flight or not yet released.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Takes a free slot for `op`.
    pub fn insert(&mut self, op: Op, notify: Notify, timeout: Option<Duration>) -> OpId {
        if self.free.is_empty() {
            self.grow();
        }
        let index = self.free.pop().expect("grown");
        let slot = self.slot_mut(index);
        debug_assert_eq!(slot.state, SlotState::Free);
        slot.gen = slot.gen.wrapping_add(1);
        slot.state = SlotState::Owned;
        slot.op = op;
        slot.notify = notify;
        slot.done = false;
        slot.cancel_requested = false;
        slot.timeout = timeout;
        slot.starved = false;
        debug_assert!(slot.queue.is_empty() && slot.held.is_none());
        let gen = slot.gen;
        self.live += 1;
        OpId { index, gen }
    }

    fn grow(&mut self) {
        let base = (self.pages.len() * PAGE) as u32;
        let page: Box<[Slot]> = (0..PAGE).map(|_| Slot::vacant()).collect();
        self.pages.push(page);
        // Hand out low indices first.
        self.free.extend((base..base + PAGE as u32).rev());
    }

    fn slot_mut(&mut self, index: u32) -> &mut Slot {
        let i = index as usize;
        &mut self.pages[i / PAGE][i % PAGE]
    }

    /// The slot of a live operation, or `None` if `id` is stale.
    pub fn get_mut(&mut self, id: OpId) -> Option<&mut Slot> {
        let i = id.index as usize;
        let slot = self.pages.get_mut(i / PAGE)?.get_mut(i % PAGE)?;
        (slot.gen == id.gen && slot.state != SlotState::Free).then_some(slot)
    }

    /// Frees a slot; its resources are dropped.
    pub fn release(&mut self, id: OpId) {
        if let Some(slot) = self.get_mut(id) {
            slot.state = SlotState::Free;
            slot.held = None;
            slot.queue.clear();
            slot.notify = Notify::Token(0);
            self.free.push(id.index);
            self.live -= 1;
        }
    }

    /// Ids of every live operation (used at shutdown).
    pub fn live_ids(&self) -> Vec<OpId> {
        let mut ids = Vec::new();
        for (p, page) in self.pages.iter().enumerate() {
            for (i, slot) in page.iter().enumerate() {
                if slot.state != SlotState::Free {
                    ids.push(OpId {
                        index: (p * PAGE + i) as u32,
                        gen: slot.gen,
                    });
                }
            }
        }
        ids
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
        let a = t.insert(Op::Nop(Nop), Notify::Token(1), None);
        t.release(a);
        let b = t.insert(Op::Nop(Nop), Notify::Token(2), None);
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
