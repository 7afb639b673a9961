//! Graceful shutdown: a `Send` signal that reaches every core, and the per-core state
//! its connections watch and count themselves in.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use slab::Slab;

/// The cross-core half: a flag and the wakers of the cores' accept loops (one per core,
/// so the lock is never contended on a request's path).
#[derive(Debug, Default)]
pub(crate) struct Signal {
    down: AtomicBool,
    acceptors: Mutex<Vec<Waker>>,
}

impl Signal {
    /// Raises the flag and wakes every accept loop. Idempotent.
    pub(crate) fn raise(&self) {
        if self.down.swap(true, Ordering::SeqCst) {
            return;
        }
        let wakers = std::mem::take(&mut *self.acceptors.lock().unwrap_or_else(|e| e.into_inner()));
        for w in wakers {
            w.wake();
        }
    }

    pub(crate) fn is_raised(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// Ready once raised.
    pub(crate) fn poll_raised(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_raised() {
            return Poll::Ready(());
        }
        let mut w = self.acceptors.lock().unwrap_or_else(|e| e.into_inner());
        if !w.iter().any(|x| x.will_wake(cx.waker())) {
            w.push(cx.waker().clone());
        }
        drop(w);
        // Raised between the check and the registration: do not sleep through it.
        if self.is_raised() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// What one core's connections watch: `down` asks them to finish their request and
/// close; `abort` (at the drain deadline) to stop at once.
#[derive(Debug, Default)]
pub(crate) struct CoreDrain {
    down: Cell<bool>,
    abort: Cell<bool>,
    conns: RefCell<Slab<Option<Waker>>>,
    empty: RefCell<Option<Waker>>,
}

/// What the drain asks of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    Serve,
    Finish,
    Abort,
}

impl CoreDrain {
    fn wake_all(&self) {
        let wakers: Vec<Waker> = self
            .conns
            .borrow_mut()
            .iter_mut()
            .filter_map(|(_, w)| w.take())
            .collect();
        for w in wakers {
            w.wake();
        }
    }

    /// Asks every connection to finish (graceful shutdown).
    pub(crate) fn finish(&self) {
        self.down.set(true);
        self.wake_all();
    }

    /// Asks every connection still open to stop now.
    pub(crate) fn abort(&self) {
        self.down.set(true);
        self.abort.set(true);
        self.wake_all();
    }

    /// Counts a connection in; dropping the guard counts it out.
    pub(crate) fn enter(self: &Rc<Self>) -> ConnGuard {
        let key = self.conns.borrow_mut().insert(None);
        ConnGuard {
            drain: self.clone(),
            key,
        }
    }

    /// Open connections.
    pub(crate) fn live(&self) -> usize {
        self.conns.borrow().len()
    }

    /// Waits until every connection has gone.
    pub(crate) async fn emptied(&self) {
        poll_fn(|cx| {
            if self.live() == 0 {
                return Poll::Ready(());
            }
            *self.empty.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// One open connection, counted in its core's drain.
#[derive(Debug)]
pub(crate) struct ConnGuard {
    drain: Rc<CoreDrain>,
    key: usize,
}

impl ConnGuard {
    /// What the drain asks now; registers `cx` to hear when that changes.
    pub(crate) fn ask(&self, cx: &mut Context<'_>) -> Ask {
        if self.drain.abort.get() {
            return Ask::Abort;
        }
        // Registered while finishing too: the abort at the deadline must reach it.
        if let Some(slot) = self.drain.conns.borrow_mut().get_mut(self.key) {
            match slot {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *slot = Some(cx.waker().clone()),
            }
        }
        self.current()
    }

    /// What the drain asks now, for a task that registered with [`ask`](Self::ask)
    /// already (and whose waker has not changed since).
    pub(crate) fn current(&self) -> Ask {
        if self.drain.abort.get() {
            Ask::Abort
        } else if self.drain.down.get() {
            Ask::Finish
        } else {
            Ask::Serve
        }
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.drain.conns.borrow_mut().try_remove(self.key);
        if self.drain.live() == 0 {
            if let Some(w) = self.drain.empty.borrow_mut().take() {
                w.wake();
            }
        }
    }
}
