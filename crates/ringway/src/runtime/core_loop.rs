//! The loop of one core of the runtime (what a core is made of: `core.rs`).
//!
//! A loop turn runs every task that is ready, takes in what other threads sent (wakes,
//! spawns), fires due timers, then makes exactly one driver call that submits the turn's
//! I/O and waits for completions (not at all if work is already waiting), bounded by the
//! next timer deadline: on io_uring a timeout op in the ring, which says when the
//! timers are due (no clock read in the other turns), on epoll the wait's timeout.
//! Completions wake tasks; the next turn runs them.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use slab::Slab;

use super::context::{try_with_core, Enter};
use super::core::{Core, CoreShared, Remote, TaskBody, TaskEntry};
use super::run_queue::{RunQueue, RunQueueEntry};
use super::task::{JoinHandle, JoinState, Schedule, TaskHeader};
use super::task_blocks::TaskBox;
use super::task_waker::borrowed_task_waker;
use crate::driver::Driver;
use crate::time::Timers;

impl Schedule for CoreShared {
    fn schedule(&self, task: &Arc<TaskHeader>) {
        // On the task's own thread: straight to the run queue. Anywhere else: through
        // the inject queue, which wakes the core if it sleeps.
        let local = try_with_core(|core| {
            let mine = std::ptr::eq(Arc::as_ptr(&core.shared), self);
            if mine {
                core.queue.push(RunQueueEntry::of(task));
            }
            mine
        });
        if local != Some(true) {
            self.inject(Remote::Wake(task.clone()));
        }
    }
}

/// Wakes `block_on`'s own future.
struct MainWaker {
    woken: AtomicBool,
    core: Arc<CoreShared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.core.waker.wake();
    }
}

/// How many tasks one turn runs before it looks at I/O again: keeps a flood of ready
/// tasks from starving completions and timers.
const TASKS_PER_TURN: usize = 256;

/// How many turns in a row the driver may fail before the core gives up.
const DRIVER_FAILURES_TOLERATED: u32 = 100;

impl Core {
    pub(crate) fn new(shared: Arc<CoreShared>, driver: Driver) -> Rc<Core> {
        Rc::new(Core {
            shared,
            kernel_timer: driver.kernel_timer(),
            driver: RefCell::new(driver),
            queue: RunQueue::default(),
            tasks: RefCell::new(Slab::new()),
            blocks: RefCell::default(),
            timers: RefCell::new(Timers::new()),
        })
    }

    /// Spawns a `!Send` task on this core: the future at `fut`, moved out of there
    /// (bitwise) straight into its task's block. Each call a future passes through by
    /// value is a copy of it (hundreds of bytes for a connection's), so the public
    /// `spawn` passes it here by address.
    ///
    /// # Safety
    ///
    /// `fut` points at a valid future that the caller neither uses nor drops after
    /// this call (it is the task's from then on; if this panics, it may be leaked).
    #[inline(always)]
    pub(crate) unsafe fn spawn_from<F>(&self, fut: *const F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let header = TaskHeader::new(self.shared.clone());
        let state = JoinState::new();
        // SAFETY: the caller's promise; the header is new, so nobody cancelled it.
        let body = unsafe { TaskBox::place(&mut self.blocks.borrow_mut(), fut, state.clone()) };
        self.insert_task(header.clone(), body);
        JoinHandle::new(state, Some(header))
    }

    /// Places a task whose header and join state already exist (cross-core spawns
    /// create them on the spawning thread).
    pub(crate) fn spawn_with<F>(
        &self,
        fut: F,
        state: Arc<JoinState<F::Output>>,
        header: Arc<TaskHeader>,
    ) where
        F: Future + 'static,
        F::Output: 'static,
    {
        if header.cancelled.load(Ordering::Acquire) {
            state.finish(Err(super::task::JoinError::Cancelled));
            return;
        }
        let fut = std::mem::ManuallyDrop::new(fut);
        // SAFETY: `fut` is valid, moved out once by the call and never used again.
        let body = unsafe { TaskBox::place(&mut self.blocks.borrow_mut(), &*fut, state) };
        self.insert_task(header, body);
    }

