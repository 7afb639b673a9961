//! Tasks and their join handles.
//!
//! A task's future is `!Send` and lives in its core's task slab; it is only ever polled
//! and dropped on that core. What crosses threads is the [`TaskHeader`], behind an `Arc`:
//! the waker points at it. Waking hands the header to its [`Schedule`] hook, which the
//! core implements (a wake on the task's own thread goes straight to the run queue; one
//! from another thread, a `spawn_blocking` result say, lands in the core's inject queue
//! and wakes its driver). This module never names the core.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// Where a woken task goes: its core's run queue.
pub(crate) trait Schedule: Send + Sync + 'static {
    /// Queues `task` to be polled. Called from any thread, once per wake-up (repeated
    /// wakes before the task runs are absorbed by `TaskHeader::notified`).
    fn schedule(&self, task: &Arc<TaskHeader>);
}

/// The cross-thread part of a task.
pub(crate) struct TaskHeader {
    /// The task's core.
    pub scheduler: Arc<dyn Schedule>,
    /// `scheduler`'s data address, for the waker's is-it-this-core test (read through
    /// the `dyn` pointer it costs an alignment computation on every wake).
    pub scheduler_addr: usize,
    /// Index in the core's task slab; `usize::MAX` until the task is placed there.
    pub key: AtomicUsize,
    /// Already in a run queue: further wakes are no-ops until it runs.
    pub notified: AtomicBool,
    /// Its `JoinHandle` asked for it to be dropped.
    pub cancelled: AtomicBool,
}

impl TaskHeader {
    pub(crate) fn new(scheduler: Arc<dyn Schedule>) -> Arc<Self> {
        Arc::new(TaskHeader {
            scheduler_addr: Arc::as_ptr(&scheduler) as *const () as usize,
            scheduler,
            key: AtomicUsize::new(usize::MAX),
            notified: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
        })
    }
}

impl Wake for TaskHeader {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    #[inline]
    fn wake_by_ref(self: &Arc<Self>) {
        if self.notified.swap(true, Ordering::AcqRel) {
            return;
        }
        self.scheduler.schedule(self);
    }
}

/// Why a task did not produce its output.
pub enum JoinError {
    /// The task was cancelled (its handle was dropped or aborted, or its runtime shut
    /// down) before it finished.
    Cancelled,
    /// The task panicked; the payload is the panic's.
    Panicked(Box<dyn Any + Send + 'static>),
}

impl JoinError {
    /// True for a cancelled task.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled)
    }

    /// True for a task that panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panicked(_))
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Cancelled => write!(f, "JoinError::Cancelled"),
            JoinError::Panicked(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".into());
                write!(f, "JoinError::Panicked({msg:?})")
            }
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Cancelled => write!(f, "task was cancelled"),
            JoinError::Panicked(_) => write!(f, "task panicked"),
        }
    }
}

impl std::error::Error for JoinError {}

/// Where a task's output waits for its handle.
pub(crate) struct JoinState<T> {
    slot: Mutex<JoinSlot<T>>,
}

struct JoinSlot<T> {
    result: Option<Result<T, JoinError>>,
    finished: bool,
    waker: Option<Waker>,
}

impl<T> JoinState<T> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(JoinState {
            slot: Mutex::new(JoinSlot {
                result: None,
                finished: false,
                waker: None,
            }),
        })
    }

    /// Stores the outcome (the first one wins) and wakes the handle.
    pub(crate) fn finish(&self, r: Result<T, JoinError>) {
        let waker = {
            let mut s = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            if s.finished {
                return;
            }
            s.finished = true;
            s.result = Some(r);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn is_finished(&self) -> bool {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).finished
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        let mut s = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = s.result.take() {
            return Poll::Ready(r);
        }
        if s.finished {
            panic!("JoinHandle polled after it returned its result");
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// An owned permission to await a task's output.
///
/// **Dropping a `JoinHandle` cancels its task** (the task's future is dropped on its own
/// core at the next opportunity, which in turn cancels its pending I/O). Call
/// [`detach`](Self::detach) to let the task run on its own. Awaiting the handle gives the
/// output, or a [`JoinError`] if the task panicked or was cancelled.
///
/// Handles of `spawn_blocking` jobs cannot cancel a job that is running; dropping them
/// only discards the output.
#[must_use = "dropping a JoinHandle cancels its task; call .detach() to let it run"]
pub struct JoinHandle<T> {
    state: Arc<JoinState<T>>,
    header: Option<Arc<TaskHeader>>,
    detached: bool,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(state: Arc<JoinState<T>>, header: Option<Arc<TaskHeader>>) -> Self {
        JoinHandle {
            state,
            header,
            detached: false,
        }
    }

    /// Lets the task run to completion on its own; its output is dropped.
    pub fn detach(mut self) {
        self.detached = true;
    }

    /// Asks for the task to be cancelled. Awaiting the handle afterwards gives
    /// `JoinError::Cancelled`, unless the task had already finished.
    pub fn abort(&self) {
        if let Some(h) = &self.header {
            h.cancelled.store(true, Ordering::Release);
            Waker::from(h.clone()).wake();
        }
    }

    /// True once the task has finished, been cancelled or panicked.
    pub fn is_finished(&self) -> bool {
        self.state.is_finished()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.state.poll_result(cx)
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if !self.detached && !self.state.is_finished() {
            self.abort();
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Wraps a task's future: catches its panic, and reports `Cancelled` if it is dropped
/// before finishing. The future is stored inline: the core boxes the whole wrapper once.
/// (In this order: the fields read only at the end share the first cache line with the
/// core's per-poll fields, and the future's last bytes, its state tag among them, are
/// not left alone on a line of their own.)
#[repr(C)]
pub(crate) struct TaskFuture<F: Future> {
    state: Arc<JoinState<F::Output>>,
    done: bool,
    fut: F,
}

impl<F: Future> TaskFuture<F> {
    /// Writes the wrapper of the future at `fut` at `dst` field by field, the future
    /// copied bitwise once, straight to where it will be polled.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes and aligned for `TaskFuture<F>` (what it held is
    /// overwritten without being dropped); `fut` points at a valid future that the
    /// caller neither uses nor drops afterwards.
    #[inline(always)]
    pub(super) unsafe fn write(dst: *mut Self, fut: *const F, state: Arc<JoinState<F::Output>>) {
        // SAFETY: the caller's promises; each field is written once.
        unsafe {
            std::ptr::addr_of_mut!((*dst).state).write(state);
            std::ptr::addr_of_mut!((*dst).done).write(false);
            std::ptr::copy_nonoverlapping(fut, std::ptr::addr_of_mut!((*dst).fut), 1);
        }
    }
}

impl<F: Future> Future for TaskFuture<F> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `fut` is structurally pinned: it is never moved out of the pinned
        // wrapper, and the other fields are not pinned (they are only read or replaced).
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above, `fut` stays where the pinned wrapper put it.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        let r = catch_unwind(AssertUnwindSafe(|| fut.poll(cx)));
        match r {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                this.done = true;
                this.state.finish(Ok(v));
                Poll::Ready(())
            }
            Err(payload) => {
                this.done = true;
                this.state.finish(Err(JoinError::Panicked(payload)));
                Poll::Ready(())
            }
        }
    }
}

impl<F: Future> Drop for TaskFuture<F> {
    fn drop(&mut self) {
        if !self.done {
            self.state.finish(Err(JoinError::Cancelled));
        }
    }
}
