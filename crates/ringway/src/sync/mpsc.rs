//! Multi-producer, single-consumer channels that cross cores: [`channel`] (bounded)
//! and [`unbounded_channel`].
//!
//! The queue is crossbeam's lock-free `SegQueue`; the receiver's waker sits in an
//! `AtomicWaker`. A send is a push and, if the receiver waits, one wake of its task:
//! from another core that wake goes through the receiving core's own wake path (its
//! inject queue, and its eventfd only if it sleeps), so a busy receiving core takes
//! messages without a syscall. No lock is taken by a send or a receive; a bounded
//! channel's full senders wait on a list that only the full case touches.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use atomic_waker::AtomicWaker;
use crossbeam_queue::SegQueue;

use super::error::{SendError, TryRecvError, TrySendError};

/// A channel that holds at most `capacity` messages: [`Sender::send`] waits for room.
/// The receiver may be on another core than the senders (all are `Send`).
///
/// # Panics
///
/// If `capacity` is 0.
///
/// # Examples
///
/// ```
/// use ringway::sync::mpsc;
///
/// #[ringway::main(threads = 2)]
/// async fn main() {
///     let (tx, mut rx) = mpsc::channel(16);
///     // The producer runs on core 1; the receiver stays on core 0.
///     ringway::Handle::current()
///         .spawn_on(1, move || async move {
///             for i in 0..100u32 {
///                 tx.send(i).await.unwrap();
///             }
///         })
///         .detach();
///     let mut sum = 0;
///     while let Some(i) = rx.recv().await {
///         sum += i;
///     }
///     assert_eq!(sum, 4950); // `None` came once the sender was dropped
/// }
/// ```
pub fn channel<T: Send>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(capacity > 0, "mpsc::channel: capacity must be at least 1");
    new(Some(capacity))
}

/// A channel without a bound: [`UnboundedSender::send`] never waits.
pub fn unbounded_channel<T: Send>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    let (tx, rx) = new(None);
    (UnboundedSender(tx), UnboundedReceiver(rx))
}

fn new<T>(capacity: Option<usize>) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan {
        queue: SegQueue::new(),
        rx_waker: AtomicWaker::new(),
        senders: AtomicUsize::new(1),
        rx_closed: AtomicBool::new(false),
        room: AtomicUsize::new(capacity.unwrap_or(usize::MAX)),
        full: Mutex::new(Vec::new()),
        full_waiting: AtomicUsize::new(0),
    });
    (Sender { chan: chan.clone() }, Receiver { chan })
}

struct Chan<T> {
    queue: SegQueue<T>,
    rx_waker: AtomicWaker,
    /// Live senders: the receiver sees the end of the stream at 0.
    senders: AtomicUsize,
    rx_closed: AtomicBool,
    /// Free places (bounded channels; `usize::MAX` for unbounded ones, never counted).
    room: AtomicUsize,
    /// Senders waiting for room (only touched when the channel is full).
    full: Mutex<Vec<Waker>>,
    /// `full.len()`, readable without the lock.
    full_waiting: AtomicUsize,
}

impl<T> Chan<T> {
    fn bounded(&self) -> bool {
        self.room.load(Ordering::Relaxed) != usize::MAX
    }

    /// Takes one place, if there is one.
    fn take_room(&self) -> bool {
        let mut room = self.room.load(Ordering::SeqCst);
        loop {
            if room == 0 {
                return false;
            }
            if room == usize::MAX {
                return true;
            }
            match self.room.compare_exchange_weak(
                room,
                room - 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => room = now,
            }
        }
    }

    /// Gives a place back (a message was received) and wakes the full senders.
    fn give_room(&self) {
        if !self.bounded() {
            return;
        }
        self.room.fetch_add(1, Ordering::SeqCst);
        if self.full_waiting.load(Ordering::SeqCst) > 0 {
            self.wake_full();
        }
    }

    /// Wakes every sender waiting for room (they race for it; losers wait again).
    fn wake_full(&self) {
        let wakers = {
            let mut full = self.full.lock().unwrap_or_else(|e| e.into_inner());
            self.full_waiting.store(0, Ordering::SeqCst);
            std::mem::take(&mut *full)
        };
        for w in wakers {
            w.wake();
        }
    }

    fn push(&self, value: T) {
        self.queue.push(value);
        self.rx_waker.wake();
    }
}