    /// Puts a placed task in the slab and queues its first poll.
    #[inline]
    fn insert_task(&self, header: Arc<TaskHeader>, body: TaskBox) {
        let mut tasks = self.tasks.borrow_mut();
        let entry = tasks.vacant_entry();
        header.key.store(entry.key(), Ordering::Release);
        header.notified.store(true, Ordering::Release);
        let ready = RunQueueEntry::of(&header);
        entry.insert(TaskEntry { header, body });
        self.queue.push(ready);
    }

    /// Queues `task` if `scheduler` (its header's hook) is this core, which is the case
    /// for a wake on the task's own thread; false otherwise (the hook sees to it).
    #[inline]
    pub(super) fn run_local(&self, scheduler: *const (), task: &TaskHeader) -> bool {
        if !std::ptr::eq(Arc::as_ptr(&self.shared) as *const (), scheduler) {
            return false;
        }
        self.queue.push(RunQueueEntry {
            key: task.key.load(Ordering::Acquire),
            header: task as *const TaskHeader as usize,
        });
        true
    }

    /// Tasks alive on this core.
    pub(crate) fn task_count(&self) -> usize {
        self.tasks.borrow().len()
    }

    /// Runs up to `TASKS_PER_TURN` ready tasks. Returns true if any remain ready.
    fn run_tasks(&self) -> bool {
        for _ in 0..TASKS_PER_TURN {
            let Some(ready) = self.queue.pop() else {
                return false;
            };
            self.run_task(ready);
        }
        !self.queue.is_empty()
    }

    fn run_task(&self, ready: RunQueueEntry) {
        let body: *mut TaskBody<dyn Future<Output = ()>> = {
            let mut tasks = self.tasks.borrow_mut();
            match tasks.get_mut(ready.key) {
                Some(e) if Arc::as_ptr(&e.header) as usize == ready.header && !e.body.running() => {
                    // Clear before polling, so a wake during the poll queues it again.
                    e.header.notified.store(false, Ordering::Release);
                    if e.header.cancelled.load(Ordering::Acquire) {
                        let entry = tasks.remove(ready.key);
                        drop(tasks);
                        self.release(entry); // reports Cancelled, cancels the task's I/O
                        return;
                    }
                    // The body stays in its block, and its entry is not removed while
                    // `running` (only this function removes entries of a live core, and
                    // it skips running ones; `shutdown` leaks them), so the pointer
                    // stays valid for the poll even if the slab grows.
                    let body = e.body.as_ptr();
                    // SAFETY: the body is alive (its entry is); `running` is a `Cell`.
                    unsafe { (*body).running.set(true) };
                    body
                }
                _ => return, // finished already (a stale wake), or running (nested turn)
            }
        };
        // SAFETY: see above; the future is never moved out of its pinned body.
        let poll = unsafe {
            let body = &mut *body;
            // SAFETY: the header is the entry's (checked above), whose count keeps it
            // alive while the task is polled (the entry stays while `running`).
            let waker = borrowed_task_waker(ready.header as *const TaskHeader);
            let mut cx = Context::from_waker(&waker);
            Pin::new_unchecked(&mut body.future).poll(&mut cx)
        };
        match poll {
            Poll::Ready(()) => {
                let entry = self.tasks.borrow_mut().remove(ready.key);
                self.release(entry);
            }
            // SAFETY: the body is still where it was: its entry was not removed while
            // `running` (see above), and the poll's borrow of it has ended.
            Poll::Pending => unsafe { (*body).running.set(false) },
        }
    }

    /// Drops a finished or cancelled task; its block is kept for the next task.
    #[inline]
    fn release(&self, entry: TaskEntry) {
        let TaskEntry { header, body } = entry;
        body.recycle(&self.blocks);
        drop(header);
    }

