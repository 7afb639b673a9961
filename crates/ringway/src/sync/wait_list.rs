//! [`WaitList`]: the queue of tasks waiting on a core-local primitive, first come first
//! served, each removable in O(1) when its future is dropped.
//!
//! A doubly linked list threaded through a slab: a waiter's key is its node's index,
//! which its future keeps. No atomics and no allocation once the slab has grown: the
//! primitives that use it (`Semaphore`, `Notify`) live on one core.

use std::task::Waker;

use slab::Slab;

/// No node.
const NIL: usize = usize::MAX;

/// One waiter: its waker, what it asked for, and whether it has been served.
#[derive(Debug)]
pub(crate) struct Waiter<P> {
    pub(crate) waker: Option<Waker>,
    pub(crate) payload: P,
    /// Taken off the list and served (a semaphore's permits granted, a notification
    /// given); its future finds out at its next poll.
    pub(crate) served: bool,
    prev: usize,
    next: usize,
}

/// Waiters in arrival order. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct WaitList<P> {
    nodes: Slab<Waiter<P>>,
    head: usize,
    tail: usize,
}

impl<P> Default for WaitList<P> {
    fn default() -> Self {
        WaitList {
            nodes: Slab::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

impl<P> WaitList<P> {
    /// True if nobody waits (served waiters that have not looked yet do not count).
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// Queues a waiter at the back; returns its key.
    pub(crate) fn push(&mut self, payload: P, waker: Waker) -> usize {
        let key = self.nodes.insert(Waiter {
            waker: Some(waker),
            payload,
            served: false,
            prev: self.tail,
            next: NIL,
        });
        match self.tail {
            NIL => self.head = key,
            t => self.nodes[t].next = key,
        }
        self.tail = key;
        key
    }

    /// The first waiter in line, if any.
    pub(crate) fn front(&self) -> Option<&Waiter<P>> {
        (self.head != NIL).then(|| &self.nodes[self.head])
    }

    /// The key of the first waiter in line, if any.
    pub(crate) fn front_key(&self) -> Option<usize> {
        (self.head != NIL).then_some(self.head)
    }

    /// Serves the first waiter: takes it off the line (it stays in the slab, `served`,
    /// until its future removes it) and wakes it.
    pub(crate) fn serve_front(&mut self) -> bool {
        if self.head == NIL {
            return false;
        }
        let key = self.head;
        self.unlink(key);
        let w = &mut self.nodes[key];
        w.served = true;
        if let Some(waker) = w.waker.take() {
            waker.wake();
        }
        true
    }

    /// The waiter behind `key`.
    pub(crate) fn get_mut(&mut self, key: usize) -> &mut Waiter<P> {
        &mut self.nodes[key]
    }

    /// Removes the waiter behind `key` (served or not) and returns it.
    pub(crate) fn remove(&mut self, key: usize) -> Waiter<P> {
        if !self.nodes[key].served {
            self.unlink(key);
        }
        self.nodes.remove(key)
    }

    fn unlink(&mut self, key: usize) {
        let (prev, next) = (self.nodes[key].prev, self.nodes[key].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n].prev = prev,
        }
        let w = &mut self.nodes[key];
        w.prev = NIL;
        w.next = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    #[test]
    fn serves_in_order_and_removes_from_the_middle() {
        let mut l = WaitList::default();
        let keys: Vec<usize> = (0..4)
            .map(|i| l.push(i, Waker::from(std::sync::Arc::new(Noop))))
            .collect();
        l.remove(keys[1]);
        assert_eq!(l.front().unwrap().payload, 0);
        assert!(l.serve_front());
        assert_eq!(l.front().unwrap().payload, 2);
        assert!(l.get_mut(keys[0]).served);
        l.remove(keys[0]);
        l.remove(keys[3]);
        assert!(l.serve_front());
        assert!(l.is_empty());
        assert!(!l.serve_front());
        l.remove(keys[2]);
        assert_eq!(l.nodes.len(), 0);
    }
}
