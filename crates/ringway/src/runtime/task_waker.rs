//! The waker of a task spawned on a core.
//!
//! `Waker::from(Arc<TaskHeader>)` goes through std's `Wake` shim and then the header's
//! dynamic `Schedule` hook: two calls for every wake-up, and every I/O completion is one.
//! This vtable does the common case inline (a wake on the task's own core, from the
//! driver's turn: straight to the run queue) and hands every other wake to the hook,
//! which behaves exactly as before.

use std::mem::ManuallyDrop;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::context::try_with_core;
use super::task::TaskHeader;

/// The waker of the task whose header this is.
pub(super) fn task_waker(header: Arc<TaskHeader>) -> Waker {
    let raw = RawWaker::new(Arc::into_raw(header).cast(), &VTABLE);
    // SAFETY: the data pointer is one strong count of an `Arc<TaskHeader>`, and the
    // vtable's functions treat it so: `clone` adds a count, `drop` and `wake` give one
    // back, `wake_by_ref` borrows. `TaskHeader` is `Send + Sync`, as wakers must be.
    unsafe { Waker::from_raw(raw) }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

unsafe fn clone(data: *const ()) -> RawWaker {
    // SAFETY: `data` is a live `Arc<TaskHeader>` pointer (see `task_waker`).
    unsafe { Arc::increment_strong_count(data.cast::<TaskHeader>()) };
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake(data: *const ()) {
    // SAFETY: as in `clone`; this waker's count is given back after the wake.
    unsafe {
        wake_by_ref(data);
        drop_waker(data);
    }
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: `data` is a live `Arc<TaskHeader>` pointer (see `task_waker`).
    let header = unsafe { &*data.cast::<TaskHeader>() };
    if header.notified.swap(true, Ordering::AcqRel) {
        return; // queued already
    }
    let scheduler = header.scheduler_addr as *const ();
    if try_with_core(|core| core.run_local(scheduler, header)) == Some(true) {
        return;
    }
    // SAFETY: borrowed for the call, never dropped here: the waker keeps its count.
    let header = ManuallyDrop::new(unsafe { Arc::from_raw(data.cast::<TaskHeader>()) });
    header.scheduler.schedule(&header);
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: gives back the count this waker held.
    drop(unsafe { Arc::from_raw(data.cast::<TaskHeader>()) });
}
