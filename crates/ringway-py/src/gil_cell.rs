//! A `RefCell` that Python objects may hold: every access proves the GIL is held.
//!
//! pyo3 wants `#[pyclass]` types to be `Send + Sync` because Python objects may be
//! touched from any thread. The loop's state is not thread-safe (the driver and its
//! buffer pool use `Rc`), but every access to it happens with the GIL held, which
//! serialises all threads, so a `RefCell` behind the GIL is sound. Each borrow takes a
//! `Python<'_>` token as the proof. A second borrow (a Python callback re-entering the
//! object, or another thread calling in while the loop waits in the kernel without the
//! GIL) is reported as a Python `RuntimeError`, never undefined behaviour.

use std::cell::{Ref, RefCell, RefMut};
use std::fmt;

use pyo3::exceptions::PyRuntimeError;
use pyo3::{PyResult, Python};

/// Interior mutability for state that is only ever touched with the GIL held.
pub struct GilCell<T>(RefCell<T>);

// SAFETY: every borrow requires a `Python<'_>` token, i.e. the GIL, so no two threads
// can hold borrows at once; the GIL's release/acquire orders their accesses. Values
// that are not `Send` (`Rc`) are therefore only ever used by one thread at a time.
unsafe impl<T> Sync for GilCell<T> {}
// SAFETY: as above: moving the cell to another thread only matters for accesses,
// which all happen under the GIL.
unsafe impl<T> Send for GilCell<T> {}

impl<T> GilCell<T> {
    /// Wraps `value`.
    pub fn new(value: T) -> Self {
        GilCell(RefCell::new(value))
    }

    /// Borrows mutably; panics on a re-entrant borrow (use in code that calls no Python).
    pub fn borrow_mut<'a>(&'a self, _py: Python<'_>) -> RefMut<'a, T> {
        self.0.borrow_mut()
    }

    /// Borrows shared; panics if mutably borrowed.
    pub fn borrow<'a>(&'a self, _py: Python<'_>) -> Ref<'a, T> {
        self.0.borrow()
    }

    /// Borrows mutably, or raises `RuntimeError` naming `what` if the value is in use
    /// (a re-entrant call from a callback, or a call from another thread while the loop
    /// waits in the kernel).
    pub fn try_borrow_mut<'a>(&'a self, _py: Python<'_>, what: &str) -> PyResult<RefMut<'a, T>> {
        self.0.try_borrow_mut().map_err(|_| {
            PyRuntimeError::new_err(format!(
                "{what} is busy: called re-entrantly or from another thread while the loop runs"
            ))
        })
    }
}

impl<T> fmt::Debug for GilCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GilCell(..)")
    }
}