    /// Takes in what other threads sent. The flag is checked every turn; the queue is
    /// only locked and drained when it is set.
    #[inline]
    fn take_remote(&self, scratch: &mut Vec<Remote>) {
        if self.shared.take_has_injected() {
            self.take_remote_slow(scratch);
        }
    }

    #[cold]
    fn take_remote_slow(&self, scratch: &mut Vec<Remote>) {
        self.shared.take_injected(scratch);
        for r in scratch.drain(..) {
            match r {
                Remote::Wake(h) => self.queue.push(RunQueueEntry::of(&h)),
                Remote::Spawn(f) => f(),
            }
        }
    }

    /// Wakes the tasks whose timers are due at `now`; returns the next deadline.
    fn fire_timers(&self, now: Instant, due: &mut Vec<Waker>) -> Option<Instant> {
        let next = self.timers.borrow_mut().take_due(now, due);
        for w in due.drain(..) {
            w.wake();
        }
        next
    }

    /// Whether something other than a task wants the loop's attention: a wake or spawn
    /// from another thread, the caller's own work (`ready_outside`), a shutdown.
    #[inline]
    fn wanted(&self, ready_outside: &dyn Fn() -> bool) -> bool {
        self.shared.has_injected() || ready_outside() || self.shared.shutdown.load(Ordering::SeqCst)
    }

    /// One loop turn. `ready_outside` says the caller has work of its own waiting (the
    /// `block_on` future was woken), so the driver must not sleep.
    fn turn(&self, scratch: &mut Scratch, ready_outside: &dyn Fn() -> bool) -> io::Result<()> {
        let more = self.run_tasks();
        self.take_remote(&mut scratch.remote);
        if self.kernel_timer {
            return self.turn_kernel_timer(more, scratch, ready_outside);
        }
        // One reading of the clock, for the timers and for the wait's bound; none
        // without timers.
        let (now, next_timer) = if self.timers.borrow().is_empty() {
            (None, None)
        } else {
            let now = Instant::now();
            (Some(now), self.fire_timers(now, &mut scratch.due))
        };
        let busy = more || !self.queue.is_empty() || ready_outside();
        let timeout = if busy {
            Some(Duration::ZERO)
        } else {
            next_timer
                .zip(now)
                .map(|(t, now)| t.saturating_duration_since(now))
        };
        let sleeping = timeout != Some(Duration::ZERO);
        let waker = &self.shared.waker;
        let timeout = if sleeping {
            waker.set_sleeping(true);
            // Re-check after announcing sleep: see DriverWaker::set_sleeping.
            if self.wanted(ready_outside) {
                Some(Duration::ZERO)
            } else {
                timeout
            }
        } else {
            timeout
        };
        let res = self.driver.borrow_mut().turn(timeout, &mut |_, _, _| {});
        self.timers.borrow_mut().forget_now(); // the wait made the turn clock stale
        if sleeping {
            waker.set_sleeping(false);
        }
        scratch.driver_result(res)
    }

    /// [`turn`](Self::turn) on a driver that keeps the core's timer in the kernel
    /// (io_uring): the timers are looked at, and the clock read, only in a turn after
    /// that timer fired, and the wait has no timeout. A wait that ends with nothing for
    /// the core to do (only background sends finished, such as the one this turn's
    /// enter submitted and the kernel completed at once) waits again at once, without
    /// a turn around the loop.
    fn turn_kernel_timer(
        &self,
        more: bool,
        scratch: &mut Scratch,
        ready_outside: &dyn Fn() -> bool,
    ) -> io::Result<()> {
        let mut next_timer = if std::mem::take(&mut scratch.timer_fired) {
            self.fire_timers(Instant::now(), &mut scratch.due)
        } else {
            self.timers.borrow().next_wake()
        };
        let busy = more || !self.queue.is_empty() || ready_outside();
        let waker = &self.shared.waker;
        let sleeping = !busy;
        if sleeping {
            waker.set_sleeping(true);
        }
        // Re-check after announcing sleep: see DriverWaker::set_sleeping.
        let mut wait = sleeping && !self.wanted(ready_outside);
        let res = loop {
            let fired = match self.driver.borrow_mut().turn_with_timer(wait, next_timer) {
                Ok(fired) => fired,
                Err(e) => break Err(e),
            };
            scratch.timer_fired = fired;
            if !wait || fired || !self.queue.is_empty() {
                break Ok(());
            }
            // Nothing woke. Sleep again, announced and re-checked as before.
            waker.set_sleeping(true);
            if self.wanted(ready_outside) {
                break Ok(());
            }
            // What ran in the reap (a finished send's buffer dropped) is unlikely to have
            // made a timer, but one it made is armed like any.
            next_timer = self.timers.borrow().next_wake();
            wait = true;
        };
        self.timers.borrow_mut().forget_now(); // the wait made the turn clock stale
        if sleeping {
            waker.set_sleeping(false);
        }
        scratch.driver_result(res)
    }

