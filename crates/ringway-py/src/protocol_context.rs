//! The `contextvars` context a transport's protocol callbacks run in.
//!
//! asyncio runs a protocol's callbacks in the context of the call that made its
//! transport (for a server's connections: the context that started the server), and
//! tracing, structured logging and request-scoped state rely on it. The context is
//! copied once, when the transport (or listener) is made; every callback the loop makes
//! into the protocol enters it, as uvloop does. Entering is re-entrant here: a callback
//! that writes and so makes the transport call `pause_writing` is already inside it
//! (`PyContext_Enter` refuses a context that is entered), so only the outermost call
//! enters and leaves.

use std::sync::atomic::{AtomicU32, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

/// A copy of the context current when a transport was made.
pub(crate) struct ProtocolContext {
    ctx: Py<PyAny>,
    /// How many calls through [`run`](Self::run) are in progress (read and written
    /// only with the GIL held; atomic because the pyclasses holding it are `Sync`).
    depth: AtomicU32,
}

impl std::fmt::Debug for ProtocolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProtocolContext")
    }
}

impl ProtocolContext {
    /// Copies the current context.
    pub(crate) fn capture(py: Python<'_>) -> PyResult<ProtocolContext> {
        // SAFETY: the GIL is held; PyContext_CopyCurrent returns a new reference or NULL
        // with an exception set.
        let ctx = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyContext_CopyCurrent())? };
        Ok(ProtocolContext {
            ctx: ctx.unbind(),
            depth: AtomicU32::new(0),
        })
    }

    /// Runs `f` (which calls into the protocol) inside the context.
    pub(crate) fn run<R>(&self, py: Python<'_>, f: impl FnOnce() -> PyResult<R>) -> PyResult<R> {
        let depth = self.depth.load(Ordering::Relaxed);
        if depth == 0 {
            // SAFETY: the GIL is held and `ctx` is a live context object; an error
            // leaves an exception set, which `fetch` takes.
            if unsafe { ffi::PyContext_Enter(self.ctx.as_ptr()) } < 0 {
                return Err(PyErr::fetch(py));
            }
        }
        self.depth.store(depth + 1, Ordering::Relaxed);
        let r = f();
        self.depth.store(depth, Ordering::Relaxed);
        if depth == 0 {
            // SAFETY: as above; `f`'s error, if any, is already fetched (a `PyErr`), so
            // no exception is set while the context is left.
            if unsafe { ffi::PyContext_Exit(self.ctx.as_ptr()) } < 0 {
                let exit_err = PyErr::fetch(py);
                return r.and(Err(exit_err));
            }
        }
        r
    }
}
