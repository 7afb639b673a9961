//! A one-value channel that crosses cores: [`channel`].
//!
//! One atomic state word and one `AtomicWaker`; the value is written before the state
//! says so, and exactly one side ends up owning it (the receiver, or the sender again
//! if the receiver left first).

use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;

use super::error::RecvError;

const SENT: u8 = 1;
const TX_GONE: u8 = 2;
const RX_GONE: u8 = 4;

/// A channel for one value, from any core to any core.
///
/// # Examples
///
/// ```
/// use ringway::sync::oneshot;
///
/// #[ringway::main(threads = 2)]
/// async fn main() {
///     let (tx, rx) = oneshot::channel();
///     ringway::Handle::current()
///         .spawn_on(1, move || async move {
///             let _ = tx.send(ringway::runtime::current_core());
///         })
///         .detach();
///     assert_eq!(rx.await.unwrap(), 1);
///
///     let (tx, rx) = oneshot::channel::<u32>();
///     drop(tx);
///     assert!(rx.await.is_err()); // the sender went without sending
/// }
/// ```
pub fn channel<T: Send>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        state: AtomicU8::new(0),
        value: UnsafeCell::new(None),
        rx_waker: AtomicWaker::new(),
    });
    (
        Sender {
            inner: Some(inner.clone()),
        },
        Receiver { inner: Some(inner) },
    )
}

struct Inner<T> {
    state: AtomicU8,
    /// Written by the sender before it sets `SENT`; read by whoever owns it after.
    value: UnsafeCell<Option<T>>,
    rx_waker: AtomicWaker,
}

// SAFETY: the value is moved between threads (`T: Send`) and touched by one side at a
// time: the sender before it publishes `SENT`, then the receiver, or the sender again
// if `RX_GONE` was set before `SENT` (the receiver never reads it then).
unsafe impl<T: Send> Sync for Inner<T> {}

/// The sending side of a [`channel`].
pub struct Sender<T> {
    inner: Option<Arc<Inner<T>>>,
}

impl<T> Sender<T> {
    /// Sends the value.
    ///
    /// # Errors
    ///
    /// The value back if the receiver is gone.
    pub fn send(mut self, value: T) -> Result<(), T> {
        let inner = self.inner.take().expect("a sender sends once");
        // SAFETY: before `SENT` only the sender touches the value.
        unsafe { *inner.value.get() = Some(value) };
        let prev = inner.state.fetch_or(SENT, Ordering::AcqRel);
        if prev & RX_GONE != 0 {
            // The receiver left before the value was published: it is ours again.
            // SAFETY: the receiver never reads the value once it has set RX_GONE
            // without seeing SENT.
            let v = unsafe { (*inner.value.get()).take() };
            return Err(v.expect("just written"));
        }
        inner.rx_waker.wake();
        Ok(())
    }

    /// True once the receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.inner
            .as_ref()
            .map_or(true, |i| i.state.load(Ordering::Acquire) & RX_GONE != 0)
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.state.fetch_or(TX_GONE, Ordering::AcqRel);
            inner.rx_waker.wake();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Sender")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The receiving side of a [`channel`]: a future of the value, or [`RecvError`] if the
/// sender was dropped without sending.
pub struct Receiver<T> {
    inner: Option<Arc<Inner<T>>>,
}

impl<T> Receiver<T> {
    /// The value if it has come, without waiting.
    ///
    /// # Errors
    ///
    /// `Err(None)`: not yet; `Err(Some(RecvError))`: the sender is gone without
    /// sending.
    pub fn try_recv(&mut self) -> Result<T, Option<RecvError>> {
        let inner = self.inner.as_ref().ok_or(Some(RecvError(())))?;
        let state = inner.state.load(Ordering::Acquire);
        if state & SENT != 0 {
            // SAFETY: `SENT` was published after the write, and the sender no longer
            // touches the value.
            let v = unsafe { (*inner.value.get()).take() };
            self.inner = None;
            return v.ok_or(Some(RecvError(())));
        }
        if state & TX_GONE != 0 {
            return Err(Some(RecvError(())));
        }
        Err(None)
    }

    /// Refuses the value: a later `send` fails and gives it back.
    pub fn close(&mut self) {
        if let Some(inner) = self.inner.take() {
            let prev = inner.state.fetch_or(RX_GONE, Ordering::AcqRel);
            if prev & SENT != 0 {
                // SAFETY: published and never read: dropped here, by its owner.
                drop(unsafe { (*inner.value.get()).take() });
            }
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.try_recv() {
            Ok(v) => return Poll::Ready(Ok(v)),
            Err(Some(e)) => return Poll::Ready(Err(e)),
            Err(None) => {}
        }
        if let Some(inner) = &self.inner {
            inner.rx_waker.register(cx.waker());
        }
        match self.try_recv() {
            Ok(v) => Poll::Ready(Ok(v)),
            Err(Some(e)) => Poll::Ready(Err(e)),
            Err(None) => Poll::Pending,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Receiver").finish_non_exhaustive()
    }
}
