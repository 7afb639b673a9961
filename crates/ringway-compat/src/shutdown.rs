//! [`ShutdownHandle`]: starts a [`Server`](crate::Server)'s graceful shutdown, and tells
//! the application that it started ([`ShutdownHandle::stopping`]), so that what the
//! drain cannot finish on its own (a WebSocket, a long poll, a stream of events) can
//! say goodbye in its own protocol before the drain deadline cuts it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use ringway::sync::drain::Signal;
use slab::Slab;

/// Starts the graceful shutdown of the [`Server`](crate::Server)s that use it, from any
/// thread, and tells whoever awaits [`stopping`](Self::stopping) that it started.
///
/// Make one before the server (`ShutdownHandle::new()`, put in
/// [`ServeOptions::shutdown`](crate::ServeOptions::shutdown)) when the service needs it,
/// e.g. to close its WebSockets with `1001 Going Away`; or take the server's own with
/// [`Server::shutdown_handle`](crate::Server::shutdown_handle). Clones share the one
/// shutdown.
///
/// ```
/// use ringway_compat::ShutdownHandle;
///
/// let stop = ShutdownHandle::new();
/// let stopping = stop.stopping(); // e.g. in a WebSocket task, selected with its reads
/// assert!(!stop.is_shutdown());
/// stop.shutdown();
/// ringway::start(stopping); // ready at once: the shutdown started
/// ```
#[derive(Clone, Default)]
pub struct ShutdownHandle {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// What every core's accept loop watches.
    signal: Signal,
    /// The application's [`Stopping`] futures waiting for it, by key.
    waiting: Mutex<Slab<Waker>>,
}

impl fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShutdownHandle")
            .field("shutdown", &self.is_shutdown())
            .finish_non_exhaustive()
    }
}

impl ShutdownHandle {
    /// A handle for a server not made yet (see [`ServeOptions::shutdown`](crate::ServeOptions::shutdown)).
    pub fn new() -> ShutdownHandle {
        ShutdownHandle::default()
    }

    /// Stops accepting on every core, wakes every [`stopping`](Self::stopping), lets
    /// each connection finish the request it is serving (hyper answers it, then
    /// closes), closes idle connections, waits for upgraded connections (WebSockets) to
    /// end, and after [`ServeOptions::drain_timeout`](crate::ServeOptions::drain_timeout)
    /// closes whatever is left. Idempotent.
    pub fn shutdown(&self) {
        self.inner.signal.raise();
        let waiting = std::mem::take(&mut *self.waiting());
        for (_, w) in waiting {
            w.wake();
        }
    }

    /// Whether shutdown was asked for.
    pub fn is_shutdown(&self) -> bool {
        self.inner.signal.is_raised()
    }

    /// A future that completes once the shutdown has started (at once if it has): what
    /// a handler or a WebSocket task selects on to end its work in its own protocol
    /// (a close frame, a last event) while the drain waits for it. `Send`, `Unpin`, and
    /// usable on any core.
    pub fn stopping(&self) -> Stopping {
        Stopping {
            inner: self.inner.clone(),
            key: None,
        }
    }

    pub(crate) fn signal(&self) -> &Signal {
        &self.inner.signal
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Slab<Waker>> {
        self.inner.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Completes once the shutdown of a [`ShutdownHandle`] has started; see
/// [`ShutdownHandle::stopping`]. Dropping it before then forgets its waker.
#[must_use = "futures do nothing unless polled"]
pub struct Stopping {
    inner: Arc<Inner>,
    /// Where this future's waker waits in `inner.waiting`, once it has waited.
    key: Option<usize>,
}

impl fmt::Debug for Stopping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stopping")
            .field("shutdown", &self.inner.signal.is_raised())
            .finish_non_exhaustive()
    }
}

impl Future for Stopping {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.inner.signal.is_raised() {
            this.forget();
            return Poll::Ready(());
        }
        let mut waiting = this.inner.waiting.lock().unwrap_or_else(|e| e.into_inner());
        match this.key.and_then(|k| waiting.get_mut(k)) {
            Some(w) if w.will_wake(cx.waker()) => {}
            Some(w) => *w = cx.waker().clone(),
            // The first wait, or `shutdown` took the waker (then the flag is up).
            None => this.key = Some(waiting.insert(cx.waker().clone())),
        }
        drop(waiting);
        // `shutdown` raises the flag before it takes the wakers: raised now means this
        // waker may have come after they were taken, so do not sleep on it.
        if this.inner.signal.is_raised() {
            this.forget();
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Stopping {
    /// Removes this future's waker, if `shutdown` has not taken it.
    fn forget(&mut self) {
        if let Some(key) = self.key.take() {
            let mut waiting = self.inner.waiting.lock().unwrap_or_else(|e| e.into_inner());
            // Once the flag is up, `shutdown` has taken (or is taking) every waker, and
            // the key may name another future's slot: leave it.
            if !self.inner.signal.is_raised() {
                waiting.try_remove(key);
            }
        }
    }
}

impl Drop for Stopping {
    fn drop(&mut self) {
        self.forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waiting(stop: &ShutdownHandle) -> usize {
        stop.waiting().len()
    }

    #[test]
    fn a_dropped_stopping_leaves_no_waker_and_shutdown_wakes_the_others_once() {
        let woken = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let stop = ShutdownHandle::new();
        let mut kept: Vec<Stopping> = (0..3).map(|_| stop.stopping()).collect();
        for s in &mut kept {
            assert!(Pin::new(s).poll(&mut cx).is_pending());
        }
        // Polled again with the same waker: no second slot.
        assert!(Pin::new(&mut kept[0]).poll(&mut cx).is_pending());
        let mut dropped = stop.stopping();
        assert!(Pin::new(&mut dropped).poll(&mut cx).is_pending());
        assert_eq!(waiting(&stop), 4);
        drop(dropped);
        assert_eq!(waiting(&stop), 3, "a dropped future forgets its waker");
        // From another thread, as a signal handler's would.
        let remote = stop.clone();
        std::thread::spawn(move || {
            remote.shutdown();
            remote.shutdown();
        })
        .join()
        .unwrap();
        assert_eq!(woken.0.load(Ordering::SeqCst), 3, "each waiter woken once");
        assert_eq!(waiting(&stop), 0);
        for s in &mut kept {
            assert!(Pin::new(s).poll(&mut cx).is_ready());
        }
        assert!(stop.is_shutdown());
        // After the shutdown, a new one is ready at once and registers nothing.
        assert!(Pin::new(&mut stop.stopping()).poll(&mut cx).is_ready());
        assert_eq!(waiting(&stop), 0);
    }
}
