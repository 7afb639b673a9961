//! Which core this thread is running, and narrow access to its driver and timers.
//!
//! Everything above the runtime (I/O futures, sleeps, spawns) reaches its core through
//! here, never through the core's fields. The current core is a raw pointer in a
//! `const`-initialised thread-local `Cell`: reading it is one load, which matters
//! because every I/O poll does it. The pointer is set by [`Enter`], which holds an `Rc`
//! of the core for as long as the pointer is visible, and restores the previous value
//! when dropped.

use std::cell::Cell;
use std::rc::Rc;

use super::core::Core;
use crate::driver::Driver;
use crate::time::Timers;

thread_local! {
    /// The core this thread runs, or null.
    static CURRENT: Cell<*const Core> = const { Cell::new(std::ptr::null()) };
}

const OUTSIDE: &str = "no ringway runtime on this thread: call this from inside \
                       Runtime::block_on, a task spawned on a ringway runtime, or #[ringway::main]";

/// Runs `f` with this thread's core, if there is one.
#[inline]
pub(crate) fn try_with_core<R>(f: impl FnOnce(&Core) -> R) -> Option<R> {
    let ptr = CURRENT.try_with(Cell::get).ok()?;
    // SAFETY: a non-null pointer was set by an `Enter` that is still alive on this
    // thread's stack and keeps the core alive through its `Rc`.
    (!ptr.is_null()).then(|| f(unsafe { &*ptr }))
}

/// Runs `f` with this thread's core; panics with a clear message outside a runtime.
/// (Written flat, not through `try_with_core`: every I/O poll comes here, and each
/// layer of closures and `Option`s around `f` costs moves of what `f` captures.)
#[inline]
pub(crate) fn with_core<R>(f: impl FnOnce(&Core) -> R) -> R {
    let ptr = current();
    // SAFETY: `current` returns a pointer set by an `Enter` that is still alive on this
    // thread's stack and keeps the core alive through its `Rc`.
    f(unsafe { &*ptr })
}

/// This thread's core, for a call that takes a large value by move (a spawn's future:
/// through `with_core` the closure would hold one more copy of it). Panics outside a
/// runtime. Not to be kept: the reference is only good until the caller returns.
#[inline(always)]
pub(crate) fn current_core<'a>() -> &'a Core {
    // SAFETY: as in `with_core`; the `Enter` that set the pointer outlives every call
    // made from inside the runtime, and callers use the reference within their call.
    unsafe { &*current() }
}

/// This thread's core; panics outside a runtime.
#[inline(always)]
fn current() -> *const Core {
    let ptr = CURRENT.with(Cell::get);
    if ptr.is_null() {
        outside();
    }
    ptr
}

/// `with_core` outside a runtime.
#[cold]
#[inline(never)]
#[track_caller]
fn outside() -> ! {
    panic!("{OUTSIDE}")
}

/// Runs `f` with the current core's driver. Panics outside a runtime, or if called
/// from inside another `with_driver` (a waker must never call back into the driver).
#[inline]
pub(crate) fn with_driver<R>(f: impl FnOnce(&mut Driver) -> R) -> R {
    // Not through `with_core`: `f` would be moved into another closure (a copy of all
    // it captures, such as a send's buffer, on every call).
    // SAFETY: as in `with_core`.
    let core = unsafe { &*current() };
    f(&mut core.driver.borrow_mut())
}

/// Runs `f` with the current core's driver if there is a core and its driver is free
/// (a drop during a turn finds it busy); `None` otherwise.
#[inline]
pub(crate) fn try_with_driver<R>(f: impl FnOnce(&mut Driver) -> R) -> Option<R> {
    try_with_core(|c| c.driver.try_borrow_mut().ok().map(|mut d| f(&mut d))).flatten()
}

/// Runs `f` with the current core's timers. Panics outside a runtime.
#[inline]
pub(crate) fn with_timers<R>(f: impl FnOnce(&mut Timers) -> R) -> R {
    with_core(|c| f(&mut c.timers.borrow_mut()))
}

/// Runs `f` with the current core's timers if there is a core; `None` otherwise.
#[inline]
pub(crate) fn try_with_timers<R>(f: impl FnOnce(&mut Timers) -> R) -> Option<R> {
    try_with_core(|c| f(&mut c.timers.borrow_mut()))
}

/// Makes `core` this thread's current core until the guard drops.
pub(crate) struct Enter {
    prev: *const Core,
    /// Keeps the core alive while `CURRENT` points at it.
    _core: Rc<Core>,
}

impl Enter {
    pub(crate) fn new(core: Rc<Core>) -> Enter {
        core.timers.borrow_mut().forget_now(); // the thread may have been away
        let prev = CURRENT.with(|c| c.replace(Rc::as_ptr(&core)));
        Enter { prev, _core: core }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(self.prev));
    }
}
