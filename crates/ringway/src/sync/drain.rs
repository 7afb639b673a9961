//! Graceful drain, written once for the servers on ringway (ringway-compat's `Server`
//! and ringway-http's): a `Send` [`Signal`] that reaches every
//! core's accept loop, and per core a [`CoreDrain`] that the core's connections watch and
//! count themselves in ([`ConnGuard`]), so the core knows when it has drained.
//!
//! The order, on each core: the accept loop sees the signal, stops accepting, asks its
//! connections to finish ([`CoreDrain::finish`]: each answers what it has read and
//! closes), waits until they are gone ([`CoreDrain::emptied`]) within its drain deadline,
//! and past it may ask the rest to stop at once ([`CoreDrain::abort`]).

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
pub struct Signal {
    down: AtomicBool,
    acceptors: Mutex<Vec<Waker>>,
}

impl Signal {
    /// Raises the flag and wakes every accept loop. Idempotent.
    pub fn raise(&self) {
        if self.down.swap(true, Ordering::SeqCst) {
            return;
        }
        let wakers = std::mem::take(&mut *self.acceptors.lock().unwrap_or_else(|e| e.into_inner()));
        for w in wakers {
            w.wake();
        }
    }

    /// Whether the flag is raised.
    pub fn is_raised(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// Ready once raised.
    pub fn poll_raised(&self, cx: &mut Context<'_>) -> Poll<()> {
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

/// What one core's connections watch: `finish` asks them to answer what they have read
/// and close; `abort` (at the drain deadline) to stop at once. `shared` is what the
/// core's connections share besides (ringway-http: its responses' context), reached
/// through their guards without a pointer more per connection.
#[derive(Debug, Default)]
pub struct CoreDrain<X = ()> {
    down: Cell<bool>,
    abort: Cell<bool>,
    conns: RefCell<Slab<Option<Waker>>>,
    empty: RefCell<Option<Waker>>,
    /// What the core's connections share besides the drain.
    pub shared: X,
}

/// What the drain asks of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Serve on.
    Serve,
    /// Answer what has been read, then close.
    Finish,
    /// Stop now.
    Abort,
}

impl<X> CoreDrain<X> {
    /// A drain with `shared` for its connections.
    pub fn new(shared: X) -> Self {
        CoreDrain {
            down: Cell::new(false),
            abort: Cell::new(false),
            conns: RefCell::new(Slab::new()),
            empty: RefCell::new(None),
            shared,
        }
    }

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
    pub fn finish(&self) {
        self.down.set(true);
        self.wake_all();
    }

    /// Asks every connection still open to stop now.
    pub fn abort(&self) {
        self.down.set(true);
        self.abort.set(true);
        self.wake_all();
    }

    /// Whether [`finish`](Self::finish) (or [`abort`](Self::abort)) was asked.
    #[inline]
    pub fn is_finishing(&self) -> bool {
        self.down.get()
    }

    /// Counts a connection in; dropping the guard counts it out.
    pub fn enter(self: &Rc<Self>) -> ConnGuard<X> {
        let key = self.conns.borrow_mut().insert(None);
        ConnGuard {
            drain: self.clone(),
            key,
            registered: Cell::new(false),
        }
    }

    /// Open connections.
    pub fn live(&self) -> usize {
        self.conns.borrow().len()
    }

    /// Waits until every connection has gone.
    pub async fn emptied(&self) {
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
pub struct ConnGuard<X = ()> {
    drain: Rc<CoreDrain<X>>,
    key: usize,
    /// Whether [`poll_ask`](Self::poll_ask) left a waker (see there).
    registered: Cell<bool>,
}

impl<X> ConnGuard<X> {
    /// What the drain asks now; registers `cx` to hear when that changes.
    pub fn ask(&self, cx: &mut Context<'_>) -> Ask {
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

    /// [`ask`](Self::ask) for a guard polled only by its own connection's task, whose
    /// waker does not change: the waker is left once, and while the drain asks
    /// nothing new (only it takes the waker, after changing what it asks) later polls
    /// read a flag and touch nothing shared.
    #[inline]
    pub fn poll_ask(&self, cx: &mut Context<'_>) -> Ask {
        let now = self.current();
        if now == Ask::Serve && self.registered.get() {
            return now;
        }
        self.register(cx)
    }

    #[inline(never)]
    fn register(&self, cx: &mut Context<'_>) -> Ask {
        self.registered.set(true);
        self.ask(cx)
    }

    /// What the drain asks now, for a task that registered with [`ask`](Self::ask)
    /// already (and whose waker has not changed since).
    #[inline]
    pub fn current(&self) -> Ask {
        if self.drain.abort.get() {
            Ask::Abort
        } else if self.drain.down.get() {
            Ask::Finish
        } else {
            Ask::Serve
        }
    }

    /// The core's drain.
    #[inline]
    pub fn drain(&self) -> &CoreDrain<X> {
        &self.drain
    }
}

impl<X> Drop for ConnGuard<X> {
    fn drop(&mut self) {
        self.drain.conns.borrow_mut().try_remove(self.key);
        if self.drain.live() == 0 {
            if let Some(w) = self.drain.empty.borrow_mut().take() {
                w.wake();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(std::sync::atomic::AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_guard_hears_finish_then_abort_and_counts_itself_out() {
        let woken = Arc::new(Count(Default::default()));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let drain = Rc::new(CoreDrain::new(7u8));
        let guard = drain.enter();
        assert_eq!(drain.live(), 1);
        assert_eq!(guard.drain().shared, 7);
        assert_eq!(guard.poll_ask(&mut cx), Ask::Serve);
        assert_eq!(guard.poll_ask(&mut cx), Ask::Serve);
        drain.finish();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "woken once");
        assert!(drain.is_finishing());
        // Registered again while finishing: the abort reaches it.
        assert_eq!(guard.poll_ask(&mut cx), Ask::Finish);
        drain.abort();
        assert_eq!(woken.0.load(Ordering::SeqCst), 2);
        assert_eq!(guard.poll_ask(&mut cx), Ask::Abort);
        drop(guard);
        assert_eq!(drain.live(), 0);
    }

    #[test]
    fn the_signal_wakes_an_accept_loop_once() {
        let woken = Arc::new(Count(Default::default()));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let s = Signal::default();
        assert!(s.poll_raised(&mut cx).is_pending());
        assert!(s.poll_raised(&mut cx).is_pending());
        s.raise();
        s.raise();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert!(s.is_raised() && s.poll_raised(&mut cx).is_ready());
    }
}
