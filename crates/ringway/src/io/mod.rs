//! Futures over driver operations.
//!
//! [`OpFuture`] turns one [`Operation`] (an op plus the buffers it owns) into a future:
//! the first poll submits, later polls wait for the final completion. Dropping it early
//! hands the owned buffers to the driver and cancels, so the kernel never writes into
//! freed memory. [`OpFuture::cancel`] cancels but keeps the future, whose output then
//! carries the buffer back. `MultiShot` is the same for operations with many
//! completions (multishot accept and receive).

pub mod ops;
mod pipe;
mod stream_fd;

pub use pipe::Pipe;
pub(crate) use stream_fd::StreamFd;
pub use stream_fd::{FdRead, FdWrite, FdWriteAll};

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::driver::{Completion, HeldValue, KeptUntilDone, Op, OpId, Submitted};
use crate::runtime::context::{try_with_driver, with_driver};

/// An operation with the resources it owns.
pub trait Operation: Unpin + 'static {
    /// What the future of this operation returns.
    type Output;
    /// The driver op. Called once, just before submission; pointers it holds point into
    /// `self`'s heap buffers, which stay put when `self` moves.
    fn op(&mut self) -> Op;
    /// A linked timeout, if any.
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// Builds the output from the final completion.
    fn complete(self, c: Completion) -> Self::Output;
}

/// A future over one operation. See the [module docs](self).
#[must_use = "futures do nothing unless awaited"]
pub struct OpFuture<T: Operation> {
    state: Option<T>,
    id: Option<OpId>,
    cancel_before_start: bool,
}

impl<T: Operation> std::fmt::Debug for OpFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpFuture")
            .field("submitted", &self.id.is_some())
            .field("finished", &self.state.is_none())
            .finish()
    }
}

impl<T: Operation> OpFuture<T> {
    pub(crate) fn new(state: T) -> Self {
        OpFuture {
            state: Some(state),
            id: None,
            cancel_before_start: false,
        }
    }

    /// Asks for the operation to stop. Awaiting the future afterwards returns its output
    /// with the buffer: an `ECANCELED` error (`Operation canceled`) if the cancel won, or
    /// the real result if the operation finished first. Nothing is lost either way.
    pub fn cancel(&mut self) {
        match self.id {
            Some(id) => with_driver(|d| d.request_cancel(id)),
            None => self.cancel_before_start = true,
        }
    }
}

impl<T: Operation> Future for OpFuture<T> {
    type Output = T::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T::Output> {
        let this = &mut *self;
        let id = match this.id {
            Some(id) => id,
            None => {
                let state = this
                    .state
                    .as_mut()
                    .expect("OpFuture polled after completion");
                if this.cancel_before_start {
                    let s = this.state.take().expect("state present");
                    return Poll::Ready(s.complete(Completion::new(-libc::ECANCELED)));
                }
                let op = state.op();
                let timeout = state.timeout();
                // SAFETY: the op's pointers refer to buffers owned by `state`, which lives
                // in this future until the final completion, or is handed to the driver
                // by `detach` if the future is dropped first.
                let submitted = with_driver(|d| unsafe { d.submit_waker(op, timeout, cx.waker()) });
                match submitted {
                    Submitted::Done(c) => {
                        let s = this.state.take().expect("state present");
                        return Poll::Ready(s.complete(c));
                    }
                    // Registered with this task's waker: nothing more to do this poll.
                    Submitted::Pending(id) => {
                        this.id = Some(id);
                        return Poll::Pending;
                    }
                }
            }
        };
        match with_driver(|d| d.poll_complete(id, cx)) {
            Poll::Ready(c) => {
                this.id = None;
                let s = this.state.take().expect("state present");
                Poll::Ready(s.complete(c))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: Operation> Drop for OpFuture<T> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let mut kept = self.state.take().map(|s| HeldValue::new(KeptUntilDone(s)));
        let handed = try_with_driver(|d| d.detach(id, kept.take()));
        if handed.is_none() {
            // No driver to give the buffers to (dropped outside the runtime): the kernel
            // may still write into them, so they must never be freed.
            std::mem::forget(kept);
        }
    }
}

/// A multishot operation: a stream of completions until it ends.
pub(crate) struct MultiShot {
    op: Op,
    id: Option<OpId>,
}

impl MultiShot {
    pub(crate) fn new(op: Op) -> Self {
        debug_assert!(op.is_multishot());
        MultiShot { op, id: None }
    }

    /// The operation in flight, once started.
    #[inline]
    pub(crate) fn id(&self) -> Option<OpId> {
        self.id
    }

    /// Forgets the operation (for an owner that detaches it itself): `None` if none
    /// was started or it ended.
    #[inline]
    pub(crate) fn take_id(&mut self) -> Option<OpId> {
        self.id.take()
    }

    /// The next completion; `None` once the operation has ended. After an end, the next
    /// call starts the operation again (a listener's accept stream resumes after an
    /// error, for example); callers decide whether to.
    #[inline]
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Completion>> {
        let id = match self.id {
            Some(id) => id,
            None => {
                // SAFETY: multishot ops here carry no pointers (pool buffers, no addr).
                let s = with_driver(|d| unsafe { d.submit_waker(self.op, None, cx.waker()) });
                match s {
                    Submitted::Pending(id) => {
                        self.id = Some(id);
                        id
                    }
                    Submitted::Done(c) => return Poll::Ready(Some(c)),
                }
            }
        };
        let r = with_driver(|d| d.poll_next(id, cx));
        if let Poll::Ready(None) = r {
            self.id = None;
        }
        r
    }
}

impl Drop for MultiShot {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            try_with_driver(|d| d.detach(id, None));
        }
    }
}

/// Tells the current core's driver that `fd` is about to close (see
/// [`Driver::forget_fd`](crate::driver::Driver::forget_fd)). Outside a runtime, or while
/// the driver is busy (a drop inside a turn), there is nothing to tell.
pub(crate) fn forget_fd(fd: std::os::fd::RawFd) {
    if let Some(Err(e)) = try_with_driver(|d| d.forget_fd(fd)) {
        tracing::warn!(fd, error = %e, "epoll refused to remove a registration");
    }
}
