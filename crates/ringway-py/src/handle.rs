//! `Handle` and `TimerHandle`: a callback, its arguments and the `contextvars.Context`
//! to run it in, as returned by `call_soon` and `call_later`.
//!
//! The arguments are stored as the tuple `call_soon` received and the callback is called
//! with vectorcall straight from that tuple inside `PyContext_Enter`/`PyContext_Exit`:
//! no bound `Context.run` method and no argument tuple are built per call. Cancelling
//! drops the callback and its arguments at once (so a cancelled long timer holds no
//! memory) and, for a timer, tells the loop's heap, which drops the entry lazily.
//!
//! A handle holds its loop as a Python object and tells it of a timer's cancel through
//! asyncio's own hook (`loop._timer_handle_cancelled(handle)`), so this module does
//! not name the loop's native type: the loop depends on handles, not the reverse.

use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::gil_cell::GilCell;

struct Callback {
    func: Py<PyAny>,
    args: Py<PyTuple>,
    /// `None`: run in whatever context is current (the loop's own internal callbacks).
    context: Option<Py<PyAny>>,
}

/// A scheduled callback (asyncio's `Handle`). Weakly referenceable, as asyncio's
/// handles are (code keeps them in `WeakValueDictionary`s and `WeakSet`s).
#[pyclass(frozen, subclass, weakref, module = "ringway._ringway")]
pub struct Handle {
    callback: GilCell<Option<Callback>>,
    cancelled: AtomicBool,
    /// The loop (a `ringway.Loop`).
    pub(crate) loop_: Py<PyAny>,
    /// Where the handle was created, in debug mode (`_source_traceback`).
    source_traceback: Option<Py<PyAny>>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Handle {
    /// A handle for `func(*args)` in `context`.
    pub fn new(
        loop_: Py<PyAny>,
        func: Py<PyAny>,
        args: Py<PyTuple>,
        context: Option<Py<PyAny>>,
        source_traceback: Option<Py<PyAny>>,
    ) -> Handle {
        Handle {
            callback: GilCell::new(Some(Callback {
                func,
                args,
                context,
            })),
            cancelled: AtomicBool::new(false),
            loop_,
            source_traceback,
        }
    }

    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Marks the handle cancelled and drops its callback; false if it already was.
    pub(crate) fn mark_cancelled(&self, py: Python<'_>) -> bool {
        if self.cancelled.swap(true, Ordering::Relaxed) {
            return false;
        }
        let old = self.callback.borrow_mut(py).take();
        drop(old);
        true
    }

    /// Runs the callback. Errors other than `SystemExit`/`KeyboardInterrupt` go to the
    /// loop's exception handler (as asyncio's `Handle._run` does); those two propagate.
    pub fn run(slf: &Bound<'_, Handle>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (func, args, context) = {
            let cb = this.callback.borrow(py);
            let Some(cb) = cb.as_ref() else {
                return Ok(()); // cancelled meanwhile
            };
            (
                cb.func.clone_ref(py),
                cb.args.clone_ref(py),
                cb.context.as_ref().map(|c| c.clone_ref(py)),
            )
        };
        match call_in_context(py, &func, &args, context.as_ref()) {
            Ok(()) => Ok(()),
            Err(e) => {
                if e.is_instance_of::<PySystemExit>(py)
                    || e.is_instance_of::<PyKeyboardInterrupt>(py)
                {
                    return Err(e);
                }
                let loop_ = this.loop_.bind(py);
                loop_.call_method1(
                    pyo3::intern!(py, "_ringway_callback_error"),
                    (slf, e.into_value(py)),
                )?;
                Ok(())
            }
        }
    }
}

