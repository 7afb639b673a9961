//! Graceful shutdown: a `Send` handle that tells every core's server to stop accepting,
//! finish what is in flight and close idle connections; and the per-core state the
//! connections watch (and count themselves in, so the core knows when it has drained).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use slab::Slab;

use crate::response::ResponseContext;

thread_local! {
    static REGISTRY: RefCell<HashMap<u64, Rc<CoreState>>> = RefCell::new(HashMap::new());
}

/// Per-core, per-server state: the shutdown flag (in the responses' context, which
/// closes connections once it is set) and the live connections.
pub(crate) struct CoreState {
    id: u64,
    context: ResponseContext,
    global: Arc<AtomicBool>,
    watchers: RefCell<Slab<Option<Waker>>>,
    drained: RefCell<Option<Waker>>,
}

impl CoreState {
    /// Creates and registers this core's state for server `id` (named `server`).
    pub(crate) fn register(
        id: u64,
        global: Arc<AtomicBool>,
        server: Option<&str>,
    ) -> Rc<CoreState> {
        let s = Rc::new(CoreState {
            id,
            context: ResponseContext::new(server),
            global,
            watchers: RefCell::new(Slab::new()),
            drained: RefCell::new(None),
        });
        REGISTRY.with(|r| r.borrow_mut().insert(id, s.clone()));
        if s.global.load(Ordering::SeqCst) {
            s.trigger();
        }
        s
    }

    /// Removes the registration.
    pub(crate) fn unregister(&self) {
        REGISTRY.with(|r| r.borrow_mut().remove(&self.id));
    }

    fn trigger(&self) {
        self.context.down.set(true);
        let wakers: Vec<Waker> = self
            .watchers
            .borrow_mut()
            .iter_mut()
            .filter_map(|(_, w)| w.take())
            .collect();
        for w in wakers {
            w.wake();
        }
    }

    /// A slot for one watcher (a connection or the accept loop).
    pub(crate) fn watch(self: &Rc<Self>) -> Watch {
        let key = self.watchers.borrow_mut().insert(None);
        Watch {
            state: self.clone(),
            key,
            registered: Cell::new(false),
        }
    }

    pub(crate) fn live(&self) -> usize {
        // The accept loop holds no slot while draining: every slot is a connection.
        self.watchers.borrow().len()
    }

    /// Waits until no connection is left.
    pub(crate) async fn drained(&self) {
        poll_fn(|cx| {
            if self.live() == 0 {
                Poll::Ready(())
            } else {
                *self.drained.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

/// One watcher's registration; dropping it counts the connection as gone.
pub(crate) struct Watch {
    state: Rc<CoreState>,
    key: usize,
    /// Whether a waker is registered. A watch is polled only by the task of the
    /// connection (or accept loop) that owns it, and any waker of that task wakes it:
    /// registering once is enough, and later polls need not look at the shared slots.
    registered: Cell<bool>,
}

impl Watch {
    /// Resolves once shutdown has begun.
    pub(crate) async fn down(&self) {
        poll_fn(|cx| self.poll_down(cx)).await
    }

    /// Poll form of [`down`](Self::down).
    #[inline]
    pub(crate) fn poll_down(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.state.context.down.get() {
            return Poll::Ready(());
        }
        if self.registered.get() {
            // Only `trigger` takes the waker from the slot, after setting the flag
            // looked at above.
            return Poll::Pending;
        }
        self.register(cx)
    }

    /// Leaves the task's waker for `trigger` (once per watch).
    #[inline(never)]
    fn register(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.registered.set(true);
        let mut w = self.state.watchers.borrow_mut();
        if let Some(slot) = w.get_mut(self.key) {
            match slot {
                Some(old) if old.will_wake(cx.waker()) => {}
                _ => *slot = Some(cx.waker().clone()),
            }
        }
        Poll::Pending
    }

    pub(crate) fn is_down(&self) -> bool {
        self.state.context.down.get()
    }

    /// What this core's responses share (the server's name, the shutdown flag).
    pub(crate) fn response_context(&self) -> &ResponseContext {
        &self.state.context
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.state.watchers.borrow_mut().try_remove(self.key);
        if self.state.live() == 0 {
            if let Some(w) = self.state.drained.borrow_mut().take() {
                w.wake();
            }
        }
    }
}

/// Starts the graceful shutdown of a running server from any thread.
#[derive(Clone)]
pub struct ShutdownHandle {
    pub(crate) id: u64,
    pub(crate) global: Arc<AtomicBool>,
    pub(crate) rt: ringway::Handle,
}

impl ShutdownHandle {
    /// Stops accepting on every core, lets in-flight requests finish (their responses
    /// carry `Connection: close`), closes idle connections. Idempotent.
    pub fn shutdown(&self) {
        if self.global.swap(true, Ordering::SeqCst) {
            return;
        }
        for core in 0..self.rt.cores() {
            let id = self.id;
            self.rt
                .spawn_on(core, move || async move {
                    let s = REGISTRY.with(|r| r.borrow().get(&id).cloned());
                    if let Some(s) = s {
                        s.trigger();
                    }
                })
                .detach();
        }
    }

    /// Whether shutdown has been asked for.
    pub fn is_shutdown(&self) -> bool {
        self.global.load(Ordering::SeqCst)
    }
}

impl std::fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShutdownHandle")
            .field("id", &self.id)
            .field("down", &self.is_shutdown())
            .finish()
    }
}
