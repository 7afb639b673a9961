//! What a core is made of: its driver, timers, run queue and tasks ([`Core`], owned by
//! its thread), and the part other threads reach ([`CoreShared`]: the inject queue and
//! the driver's waker). The loop that runs it is `core_loop.rs`; the thread's current
//! core is `context.rs`. This file names neither.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use slab::Slab;

use super::run_queue::{RunQueue, RunQueueEntry};
use super::task::TaskHeader;
use super::task_blocks::{TaskBlocks, TaskBox};
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
    /// What other threads sent; `None` once the core has shut down (what comes after is
    /// dropped at once: a wake or spawn held here would keep the core's shared part, and
    /// its eventfd, alive through the task's header forever).
    inject: Mutex<Option<Vec<Remote>>>,
    has_inject: AtomicBool,
    pub waker: DriverWaker,
    pub shutdown: AtomicBool,
    /// Every core of the runtime, for `Handle::current` (weak: the runtime owns them).
    pub runtime: std::sync::OnceLock<std::sync::Weak<[Arc<CoreShared>]>>,
}

impl CoreShared {
    pub(crate) fn new(index: usize, waker: DriverWaker) -> Arc<Self> {
        Arc::new(CoreShared {
            index,
            inject: Mutex::new(Some(Vec::new())),
            has_inject: AtomicBool::new(false),
            waker,
            shutdown: AtomicBool::new(false),
            runtime: std::sync::OnceLock::new(),
        })
    }

    /// Queues `r` for this core and wakes its driver if it sleeps. After the core has
    /// shut down, `r` is dropped (a spawn reports its task cancelled).
    pub(crate) fn inject(&self, r: Remote) {
        let refused = {
            let mut queue = self.inject.lock().unwrap_or_else(|e| e.into_inner());
            match queue.as_mut() {
                Some(q) => {
                    q.push(r);
                    None
                }
                None => Some(r),
            }
        };
        if refused.is_some() {
            return; // dropped here, outside the lock
        }
        self.has_inject.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    /// Whether anything was injected since the last call (then `take_injected` has it).
    #[inline]
    pub(super) fn take_has_injected(&self) -> bool {
        self.has_inject.swap(false, Ordering::SeqCst)
    }

    pub(super) fn take_injected(&self, into: &mut Vec<Remote>) {
        if let Some(q) = self
            .inject
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            into.append(q);
        }
    }

    /// Refuses everything from now on; returns what was queued.
    pub(super) fn close_inject(&self) -> Vec<Remote> {
        self.inject
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default()
    }

    pub(super) fn has_injected(&self) -> bool {
        self.has_inject.load(Ordering::SeqCst)
    }
}

pub(super) struct TaskEntry {
    pub(super) header: Arc<TaskHeader>,
    /// The future, in a block that never moves: polled in place (through a pointer,
    /// with the slab not borrowed, so that the task may spawn).
    pub(super) body: TaskBox,
}

/// What a task entry owns on the heap. Aligned to a cache line: a task's state is
/// read from memory again at each poll when there are many (a thousand connections'
/// do not fit in a core's L2), and a body that starts mid-line spans one line more
/// for the same bytes.
#[repr(C, align(64))]
pub(super) struct TaskBody<F: ?Sized> {
    /// Being polled: a nested turn (a `block_on` inside a task) must not poll it again,
    /// and nothing may drop it. Kept here, beside the future, so that the end of a poll
    /// clears it through the body's pointer without looking the task up again.
    pub(super) running: std::cell::Cell<bool>,
    pub(super) future: F,
}

impl RunQueueEntry {
    pub(super) fn of(h: &Arc<TaskHeader>) -> Self {
        RunQueueEntry {
            key: h.key.load(Ordering::Acquire),
            header: Arc::as_ptr(h) as usize,
        }
    }
}

/// A core: owned by one thread, never shared.
pub(crate) struct Core {
    pub(super) shared: Arc<CoreShared>,
    pub(super) driver: RefCell<Driver>,
    pub(super) timers: RefCell<Timers>,
    pub(super) queue: RunQueue,
    pub(super) tasks: RefCell<Slab<TaskEntry>>,
    /// Blocks of finished tasks, for the next ones (see `task_blocks.rs`).
    pub(super) blocks: RefCell<TaskBlocks>,
    /// The driver keeps the core's timer in the kernel (see `Driver::turn_with_timer`).
    pub(super) kernel_timer: bool,
}
