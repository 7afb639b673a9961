//! One core of the runtime: its driver, its tasks, its timers and its loop.
//!
//! A loop turn runs every task that is ready, takes in what other threads sent (wakes,
//! spawns), fires due timers, then makes exactly one driver call that submits the turn's
//! I/O and waits for completions, bounded by the next timer deadline (zero if work is
//! already waiting). Completions wake tasks; the next turn runs them.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use slab::Slab;

use super::task::{JoinHandle, JoinState, TaskFuture, TaskHeader};
use crate::driver::{Driver, DriverWaker};
use crate::time::Timers;

/// Something another thread hands to this core.
pub(crate) enum Remote {
    Wake(Arc<TaskHeader>),
    Spawn(Box<dyn FnOnce() + Send>),
}

/// The part of a core other threads can reach.
pub(crate) struct CoreShared {
    pub index: usize,
    inject: Mutex<Vec<Remote>>,
    has_inject: AtomicBool,
    pub waker: DriverWaker,
    pub shutdown: AtomicBool,
}

impl CoreShared {
    pub fn new(index: usize, waker: DriverWaker) -> Arc<Self> {
        Arc::new(CoreShared {
            index,
            inject: Mutex::new(Vec::new()),
            has_inject: AtomicBool::new(false),
            waker,
            shutdown: AtomicBool::new(false),
        })
    }

