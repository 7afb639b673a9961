//! Where operations' state lives while the kernel works on them, whatever the backend.
//!
//! The table is a slab of [`Slot`]s, reused: after warm-up an operation costs no heap
//! allocation. A slot holds what both backends need (the op, its owner and what waits
//! for it, where it stands: see `slot.rs`); what only one backend needs lives with that
//! backend, indexed by the same slot index (`uring::ScratchPages`, the epoll backend's
//! `EpollOpState`s). Nothing in a slot is visible to the kernel (that is the backends'
//! scratch, which never moves), so the slots themselves may move when the table grows:
//! one flat vector, one bounds check per lookup.

use std::time::Duration;

use super::completion::OpId;
use super::held::HeldValue;
use super::op::Op;
use super::slot::{Flight, Owner, Slot};

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
        self.take(op, timeout, Owner::Token(token))
    }

    /// Takes a free slot for `op`, for the executor's face. Its waker is registered
    /// separately ([`Slot::register_waker`]), after the op has started: an op that
    /// completes while its own task is being polled must not wake it.
    #[inline]
    pub(crate) fn insert_for_waker(&mut self, op: Op, timeout: Option<Duration>) -> OpId {
        let owner = if op.is_multishot() {
            Owner::Stream {
                armed: false,
                shared: None,
                backlogged: false,
            }
        } else {
            Owner::Single {
                armed: false,
                completion: None,
            }
        };
        self.take(op, timeout, owner)
    }

    /// Takes a free slot for `op`, already orphaned: nobody awaits it, `held` keeps its
    /// resources and hears its result.
    #[inline]
    pub(crate) fn insert_detached(&mut self, op: Op, held: HeldValue) -> OpId {
        self.take(op, None, Owner::Orphaned(Some(held)))
    }

    #[inline]
    fn take(&mut self, op: Op, timeout: Option<Duration>, owner: Owner) -> OpId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => self.grow(),
        };
        let slot = &mut self.slots[index as usize];
        debug_assert!(!slot.is_live() && slot.queue.is_empty());
        slot.gen = slot.gen.wrapping_add(1);
        slot.flight = Flight::Running;
        slot.op = op;
        slot.timeout = timeout;
        slot.owner = owner;
        let gen = slot.gen;
        self.live += 1;
        OpId { index, gen }
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
        (slot.gen == id.gen && slot.is_live()).then_some(slot)
    }

    /// Frees a slot; what its owner still held is dropped (pool buffers go back,
    /// completions are dropped), and a stream that took its queue over hears the slot is
    /// gone.
    #[inline]
    pub(crate) fn release(&mut self, id: OpId) {
        let Some(slot) = self.get_mut(id) else {
            return;
        };
        // The waker stays (see `Slot::waker`); it is not woken while the slot is free,
        // and no completion can reach a free slot.
        let owner = std::mem::replace(&mut slot.owner, Owner::Free);
        slot.flight = Flight::Done;
        if let Owner::Stream {
            shared: Some(w), ..
        } = &owner
        {
            // Its stream must ask the driver from now on (and hear it is gone).
            w.done.set(true);
        }
        slot.queue.clear();
        drop(owner);
        self.free.push(id.index);
        self.live -= 1;
    }

    /// Frees the slot of `id`, which the caller has just found live and emptied (an
    /// orphan whose held value it has finished): no second lookup, nothing to drop.
    #[inline]
    pub(crate) fn release_emptied(&mut self, id: OpId) {
        let slot = &mut self.slots[id.index as usize];
        debug_assert!(slot.gen == id.gen && slot.is_live() && slot.queue.is_empty());
        debug_assert!(matches!(slot.owner, Owner::Orphaned(None)));
        slot.owner = Owner::Free;
        slot.flight = Flight::Done;
        self.free.push(id.index);
        self.live -= 1;
    }

    /// Every live operation, with its id (the pool-pressure rule's sweep: cold).
    pub(crate) fn live_mut(&mut self) -> impl Iterator<Item = (OpId, &mut Slot)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter(|(_, s)| s.is_live())
            .map(|(i, s)| {
                let id = OpId {
                    index: i as u32,
                    gen: s.gen,
                };
                (id, s)
            })
    }

    /// Ids of every live operation (used at shutdown).
    pub(crate) fn live_ids(&self) -> Vec<OpId> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_live())
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
    use crate::driver::completion::Completion;
    use crate::driver::op::Nop;

    /// Completions are moved on their way to the task: keep them small (a
    /// sockaddr_storage inside cost ~120 ns per echoed message).
    #[test]
    fn completions_and_slots_stay_small() {
        assert!(
            std::mem::size_of::<Completion>() <= 72,
            "Completion is {} bytes",
            std::mem::size_of::<Completion>()
        );
        assert!(
            std::mem::size_of::<Slot>() <= 192,
            "Slot is {} bytes",
            std::mem::size_of::<Slot>()
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