/// Calls `func(*args)` with `context` entered (if given), by vectorcall from the tuple's
/// own item array.
pub fn call_in_context(
    py: Python<'_>,
    func: &Py<PyAny>,
    args: &Py<PyTuple>,
    context: Option<&Py<PyAny>>,
) -> PyResult<()> {
    // SAFETY: all pointers are live Python objects we hold references to; `args` is a
    // tuple, so its item array holds `len` valid object pointers; the GIL is held.
    unsafe {
        if let Some(ctx) = context {
            if ffi::PyContext_Enter(ctx.as_ptr()) < 0 {
                return Err(PyErr::fetch(py));
            }
        }
        let tuple = args.as_ptr();
        let n = ffi::PyTuple_GET_SIZE(tuple) as usize;
        let items = (*(tuple as *mut ffi::PyTupleObject)).ob_item.as_ptr();
        let res = ffi::PyObject_Vectorcall(func.as_ptr(), items, n, ptr::null_mut());
        // Take the callback's error before leaving the context: `PyContext_Exit` must
        // not run with an exception set.
        let err = if res.is_null() {
            Some(PyErr::fetch(py))
        } else {
            ffi::Py_DECREF(res);
            None
        };
        if let Some(ctx) = context {
            if ffi::PyContext_Exit(ctx.as_ptr()) < 0 {
                let exit_err = PyErr::fetch(py);
                return Err(err.unwrap_or(exit_err));
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl Handle {
    /// Cancels the callback; it will not run.
    fn cancel(slf: &Bound<'_, Self>) {
        slf.get().mark_cancelled(slf.py());
    }

    /// True if the handle was cancelled.
    fn cancelled(&self) -> bool {
        self.is_cancelled()
    }

    /// The context the callback runs in.
    fn get_context(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.callback
            .borrow(py)
            .as_ref()
            .and_then(|c| c.context.as_ref().map(|x| x.clone_ref(py)))
    }

    /// Runs the callback now (asyncio's `Handle._run`).
    fn _run(slf: &Bound<'_, Self>) -> PyResult<()> {
        Handle::run(slf)
    }

    /// The callback (`None` once cancelled), as asyncio's `Handle._callback`.
    #[getter]
    fn _callback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.callback
            .borrow(py)
            .as_ref()
            .map(|c| c.func.clone_ref(py))
    }

    /// The arguments (`None` once cancelled), as asyncio's `Handle._args`.
    #[getter]
    fn _args(&self, py: Python<'_>) -> Option<Py<PyTuple>> {
        self.callback
            .borrow(py)
            .as_ref()
            .map(|c| c.args.clone_ref(py))
    }

    /// The loop the handle belongs to.
    #[getter]
    fn _loop(&self, py: Python<'_>) -> Py<PyAny> {
        self.loop_.clone_ref(py)
    }

    /// Where the handle was created (debug mode only).
    #[getter]
    fn _source_traceback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.source_traceback.as_ref().map(|t| t.clone_ref(py))
    }

    #[getter]
    fn _cancelled(&self) -> bool {
        self.is_cancelled()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let this = slf.get();
        let name = slf.get_type().qualname()?;
        let mut info = vec![name.to_string()];
        if this.is_cancelled() {
            info.push("cancelled".into());
        }
        if let Some(when) = slf.cast::<TimerHandle>().ok().map(|t| t.get().when) {
            info.push(format!("when={when}"));
        }
        if let Some((func, args)) = this
            .callback
            .borrow(py)
            .as_ref()
            .map(|c| (c.func.clone_ref(py), c.args.clone_ref(py)))
        {
            let helpers = py.import("asyncio.format_helpers")?;
            let src = helpers.call_method1("_format_callback_source", (func, args))?;
            info.push(src.str()?.to_string());
        }
        Ok(format!("<{}>", info.join(" ")))
    }
}

/// A callback scheduled for a point in time (asyncio's `TimerHandle`).
#[pyclass(frozen, extends = Handle, module = "ringway._ringway")]
pub struct TimerHandle {
    pub(crate) when: f64,
    /// Still in the loop's heap (not fired, not cancelled): a cancel must be counted.
    pub(crate) scheduled: AtomicBool,
}

impl TimerHandle {
    /// Cancelled (no longer due): what the loop's heap asks of its entries.
    pub(crate) fn is_cancelled_timer(&self, _py: Python<'_>) -> bool {
        !self.scheduled.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerHandle")
            .field("when", &self.when)
            .finish()
    }
}

#[pymethods]
impl TimerHandle {
    /// The absolute time (on `loop.time()`'s clock) the callback is due.
    fn when(&self) -> f64 {
        self.when
    }

    /// Cancels the timer; the loop drops it from its heap lazily (O(1) here).
    fn cancel(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let base = slf.as_super().get();
        if base.mark_cancelled(py) && slf.get().scheduled.swap(false, Ordering::Relaxed) {
            base.loop_
                .bind(py)
                .call_method1(pyo3::intern!(py, "_timer_handle_cancelled"), (slf,))?;
        }
        Ok(())
    }

    #[getter]
    fn _when(&self) -> f64 {
        self.when
    }

    #[getter]
    fn _scheduled(&self) -> bool {
        self.scheduled.load(Ordering::Relaxed)
    }

    /// asyncio's: the hash of `when` (equal timers hash alike).
    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.when.into_pyobject(py)?.hash()
    }

    /// asyncio's: equal if due at the same time with an equal callback, equal
    /// arguments and the same cancelled state.
    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let Ok(other) = other.cast::<TimerHandle>() else {
            return Ok(py.NotImplemented());
        };
        if slf.is(other) {
            return Ok(true.into_pyobject(py)?.to_owned().into_any().unbind());
        }
        let (a, b) = (slf.as_super().get(), other.as_super().get());
        let parts = |h: &Handle| {
            h.callback
                .borrow(py)
                .as_ref()
                .map(|c| (c.func.clone_ref(py), c.args.clone_ref(py).into_any()))
        };
        let mut eq = slf.get().when == other.get().when && a.is_cancelled() == b.is_cancelled();
        if eq {
            eq = match (parts(a), parts(b)) {
                (Some((fa, aa)), Some((fb, ab))) => {
                    fa.bind(py).eq(fb.bind(py))? && aa.bind(py).eq(ab.bind(py))?
                }
                (None, None) => true,
                _ => false,
            };
        }
        Ok(eq.into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __lt__(&self, other: PyRef<'_, TimerHandle>) -> bool {
        self.when < other.when
    }
    fn __le__(&self, other: PyRef<'_, TimerHandle>) -> bool {
        self.when <= other.when
    }
    fn __gt__(&self, other: PyRef<'_, TimerHandle>) -> bool {
        self.when > other.when
    }
    fn __ge__(&self, other: PyRef<'_, TimerHandle>) -> bool {
        self.when >= other.when
    }
}
