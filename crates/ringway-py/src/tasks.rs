//! `loop.create_task(coro)` and `loop.create_future()` without a Python frame (the
//! former in its common case).
//!
//! asyncio's `BaseEventLoop.create_task` is Python: a frame for it, one for
//! `_check_closed`, and `tasks.Task(...)` then calls back into `loop.get_debug()` (a
//! third). An ASGI server makes a task per request (uvicorn: `loop.create_task(
//! cycle.run_asgi(app))`), so these frames are a cost per request that uvloop, whose
//! `create_task` is compiled, does not pay. The common case (loop open, not in debug
//! mode, no task factory, no keywords but `name` and `context`) is what every version
//! from 3.11 to 3.14 does the same way: `tasks.Task(coro, loop=loop, name=name,
//! context=context)`. Everything else (a closed loop's error, debug mode's traceback
//! trimming, a task factory, 3.14's `eager_start`) goes to the stdlib's own method, so
//! each Python keeps its own behaviour there. `create_future` is
//! `futures.Future(loop=loop)` on every version (aiohttp makes one per request).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

/// `asyncio.tasks`, imported once; `Task` is read from it at each call, as the stdlib
/// does (code that replaces `asyncio.tasks.Task` is honoured).
fn tasks_module(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static TASKS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    TASKS
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("asyncio.tasks")?.into_any().unbind())
        })
        .map(|m| m.bind(py))
}

/// `asyncio.futures`, imported once; `Future` is read from it at each call.
fn futures_module(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static FUTURES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    FUTURES
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("asyncio.futures")?.into_any().unbind())
        })
        .map(|m| m.bind(py))
}

/// `loop.create_future()`: `futures.Future(loop=loop)`, as asyncio's.
pub(crate) fn create_future<'py>(loop_: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = loop_.py();
    let future = futures_module(py)?.getattr(intern!(py, "Future"))?;
    let kw = PyDict::new(py);
    kw.set_item(intern!(py, "loop"), loop_)?;
    future.call((), Some(&kw))
}

/// `asyncio.base_events.BaseEventLoop.create_task`, the stdlib's own method.
fn stdlib_create_task(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static METHOD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    METHOD
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(
                py.import("asyncio.base_events")?
                    .getattr("BaseEventLoop")?
                    .getattr("create_task")?
                    .unbind(),
            )
        })
        .map(|m| m.bind(py))
}

/// `create_task`'s keywords in its common case: each `None` when absent or `None`.
struct CommonKeywords<'py> {
    name: Option<Bound<'py, PyAny>>,
    context: Option<Bound<'py, PyAny>>,
}

/// The keywords the common case passes on, if `kwargs` has no others.
fn common_keywords<'py>(
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<CommonKeywords<'py>>> {
    let Some(kwargs) = kwargs else {
        return Ok(Some(CommonKeywords {
            name: None,
            context: None,
        }));
    };
    let py = kwargs.py();
    let (mut name, mut context, mut known) = (None, None, 0);
    if let Some(v) = kwargs.get_item(intern!(py, "name"))? {
        known += 1;
        name = Some(v).filter(|v| !v.is_none());
    }
    if let Some(v) = kwargs.get_item(intern!(py, "context"))? {
        known += 1;
        context = Some(v).filter(|v| !v.is_none());
    }
    Ok((known == kwargs.len()).then_some(CommonKeywords { name, context }))
}

/// `loop.create_task(coro, **kwargs)` for `loop`, whose state says whether it is
/// `closed` or in `debug` mode.
pub(crate) fn create_task<'py>(
    loop_: &Bound<'py, PyAny>,
    closed: bool,
    debug: bool,
    coro: &Bound<'py, PyAny>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = loop_.py();
    let plain = !closed
        && !debug
        && loop_
            .getattr(intern!(py, "_task_factory"))
            .is_ok_and(|f| f.is_none());
    if plain {
        if let Some(CommonKeywords { name, context }) = common_keywords(kwargs)? {
            let task = tasks_module(py)?.getattr(intern!(py, "Task"))?;
            let kw = PyDict::new(py);
            kw.set_item(intern!(py, "loop"), loop_)?;
            if let Some(n) = name {
                kw.set_item(intern!(py, "name"), n)?;
            }
            if let Some(c) = context {
                kw.set_item(intern!(py, "context"), c)?;
            }
            return task.call((coro,), Some(&kw));
        }
    }
    let args = PyTuple::new(py, [loop_, coro])?;
    stdlib_create_task(py)?.call(args, kwargs)
}