    /// Runs the loop until `fut` completes.
    ///
    /// # Panics
    ///
    /// If the driver fails turn after turn (its ring or epoll instance is broken): the
    /// core cannot make progress, and waiting forever would hide it.
    pub(crate) fn block_on<F: Future>(self: &Rc<Self>, fut: F) -> F::Output {
        let _enter = Enter::new(self.clone());
        let main = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            core: self.shared.clone(),
        });
        let waker = Waker::from(main.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        let mut scratch = Scratch::default();
        loop {
            if main.woken.swap(false, Ordering::SeqCst) {
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    return v;
                }
            }
            if let Err(e) = self.turn(&mut scratch, &|| main.woken.load(Ordering::SeqCst)) {
                panic!("ringway core {}: {e}", self.shared.index);
            }
        }
    }

    /// Runs the loop until the core is told to shut down (worker threads). An error is
    /// a driver that cannot make progress.
    pub(crate) fn run_until_shutdown(self: &Rc<Self>) -> io::Result<()> {
        let _enter = Enter::new(self.clone());
        let mut scratch = Scratch::default();
        while !self.shared.shutdown.load(Ordering::SeqCst) {
            self.turn(&mut scratch, &|| false)?;
        }
        Ok(())
    }

    /// Drops every task (on this thread, with this core current, so their I/O is
    /// cancelled properly), then cancels and reaps what I/O is left.
    pub(crate) fn shutdown(self: &Rc<Self>) {
        let _enter = Enter::new(self.clone());
        loop {
            let entries: Vec<TaskEntry> = self.tasks.borrow_mut().drain().collect();
            if entries.is_empty() {
                break;
            }
            // Dropping a task may spawn or wake others; loop until none are left. A task
            // being polled (this runs inside its poll) cannot be dropped under itself:
            // it is leaked.
            for entry in entries {
                if entry.body.running() {
                    std::mem::forget(entry);
                } else {
                    drop(entry);
                }
            }
        }
        self.queue.clear();
        // Spawns that never ran report cancelled; wakes are moot.
        drop(self.shared.close_inject());
        self.driver.borrow_mut().shutdown(Duration::from_secs(2));
    }
}

/// What a core's loop reuses from turn to turn.
#[derive(Default)]
struct Scratch {
    remote: Vec<Remote>,
    due: Vec<Waker>,
    /// Driver turns failed in a row.
    failures: u32,
    /// The core's timer in the kernel fired: the next turn looks at the timers.
    timer_fired: bool,
}

impl Scratch {
    /// What the loop makes of a driver turn's result: a failure is tolerated (and
    /// logged) up to `DRIVER_FAILURES_TOLERATED` in a row.
    fn driver_result(&mut self, res: io::Result<()>) -> io::Result<()> {
        match res {
            Ok(()) => {
                self.failures = 0;
                Ok(())
            }
            Err(e) => {
                self.failures += 1;
                tracing::error!(error = %e, failures = self.failures, "driver turn failed");
                if self.failures >= DRIVER_FAILURES_TOLERATED {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "the driver failed {} turns in a row; last error: {e}",
                            self.failures
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(1));
                Ok(())
            }
        }
    }
}
