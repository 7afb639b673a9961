//! A channel that keeps the latest value, for any number of receivers on any cores:
//! [`channel`].
//!
//! The value sits behind a `RwLock` (a receiver borrows it, as in tokio) with a version
//! number beside it; receivers compare versions without the lock. Receivers waiting
//! for a change register their wakers on a list that a send empties: configuration,
//! shutdown flags and other rarely changing state, not a message stream (use
//! [`mpsc`](super::mpsc) for those).

use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::task::{Poll, Waker};

use super::error::{RecvError, SendError};

/// A watch channel holding `init`.
///
/// # Examples
///
/// ```
/// use ringway::sync::watch;
///
/// #[ringway::main(threads = 2)]
/// async fn main() {
///     let (tx, mut rx) = watch::channel("starting");
///     let seen = ringway::Handle::current().spawn_on(1, move || async move {
///         rx.changed().await.unwrap();
///         *rx.borrow_and_update()
///     });
///     ringway::runtime::yield_now().await;
///     tx.send("running").unwrap();
///     assert_eq!(seen.await.unwrap(), "running");
/// }
/// ```
pub fn channel<T: Send + Sync>(init: T) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        value: RwLock::new(init),
        version: AtomicU64::new(0),
        waiters: Mutex::new(Vec::new()),
        sender_gone: AtomicBool::new(false),
        receivers: AtomicUsize::new(1),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared, seen: 0 },
    )
}

struct Shared<T> {
    value: RwLock<T>,
    /// Bumped by every send.
    version: AtomicU64,
    waiters: Mutex<Vec<Waker>>,
    sender_gone: AtomicBool,
    receivers: AtomicUsize,
}

impl<T> Shared<T> {
    fn wake_all(&self) {
        let wakers = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|e| e.into_inner()));
        for w in wakers {
            w.wake();
        }
    }
}

/// The sending side of a watch [`channel`].
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Replaces the value and tells every receiver.
    ///
    /// # Errors
    ///
    /// The value back if every receiver is gone.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.shared.receivers.load(Ordering::Acquire) == 0 {
            return Err(SendError(value));
        }
        self.send_replace(value);
        Ok(())
    }

    /// Replaces the value whether or not anyone listens; returns the old one.
    pub fn send_replace(&self, value: T) -> T {
        let old = {
            let mut v = self.shared.value.write().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *v, value)
        };
        self.shared.version.fetch_add(1, Ordering::AcqRel);
        self.shared.wake_all();
        old
    }

    /// Changes the value in place and tells every receiver.
    pub fn send_modify<F: FnOnce(&mut T)>(&self, modify: F) {
        {
            let mut v = self.shared.value.write().unwrap_or_else(|e| e.into_inner());
            modify(&mut v);
        }
        self.shared.version.fetch_add(1, Ordering::AcqRel);
        self.shared.wake_all();
    }

    /// The current value (holding it blocks senders: keep the borrow short).
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref(self.shared.value.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// A new receiver, which has seen the current value.
    pub fn subscribe(&self) -> Receiver<T> {
        self.shared.receivers.fetch_add(1, Ordering::AcqRel);
        Receiver {
            shared: self.shared.clone(),
            seen: self.shared.version.load(Ordering::Acquire),
        }
    }

    /// How many receivers there are.
    pub fn receiver_count(&self) -> usize {
        self.shared.receivers.load(Ordering::Acquire)
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.shared.sender_gone.store(true, Ordering::Release);
        self.shared.wake_all();
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("watch::Sender")
            .field("receivers", &self.receiver_count())
            .finish()
    }
}

/// A receiving side of a watch [`channel`]; clone it for more.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The version this receiver has seen.
    seen: u64,
}

impl<T> Receiver<T> {
    /// The current value, without marking it seen.
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref(self.shared.value.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The current value, marked seen.
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        let guard = self.shared.value.read().unwrap_or_else(|e| e.into_inner());
        self.seen = self.shared.version.load(Ordering::Acquire);
        Ref(guard)
    }

    /// True if a value came since this receiver last marked one seen.
    ///
    /// # Errors
    ///
    /// [`RecvError`] if the sender is gone.
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        if self.shared.sender_gone.load(Ordering::Acquire) {
            return Err(RecvError(()));
        }
        Ok(self.shared.version.load(Ordering::Acquire) != self.seen)
    }

    /// Waits for a value this receiver has not seen, and marks it seen.
    ///
    /// # Errors
    ///
    /// [`RecvError`] if the sender is gone (after a last change, that change is still
    /// reported first).
    pub async fn changed(&mut self) -> Result<(), RecvError> {
        std::future::poll_fn(|cx| {
            for registered in [false, true] {
                let now = self.shared.version.load(Ordering::Acquire);
                if now != self.seen {
                    self.seen = now;
                    return Poll::Ready(Ok(()));
                }
                if self.shared.sender_gone.load(Ordering::Acquire) {
                    return Poll::Ready(Err(RecvError(())));
                }
                if !registered {
                    self.shared
                        .waiters
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(cx.waker().clone());
                }
            }
            Poll::Pending
        })
        .await
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.shared.receivers.fetch_add(1, Ordering::AcqRel);
        Receiver {
            shared: self.shared.clone(),
            seen: self.seen,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.shared.receivers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("watch::Receiver")
            .field("seen", &self.seen)
            .finish()
    }
}

/// A borrow of a watch channel's value.
pub struct Ref<'a, T>(RwLockReadGuard<'a, T>);

impl<T> Deref for Ref<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}
