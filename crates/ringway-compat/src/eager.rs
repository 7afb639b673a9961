//! Streams run in their connection's task: the futures hyper's HTTP/2 server hands to
//! [`LocalExecutor`](crate::LocalExecutor) during a poll of a [`Server`](crate::Server)
//! connection are polled once right after that poll, in the same task, and become
//! tasks of their own only if that first poll does not finish them.
//!
//! hyper's HTTP/2 server hands every stream (request) of a connection to its executor
//! as a future, from inside the connection's poll. With a handler that answers at once
//! (most do), that future finishes on its first poll: it calls the service, queues the
//! response's frames on the connection and ends. As a task it would cost an allocation
//! for the task, one for its join state and one for its future, a trip through the run
//! queue, a poll of its own, and a wake of the connection, whose next poll (in a later
//! round of the core's run queue) writes the response. Run by the connection's task, it
//! costs one allocation (the future is pinned where it can go on as a task), and the
//! connection is polled again at once, which writes every response its streams queued
//! (one TLS record, one send for all the streams a poll accepted).
//!
//! The streams are polled after the connection's poll, not inside it (in
//! `Executor::execute`): inside, each stream's response would be flushed by the
//! connection's next step on its own (one TLS record per response) instead of
//! together.
//!
//! A first poll sees a waker of its own, not the connection's: the wakers it registers
//! must reach the task the future may become. That waker points to a small shared
//! slot; the task, when it first runs, puts its own waker there. A wake that comes
//! before that is not lost: a new task is polled once anyway, after it.
//!
//! The streams' first polls wake the connection (their responses are queued on it);
//! the connection's task, about to poll it again anyway, holds those wakes back
//! ([`Gate`]) rather than be polled once more, for nothing, in a later turn.
//!
//! A panic in a first poll is caught, as the runtime catches a task's: the future is
//! dropped (an HTTP/2 stream is then reset), the connection goes on.
//!
//! Outside a connection's poll (a hyper client, a builder used by hand), the executor
//! spawns a task per future, as before.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// A future waiting for its first poll.
type Pending = Pin<Box<dyn Future<Output = ()>>>;

thread_local! {
    /// A connection's poll is being collected ([`collect`]).
    static COLLECTING: Cell<bool> = const { Cell::new(false) };
    /// The futures handed to the executor while it is; its capacity is kept.
    static BATCH: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

pin_project_lite::pin_project! {
    /// A future whose output nobody wants.
    struct Discard<F> {
        #[pin]
        fut: F,
    }
}

impl<F: Future> Future for Discard<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.project().fut.poll(cx).map(drop)
    }
}

/// The executor's `execute`: kept for [`run`] if a connection's poll is being
/// collected on this thread, else spawned on the current core.
///
/// # Panics
///
/// Outside a ringway runtime, unless a connection's poll is being collected (as
/// `ringway::spawn` does).
pub(crate) fn execute<F>(fut: F)
where
    F: Future + 'static,
    F::Output: 'static,
{
    if COLLECTING.with(Cell::get) {
        let fut: Pending = Box::pin(Discard { fut });
        BATCH.with(|b| b.borrow_mut().push(fut));
    } else {
        ringway::spawn(fut).detach();
    }
}

/// Runs `poll` (a connection's poll) with the futures it hands to the executor kept
/// aside for [`run`], which must follow; whether there are any. Polls do not nest: a
/// first poll that hands out futures of its own (in [`run`]) has them spawned.
pub(crate) fn collect<R>(poll: impl FnOnce() -> R) -> (R, bool) {
    /// Stops collecting, also if `poll` unwinds (what it handed out is then dropped).
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            COLLECTING.with(|c| c.set(false));
            if std::thread::panicking() {
                BATCH.with(|b| b.borrow_mut().clear());
            }
        }
    }
    COLLECTING.with(|c| c.set(true));
    let stop = Stop;
    let r = poll();
    drop(stop);
    (r, BATCH.with(|b| !b.borrow().is_empty()))
}

/// Polls each future [`collect`] kept aside once, in the current task; spawns those not
/// done on the current core.
///
/// # Panics
///
/// If a future is not done after its first poll and no ringway runtime runs on this
/// thread.
pub(crate) fn run() {
    let mut batch = BATCH.with(|b| std::mem::take(&mut *b.borrow_mut()));
    for mut fut in batch.drain(..) {
        let slot = Arc::new(Slot::default());
        let waker = Waker::from(slot.clone());
        let mut cx = Context::from_waker(&waker);
        match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
            Ok(Poll::Ready(())) => {}
            Ok(Poll::Pending) => ringway::spawn(Resumed {
                fut,
                slot: Some(slot),
            })
            .detach(),
            Err(_) => tracing::debug!("a stream's future panicked in its first poll; dropped"),
        }
    }
    // The emptied vector, for the next batch (unless one was started meanwhile).
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        if b.capacity() < batch.capacity() {
            *b = batch;
        }
    });
}

/// Where the wakers a first poll registered find the task (once there is one).
#[derive(Default)]
struct Slot {
    task: Mutex<Option<Waker>>,
}

impl Wake for Slot {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // No task yet: it polls the future once anyway when it first runs, after this.
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = &*task {
            w.wake_by_ref();
        }
    }
}

/// The task of a future its first poll did not finish.
struct Resumed {
    fut: Pending,
    /// Until the task's first poll: where its waker goes.
    slot: Option<Arc<Slot>>,
}

impl Future for Resumed {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(slot) = self.slot.take() {
            // Before the poll: a wake from now on reaches this task.
            *slot.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
        }
        self.fut.as_mut().poll(cx)
    }
}

/// The waker a connection is polled with while its task runs its streams' first polls:
/// it wakes the task, except while [`hold`](Gate::hold) is in force, when it only
/// notes the wake for [`release`](Gate::release) (the task polls the connection again
/// right after, which answers it). Made at the connection's first poll, kept for its
/// life.
#[derive(Debug)]
pub(crate) struct Gate {
    shared: Arc<GateState>,
    /// A waker of `shared`, made once.
    waker: Waker,
}

#[derive(Debug)]
struct GateState {
    /// The connection's task (its waker does not change).
    task: Waker,
    state: AtomicU8,
}

/// Wakes go to the task.
const OPEN: u8 = 0;
/// Wakes are held back; none came yet.
const HOLDING: u8 = 1;
/// Wakes are held back; one came.
const HELD_WOKEN: u8 = 2;

impl Gate {
    /// A gate in front of `task`.
    pub(crate) fn new(task: &Waker) -> Gate {
        let shared = Arc::new(GateState {
            task: task.clone(),
            state: AtomicU8::new(OPEN),
        });
        let waker = Waker::from(shared.clone());
        Gate { shared, waker }
    }

    /// The waker to poll the connection with, if `task` is the gate's task (a task's
    /// waker does not change; if it did, poll with `task` itself).
    pub(crate) fn waker_for(&self, task: &Waker) -> Option<&Waker> {
        self.shared.task.will_wake(task).then_some(&self.waker)
    }

    /// From now on wakes are only noted.
    pub(crate) fn hold(&self) {
        self.shared.state.store(HOLDING, Ordering::SeqCst);
    }

    /// Wakes go to the task again; whether one came while they were held.
    pub(crate) fn release(&self) -> bool {
        self.shared.state.swap(OPEN, Ordering::SeqCst) == HELD_WOKEN
    }
}

impl Wake for GateState {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(HOLDING, HELD_WOKEN, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) | Err(HELD_WOKEN) => {}
            Err(_) => self.task.wake_by_ref(),
        }
    }
}
