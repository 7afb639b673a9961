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

/// The waker of the task whose header is at `header`, borrowed: it holds no count of
/// its own (a clone made from it takes one, as any), so it is never dropped. The core
/// makes one on the stack for each poll rather than keep one per task: sixteen bytes of
/// every task's state that would be read from memory at every poll.
///
/// # Safety
///
/// `header` is the address of a live `Arc<TaskHeader>`'s header, kept alive by a count
/// held elsewhere for as long as the waker (not its clones) is used.
pub(super) unsafe fn borrowed_task_waker(header: *const TaskHeader) -> ManuallyDrop<Waker> {
    let raw = RawWaker::new(header.cast(), &VTABLE);
    // SAFETY: the data pointer is that of a live `Arc<TaskHeader>` (the caller's
    // promise) and the vtable treats it so: `clone` adds a count, `wake_by_ref` borrows;
    // `drop` and `wake`, which give a count back, never run on this waker, which is
    // `ManuallyDrop` and only lent (`Context` hands out `&Waker`). `TaskHeader` is
    // `Send + Sync`, as wakers must be.
    ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

unsafe fn clone(data: *const ()) -> RawWaker {
    // SAFETY: `data` is a live `Arc<TaskHeader>` pointer (see `borrowed_task_waker`).
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
    // SAFETY: `data` is a live `Arc<TaskHeader>` pointer (see `borrowed_task_waker`).
    let header = unsafe { &*data.cast::<TaskHeader>() };
    if header.notified.swap(true, Ordering::AcqRel) {
        return; // queued already
    }
    let scheduler = header.scheduler_addr as *const ();
    if try_with_core(|core| core.run_local(scheduler, header)) == Some(true) {
        return;
    }
    // SAFETY: the caller's promise, passed on.
    unsafe { schedule_elsewhere(data) }
}

/// A wake that is not a push onto this thread's core: the header's hook sees to it.
/// Out of line (and last in `wake_by_ref`, so a tail call): the common wake then needs
/// no stack frame.
///
/// # Safety
///
/// As for `wake_by_ref`: `data` is a live `Arc<TaskHeader>` pointer.
#[cold]
#[inline(never)]
unsafe fn schedule_elsewhere(data: *const ()) {
    // SAFETY: borrowed for the call, never dropped here: the waker keeps its count.
    let header = ManuallyDrop::new(unsafe { Arc::from_raw(data.cast::<TaskHeader>()) });
    header.scheduler.schedule(&header);
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: gives back the count this waker held.
    drop(unsafe { Arc::from_raw(data.cast::<TaskHeader>()) });
}