    /// Queues `r` for this core and wakes its driver if it sleeps.
    pub fn inject(&self, r: Remote) {
        self.inject
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
        self.has_inject.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    fn take_injected(&self, into: &mut Vec<Remote>) {
        if self.has_inject.swap(false, Ordering::SeqCst) {
            into.append(&mut self.inject.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    fn has_injected(&self) -> bool {
        self.has_inject.load(Ordering::SeqCst)
    }
}

struct TaskEntry {
    header: Arc<TaskHeader>,
    /// Made once per task: polls reuse it, so registering it with the driver or a timer
    /// costs no reference counting after the first time.
    waker: Option<Waker>,
    /// Taken out (with the waker) while the task is polled, so that the task may spawn.
    future: Option<Pin<Box<dyn Future<Output = ()>>>>,
}

/// A run-queue entry: the task's slab key and its header's address. The address tells a
/// stale entry (the task ended and its key was reused) from a live one; at worst an
/// address reused by a new header costs one spurious poll, which futures tolerate.
pub(crate) type Ready = (usize, usize);

pub(crate) fn ready_of(h: &Arc<TaskHeader>) -> Ready {
    (h.key.load(Ordering::Acquire), Arc::as_ptr(h) as usize)
}

/// A core: owned by one thread, never shared.
pub(crate) struct Core {
    pub shared: Arc<CoreShared>,
    pub driver: RefCell<Driver>,
    pub queue: RefCell<VecDeque<Ready>>,
    tasks: RefCell<Slab<TaskEntry>>,
    pub timers: RefCell<Timers>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's core; panics with a clear message outside a runtime.
pub(crate) fn with_current<R>(f: impl FnOnce(&Core) -> R) -> R {
    try_with_current(f).expect(
        "no ringway runtime on this thread: call this from inside Runtime::block_on, \
         a task spawned on a ringway runtime, or #[ringway::main]",
    )
}

/// Runs `f` with this thread's core, if there is one.
pub(crate) fn try_with_current<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    CURRENT
        .try_with(|c| c.borrow().as_ref().map(|core| f(core)))
        .ok()
        .flatten()
}

/// Makes `core` this thread's current core until the guard drops.
pub(crate) struct Enter {
    prev: Option<Rc<Core>>,
}

impl Enter {
    pub fn new(core: Rc<Core>) -> Enter {
        let prev = CURRENT.with(|c| c.borrow_mut().replace(core));
        Enter { prev }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let prev = self.prev.take();
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = prev);
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

impl Core {
    pub fn new(shared: Arc<CoreShared>, driver: Driver) -> Rc<Core> {
        Rc::new(Core {
            shared,
            driver: RefCell::new(driver),
            queue: RefCell::new(VecDeque::new()),
            tasks: RefCell::new(Slab::new()),
            timers: RefCell::new(Timers::new()),
        })
    }

    /// Spawns a `!Send` task on this core.
    pub fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let header = TaskHeader::new(self.shared.clone());
        let state = JoinState::new();
        self.spawn_with(fut, state.clone(), header.clone());
        JoinHandle::new(state, Some(header))
    }

    /// Places a task whose header and join state already exist (cross-core spawns
    /// create them on the spawning thread).
    pub fn spawn_with<F>(&self, fut: F, state: Arc<JoinState<F::Output>>, header: Arc<TaskHeader>)
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        if header.cancelled.load(Ordering::Acquire) {
            state.finish(Err(super::task::JoinError::Cancelled));
            return;
        }
        let task = TaskFuture::new(fut, state);
        let mut tasks = self.tasks.borrow_mut();
        let entry = tasks.vacant_entry();
        header.key.store(entry.key(), Ordering::Release);
        header.notified.store(true, Ordering::Release);
        let ready = ready_of(&header);
        entry.insert(TaskEntry {
            waker: Some(Waker::from(header.clone())),
            header,
            future: Some(Box::pin(task)),
        });
        self.queue.borrow_mut().push_back(ready);
    }

    /// Tasks alive on this core.
    pub fn task_count(&self) -> usize {
        self.tasks.borrow().len()
    }

    /// Runs up to `TASKS_PER_TURN` ready tasks. Returns true if any remain ready.
    fn run_tasks(&self) -> bool {
        for _ in 0..TASKS_PER_TURN {
            let Some(ready) = self.queue.borrow_mut().pop_front() else {
                return false;
            };
            self.run_task(ready);
        }
        !self.queue.borrow().is_empty()
    }

    fn run_task(&self, (key, id): Ready) {
        let taken = {
            let mut tasks = self.tasks.borrow_mut();
            match tasks.get_mut(key) {
                Some(e) if Arc::as_ptr(&e.header) as usize == id => {
                    // Clear before polling, so a wake during the poll queues it again.
                    e.header.notified.store(false, Ordering::Release);
                    let cancelled = e.header.cancelled.load(Ordering::Acquire);
                    e.future
                        .take()
                        .zip(e.waker.take())
                        .map(|fw| (fw, cancelled))
                }
                _ => None, // finished already: a stale wake
            }
        };
        let Some(((mut future, waker), cancelled)) = taken else {
            return;
        };
        if cancelled {
            let entry = self.tasks.borrow_mut().remove(key);
            drop(entry);
            drop(future); // reports Cancelled, cancels the task's I/O
            return;
        }
        let mut cx = Context::from_waker(&waker);
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(()) => {
                let entry = self.tasks.borrow_mut().remove(key);
                drop(entry);
                drop(future);
            }
            Poll::Pending => {
                if let Some(e) = self.tasks.borrow_mut().get_mut(key) {
                    e.future = Some(future);
                    e.waker = Some(waker);
                }
            }
        }
    }

    fn take_remote(&self, scratch: &mut Vec<Remote>) {
        self.shared.take_injected(scratch);
        for r in scratch.drain(..) {
            match r {
                Remote::Wake(h) => self.queue.borrow_mut().push_back(ready_of(&h)),
                Remote::Spawn(f) => f(),
            }
        }
    }

    fn fire_timers(&self) -> Option<Instant> {
        let now = Instant::now();
        let (due, next) = self.timers.borrow_mut().take_due(now);
        for w in due {
            w.wake();
        }
        next
    }

    /// One loop turn. `ready_outside` says the caller has work of its own waiting (the
    /// `block_on` future was woken), so the driver must not sleep.
    fn turn(&self, scratch: &mut Vec<Remote>, ready_outside: &dyn Fn() -> bool) {
        let more = self.run_tasks();
        self.take_remote(scratch);
        let next_timer = self.fire_timers();
        let busy = more || !self.queue.borrow().is_empty() || ready_outside();
        let timeout = if busy {
            Some(Duration::ZERO)
        } else {
            next_timer.map(|t| t.saturating_duration_since(Instant::now()))
        };
        let sleeping = timeout != Some(Duration::ZERO);
        let waker = &self.shared.waker;
        let timeout = if sleeping {
            waker.set_sleeping(true);
            // Re-check after announcing sleep: see DriverWaker::set_sleeping.
            if self.shared.has_injected()
                || ready_outside()
                || self.shared.shutdown.load(Ordering::SeqCst)
            {
                Some(Duration::ZERO)
            } else {
                timeout
            }
        } else {
            timeout
        };
        let res = self.driver.borrow_mut().turn(timeout, &mut |_, _, _| {});
        if sleeping {
            waker.set_sleeping(false);
        }
        if let Err(e) = res {
            tracing::error!(error = %e, "driver turn failed");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Runs the loop until `fut` completes.
    pub fn block_on<F: Future>(self: &Rc<Self>, fut: F) -> F::Output {
        let _enter = Enter::new(self.clone());
        let main = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            core: self.shared.clone(),
        });
        let waker = Waker::from(main.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        let mut scratch = Vec::new();
        loop {
            if main.woken.swap(false, Ordering::SeqCst) {
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    return v;
                }
            }
            self.turn(&mut scratch, &|| main.woken.load(Ordering::SeqCst));
        }
    }

    /// Runs the loop until the core is told to shut down (worker threads).
    pub fn run_until_shutdown(self: &Rc<Self>) {
        let _enter = Enter::new(self.clone());
        let mut scratch = Vec::new();
        while !self.shared.shutdown.load(Ordering::SeqCst) {
            self.turn(&mut scratch, &|| false);
        }
    }

    /// Drops every task (on this thread, with this core current, so their I/O is
    /// cancelled properly), then cancels and reaps what I/O is left.
    pub fn shutdown(self: &Rc<Self>) {
        let _enter = Enter::new(self.clone());
        loop {
            let entries: Vec<TaskEntry> = self.tasks.borrow_mut().drain().collect();
            if entries.is_empty() {
                break;
            }
            // Dropping a task may spawn or wake others; loop until none are left.
            drop(entries);
        }
        self.queue.borrow_mut().clear();
        let mut scratch = Vec::new();
        self.shared.take_injected(&mut scratch);
        drop(scratch);
        self.driver.borrow_mut().shutdown(Duration::from_secs(2));
    }
}