/// The sending side of a bounded [`channel`]; clone it for more producers. `Send`:
/// producers may be on any core.
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting for room if the channel is full.
    ///
    /// # Errors
    ///
    /// [`SendError`] with the value if the receiver is gone (dropped or closed).
    pub async fn send(&self, value: T) -> Result<(), SendError<T>> {
        let mut value = Some(value);
        std::future::poll_fn(|cx| self.poll_send(cx, &mut value)).await
    }

    fn poll_send(
        &self,
        cx: &mut Context<'_>,
        value: &mut Option<T>,
    ) -> Poll<Result<(), SendError<T>>> {
        let chan = &self.chan;
        if chan.rx_closed.load(Ordering::SeqCst) {
            return Poll::Ready(Err(SendError(
                value.take().expect("polled after completion"),
            )));
        }
        if chan.take_room() {
            chan.push(value.take().expect("polled after completion"));
            return Poll::Ready(Ok(()));
        }
        {
            let mut full = chan.full.lock().unwrap_or_else(|e| e.into_inner());
            full.push(cx.waker().clone());
            chan.full_waiting.store(full.len(), Ordering::SeqCst);
        }
        // Room may have come between the look and the registration.
        if chan.rx_closed.load(Ordering::SeqCst) {
            return Poll::Ready(Err(SendError(
                value.take().expect("polled after completion"),
            )));
        }
        if chan.take_room() {
            chan.push(value.take().expect("polled after completion"));
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    }

    /// Sends `value` if there is room now.
    ///
    /// # Errors
    ///
    /// [`TrySendError::Full`] or [`TrySendError::Closed`], with the value.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        if self.chan.rx_closed.load(Ordering::SeqCst) {
            return Err(TrySendError::Closed(value));
        }
        if !self.chan.take_room() {
            return Err(TrySendError::Full(value));
        }
        self.chan.push(value);
        Ok(())
    }

    /// True once the receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.chan.rx_closed.load(Ordering::SeqCst)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.chan.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.rx_waker.wake();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("queued", &self.chan.queue.len())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The receiving side of a [`channel`]. One receiver: it may live on any core (it is
/// `Send`), and is woken there.
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Receiver<T> {
    /// The next message; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Poll form of [`recv`](Self::recv).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if let Some(v) = self.take() {
            return Poll::Ready(Some(v));
        }
        self.chan.rx_waker.register(cx.waker());
        // A message (or the last sender's drop) may have come before the registration.
        if let Some(v) = self.take() {
            return Poll::Ready(Some(v));
        }
        if self.chan.senders.load(Ordering::Acquire) == 0 {
            // Senders push before they drop: a last look finds what the last one sent.
            return Poll::Ready(self.take());
        }
        Poll::Pending
    }

    /// The next message if one is queued.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`], or [`TryRecvError::Disconnected`] once every sender is
    /// gone and the queue is empty.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        if let Some(v) = self.take() {
            return Ok(v);
        }
        if self.chan.senders.load(Ordering::Acquire) == 0 {
            return self.take().ok_or(TryRecvError::Disconnected);
        }
        Err(TryRecvError::Empty)
    }

    fn take(&self) -> Option<T> {
        let v = self.chan.queue.pop()?;
        self.chan.give_room();
        Some(v)
    }

    /// Refuses further messages (senders get their value back in `SendError`); those
    /// already queued can still be received.
    pub fn close(&mut self) {
        self.chan.rx_closed.store(true, Ordering::SeqCst);
        self.chan.wake_full();
    }

    /// Messages queued now.
    pub fn len(&self) -> usize {
        self.chan.queue.len()
    }

    /// True if no message is queued now.
    pub fn is_empty(&self) -> bool {
        self.chan.queue.is_empty()
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.close();
        // Messages nobody will read are dropped here, on the receiver's side.
        while self.chan.queue.pop().is_some() {}
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("queued", &self.len())
            .finish()
    }
}

/// The sending side of an [`unbounded_channel`].
pub struct UnboundedSender<T>(Sender<T>);

impl<T> UnboundedSender<T> {
    /// Queues `value`; never waits.
    ///
    /// # Errors
    ///
    /// [`SendError`] with the value if the receiver is gone.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.0
            .try_send(value)
            .map_err(|e| SendError(e.into_inner()))
    }

    /// True once the receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl<T> Clone for UnboundedSender<T> {
    fn clone(&self) -> Self {
        UnboundedSender(self.0.clone())
    }
}

impl<T> fmt::Debug for UnboundedSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UnboundedSender").field(&self.0).finish()
    }
}

/// The receiving side of an [`unbounded_channel`].
pub struct UnboundedReceiver<T>(Receiver<T>);

impl<T> UnboundedReceiver<T> {
    /// The next message; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<T> {
        self.0.recv().await
    }

    /// Poll form of [`recv`](Self::recv).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.0.poll_recv(cx)
    }

    /// The next message if one is queued.
    ///
    /// # Errors
    ///
    /// As [`Receiver::try_recv`].
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.0.try_recv()
    }

    /// Refuses further messages; those queued can still be received.
    pub fn close(&mut self) {
        self.0.close();
    }

    /// Messages queued now.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if no message is queued now.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T> fmt::Debug for UnboundedReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UnboundedReceiver").field(&self.0).finish()
    }
}
