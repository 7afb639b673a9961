//! The errors of the channels and the semaphore: each says which side is gone.

use std::fmt;

/// The receiver of a channel is gone: the message comes back.
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<T>(pub T);

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("send failed: the channel's receiver is gone (dropped or closed)")
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// Why [`try_send`](super::mpsc::Sender::try_send) failed; the message comes back.
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// No room now.
    Full(T),
    /// The receiver is gone.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The message that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("send failed: the channel is full"),
            TrySendError::Closed(_) => SendError(()).fmt(f),
        }
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> std::error::Error for TrySendError<T> {}

/// Why [`try_recv`](super::mpsc::Receiver::try_recv) found nothing.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum TryRecvError {
    /// Nothing queued now; senders remain.
    Empty,
    /// Nothing queued, and every sender is gone: nothing will come.
    Disconnected,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receive failed: the channel is empty"),
            TryRecvError::Disconnected => {
                f.write_str("receive failed: every sender is gone and the channel is empty")
            }
        }
    }
}

impl std::error::Error for TryRecvError {}

/// The sending side of a [`oneshot`](super::oneshot) or [`watch`](super::watch) channel
/// was dropped: no value will come.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct RecvError(pub(crate) ());

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receive failed: the sender was dropped without sending")
    }
}

impl std::error::Error for RecvError {}

/// The [`Semaphore`](super::Semaphore) was closed.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct AcquireError(pub(crate) ());

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("acquire failed: the semaphore is closed")
    }
}

impl std::error::Error for AcquireError {}
