//! `LoopCore`: the native base class of `ringway.Loop`. It owns the ready queue, the
//! timer heap, the driver and the table of I/O sources, and runs one loop iteration per
//! `_run_once` call:
//!
//! 1. flush: every transport written to in the previous iteration sends its queue as
//!    one vectored send (an SQE on io_uring, a `sendmsg` on epoll), and readiness
//!    watches whose callbacks ran are re-armed;
//! 2. one driver turn: one `io_uring_enter` (or `epoll_wait`) that submits all of that
//!    and waits until the next timer, unless callbacks are ready; the GIL is released
//!    only for this wait;
//! 3. asyncio's order: the callbacks that were ready before the wait (FIFO), then every
//!    completion (receives go straight to `data_received` /
//!    `get_buffer`+`buffer_updated`, accepts to the server, readiness to the
//!    `add_reader`/`add_writer` callbacks: no Future, no Handle per I/O event), then
//!    the timers that were due right after the wait. What these schedule runs in the
//!    next iteration.
//!
//! `call_soon_threadsafe` queues like `call_soon` (under the GIL) and writes the
//! driver's eventfd only if the loop is asleep.

use std::collections::{HashMap, VecDeque};
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::clock;
use crate::gil_cell::GilCell;
use crate::handle::{Handle, TimerHandle};
use crate::io_driver::{IoDriver, IoEvent, IoOp, LoopWaker, OpKey};
use crate::io_source::IoSource;
use crate::sources::{token, untoken, Kind, SourceId, Sources};
use crate::timer_heap::TimerHeap;

/// The longest single wait (asyncio's `MAXIMUM_SELECT_TIMEOUT`).
const MAX_WAIT: f64 = 24.0 * 3600.0;

/// An I/O source that completions are routed to (a transport or a listener).
pub(crate) type Source = Rc<dyn IoSource>;

/// One direction of an `add_reader`/`add_writer` registration.
struct WatchDir {
    handle: Py<Handle>,
    op: Option<(OpKey, u32)>,
    /// The callback ran since the last report: poll again before the next wait (the
    /// one-shot poll gives asyncio's level-triggered semantics).
    rearm: bool,
}

#[derive(Default)]
struct Watch {
    read: Option<WatchDir>,
    write: Option<WatchDir>,
}

impl Watch {
    fn dir(&mut self, write: bool) -> &mut Option<WatchDir> {
        if write {
            &mut self.write
        } else {
            &mut self.read
        }
    }
}

pub(crate) struct LoopState {
    ready: VecDeque<Py<Handle>>,
    timers: TimerHeap<Py<TimerHandle>>,
    sources: Sources<Source>,
    watches: HashMap<RawFd, Watch>,
    watch_gen: u32,
    /// Watches to arm before the next wait: new ones, and those whose callbacks ran.
    rearm: Vec<(RawFd, bool)>,
    /// Watches that reported: armed again once their callbacks (queued for the next
    /// iteration) have run, so the poll sees what the callback left, as asyncio's
    /// `select` after the callbacks does (armed before, it reported bytes the callback
    /// was about to read, and the callback then ran once more for nothing).
    rearm_after_run: Vec<(RawFd, bool)>,
    /// Sources to flush before the next wait.
    dirty: Vec<SourceId>,
    /// Emptied vectors kept for their capacity (a flush swaps them in and out).
    rearm_spare: Vec<(RawFd, bool)>,
    dirty_spare: Vec<SourceId>,
    /// The event vector not in the driver's hands (swapped each dispatch).
    events: Vec<IoEvent>,
    /// Events left undispatched when a callback raised `KeyboardInterrupt`/`SystemExit`.
    leftover: Vec<IoEvent>,
    stopping: bool,
    closed: bool,
    debug: bool,
    /// The last iteration made a driver turn.
    polled_last: bool,
    /// Sends started by transports (one `sendmsg` or one vectored-send operation each).
    sends: u64,
    /// `read` calls of transports in direct-read mode (large messages).
    direct_reads: u64,
}

/// How other threads wake the loop. `call_soon_threadsafe` pushes to the ready queue
/// itself (it holds the GIL, and the loop never keeps the queue borrowed while it waits
/// without the GIL), then writes the eventfd only if the loop announced that it sleeps.
/// The loop announces it while holding the GIL, after it last looked at the queue, so
/// no wake-up is lost.
struct Wakeup {
    sleeping: AtomicBool,
    waker: LoopWaker,
}

/// The native half of `ringway.Loop`.
#[pyclass(frozen, subclass, module = "ringway._ringway")]
pub struct LoopCore {
    pub(crate) state: GilCell<LoopState>,
    io: GilCell<Option<IoDriver>>,
    wakeup: Arc<Wakeup>,
    clock_resolution: f64,
    backend_name: &'static str,
    backend_description: String,
    backend_fallbacks: Vec<String>,
}

impl std::fmt::Debug for LoopCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopCore")
            .field("backend", &self.backend_description)
            .finish()
    }
}

fn io_err(e: std::io::Error) -> PyErr {
    PyErr::from(e)
}

impl LoopCore {
    /// Runs `f` on the driver; fails if the loop is closed or the driver is in use.
    pub(crate) fn with_io<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut IoDriver) -> R,
    ) -> PyResult<R> {
        let mut io = self.io.try_borrow_mut(py, "the loop's driver")?;
        match io.as_mut() {
            Some(d) => Ok(f(d)),
            None => Err(PyRuntimeError::new_err("Event loop is closed")),
        }
    }

    /// True on io_uring.
    pub(crate) fn is_uring(&self) -> bool {
        self.backend_name == "uring"
    }

    /// Registers a source; its operations carry tokens made from the returned id.
    pub(crate) fn register(&self, py: Python<'_>, src: Source) -> SourceId {
        self.state.borrow_mut(py).sources.insert(src)
    }

    /// Forgets a source (late completions for it are dropped).
    pub(crate) fn unregister(&self, py: Python<'_>, id: SourceId) {
        let old = self.state.borrow_mut(py).sources.remove(id);
        drop(old);
    }

    /// Queues a handle.
    pub(crate) fn push_ready(&self, py: Python<'_>, h: Py<Handle>) {
        self.state.borrow_mut(py).ready.push_back(h);
    }

    /// Schedules `func(*args)` for the next iteration, in the current context (the
    /// loop's own callbacks: no context copy).
    pub(crate) fn call_soon_internal(
        slf: &Py<LoopCore>,
        py: Python<'_>,
        func: Py<PyAny>,
        args: Py<PyTuple>,
    ) -> PyResult<()> {
        let owner = slf.clone_ref(py).into_any();
        let h = Py::new(py, Handle::new(owner, func, args, None, None))?;
        slf.get().push_ready(py, h);
        Ok(())
    }

    /// Puts a source on the list flushed before the next wait.
    pub(crate) fn mark_dirty(&self, py: Python<'_>, id: SourceId) {
        self.state.borrow_mut(py).dirty.push(id);
    }

    /// Counts `n` sends by a transport (for tests: sends per response).
    pub(crate) fn count_sends(&self, py: Python<'_>, n: u64) {
        if n > 0 {
            self.state.borrow_mut(py).sends += n;
        }
    }

    /// Counts one direct `read` by a transport (for tests: how large messages came in).
    pub(crate) fn count_direct_read(&self, py: Python<'_>) {
        self.state.borrow_mut(py).direct_reads += 1;
    }

    /// The debug flag.
    pub(crate) fn debug(&self, py: Python<'_>) -> bool {
        self.state.borrow(py).debug
    }

    /// Pushes queued submissions to the kernel now (one non-waiting driver turn); the
    /// completions it reaps wait for the next dispatch. Used before an fd is closed
    /// right after a cancel, so the kernel never sees a recycled fd number.
    pub(crate) fn submit_now(&self, py: Python<'_>) -> PyResult<()> {
        match self.with_io(py, |io| io.turn(Some(Duration::ZERO))) {
            Ok(r) => r.map_err(io_err),
            Err(_) => Ok(()), // closed or busy: nothing queued to push
        }
    }

    fn new_handle(
        slf: &Bound<'_, Self>,
        callback: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        context: Option<&Bound<'_, PyAny>>,
        method: &str,
    ) -> PyResult<Handle> {
        let py = slf.py();
        let this = slf.get();
        let debug = {
            let st = this.state.borrow(py);
            if st.closed {
                return Err(PyRuntimeError::new_err("Event loop is closed"));
            }
            st.debug
        };
        if !callback.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "a callable object was expected by {method}(), got {}",
                callback.repr()?
            )));
        }
        let mut tb = None;
        if debug {
            slf.call_method1(
                pyo3::intern!(py, "_ringway_debug_checks"),
                (callback, method),
            )?;
            tb = Some(
                slf.call_method0(pyo3::intern!(py, "_ringway_extract_stack"))?
                    .unbind(),
            );
        }
        let context = match context {
            Some(c) if !c.is_none() => c.clone().unbind(),
            // SAFETY: the GIL is held; PyContext_CopyCurrent returns a new reference
            // or NULL with an exception set.
            _ => unsafe {
                Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyContext_CopyCurrent())?.unbind()
            },
        };
        Ok(Handle::new(
            slf.clone().into_any().unbind(),
            callback.clone().unbind(),
            args.clone().unbind(),
            Some(context),
            tb,
        ))
    }

    fn schedule_timer(
        slf: &Bound<'_, Self>,
        when: f64,
        callback: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        context: Option<&Bound<'_, PyAny>>,
        method: &str,
    ) -> PyResult<Py<TimerHandle>> {
        let py = slf.py();
        if when.is_nan() {
            return Err(PyTypeError::new_err("when must be a number, not NaN"));
        }
        let base = Self::new_handle(slf, callback, args, context, method)?;
        let init = PyClassInitializer::from(base).add_subclass(TimerHandle {
            when,
            scheduled: AtomicBool::new(true),
        });
        let timer = Py::new(py, init)?;
        slf.get()
            .state
            .borrow_mut(py)
            .timers
            .push(when, timer.clone_ref(py));
        Ok(timer)
    }

    /// Runs the first `n` ready handles (those queued before this iteration's wait).
    fn run_ready(slf: &Bound<'_, Self>, n: usize, debug: bool) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        for _ in 0..n {
            let Some(h) = this.state.borrow_mut(py).ready.pop_front() else {
                break;
            };
            Self::run_handle(slf, h.into_bound(py), debug)?;
        }
        Ok(())
    }

    fn run_handle(slf: &Bound<'_, Self>, h: Bound<'_, Handle>, debug: bool) -> PyResult<()> {
        if h.get().is_cancelled() {
            return Ok(());
        }
        if debug {
            slf.call_method1(pyo3::intern!(slf.py(), "_ringway_run_debug"), (&h,))?;
            Ok(())
        } else {
            Handle::run(&h)
        }
    }

    fn flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (mut rearm, mut dirty) = {
            let mut st = this.state.borrow_mut(py);
            let st = &mut *st;
            if st.rearm.is_empty() && st.dirty.is_empty() {
                return Ok(());
            }
            (
                std::mem::replace(&mut st.rearm, std::mem::take(&mut st.rearm_spare)),
                std::mem::replace(&mut st.dirty, std::mem::take(&mut st.dirty_spare)),
            )
        };
        let mut result = Ok(());
        for &(fd, write) in &rearm {
            if let Err(e) = this.arm_watch(py, fd, write) {
                result = Err(e);
                break;
            }
        }
        let mut done = 0;
        if result.is_ok() {
            for &id in &dirty {
                done += 1;
                // A source that finished meanwhile has nothing left to send.
                let Some(src) = this.source(py, id) else {
                    continue;
                };
                if let Err(e) = src.flush(py) {
                    result = Err(e);
                    break;
                }
            }
        }
        let mut st = this.state.borrow_mut(py);
        if result.is_err() {
            // Interrupted (KeyboardInterrupt from a flow-control callback): the rest
            // are flushed next time.
            st.dirty.extend(dirty.drain(done..));
        }
        rearm.clear();
        dirty.clear();
        st.rearm_spare = rearm;
        st.dirty_spare = dirty;
        result
    }

    fn arm_watch(&self, py: Python<'_>, fd: RawFd, write: bool) -> PyResult<()> {
        let mut st = self.state.borrow_mut(py);
        st.watch_gen = st.watch_gen.wrapping_add(1);
        let gen = st.watch_gen;
        let Some(w) = st.watches.get_mut(&fd) else {
            return Ok(());
        };
        let Some(dir) = w.dir(write).as_mut() else {
            return Ok(());
        };
        if dir.op.is_some() {
            return Ok(());
        }
        dir.rearm = false;
        let events = if write { libc::POLLOUT } else { libc::POLLIN } as u32;
        let kind = if write {
            Kind::WatchWrite
        } else {
            Kind::WatchRead
        };
        let t = token(
            SourceId {
                index: fd as u32,
                gen,
            },
            kind,
        );
        // SAFETY: a poll carries no pointers.
        let key = self.with_io(py, |io| unsafe { io.submit(IoOp::Poll { fd, events }, t) })?;
        dir.op = Some((key, gen));
        Ok(())
    }

    fn compute_timeout(&self, py: Python<'_>) -> Option<Duration> {
        let mut st = self.state.borrow_mut(py);
        if !st.ready.is_empty() || st.stopping {
            return Some(Duration::ZERO);
        }
        let next = st
            .timers
            .next_deadline(|t| t.get().is_cancelled_timer(py))?;
        let wait = (next - clock::monotonic()).clamp(0.0, MAX_WAIT);
        // Never wake early: a wait that ends before the deadline only spins.
        Some(Duration::from_nanos((wait * 1e9).ceil() as u64))
    }

    fn turn(&self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<()> {
        let mut io = self.io.try_borrow_mut(py, "the loop's driver")?;
        let Some(driver) = io.as_mut() else {
            return Err(PyRuntimeError::new_err("Event loop is closed"));
        };
        let result = if timeout == Some(Duration::ZERO) {
            driver.turn(timeout)
        } else {
            self.wakeup.sleeping.store(true, Ordering::SeqCst);
            let r = {
                let _unlocked = GilReleased::new();
                driver.turn(timeout)
            };
            self.wakeup.sleeping.store(false, Ordering::SeqCst);
            r
        };
        result.map_err(io_err)
    }

    /// Runs the timers due before `end`, earliest first.
    fn run_due_timers(slf: &Bound<'_, Self>, debug: bool, end: f64) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let due: Vec<Py<TimerHandle>> = {
            let mut st = this.state.borrow_mut(py);
            let mut due = Vec::new();
            while let Some(t) = st.timers.pop_due(end, |t| t.get().is_cancelled_timer(py)) {
                t.get().scheduled.store(false, Ordering::Relaxed);
                due.push(t);
            }
            due
        };
        let mut rest = due.into_iter();
        while let Some(t) = rest.next() {
            if let Err(e) = Self::run_handle(slf, t.into_bound(py).into_super(), debug) {
                // Interrupted (KeyboardInterrupt, SystemExit): the others run next time.
                let mut st = this.state.borrow_mut(py);
                for t in rest {
                    st.ready.push_back(t.into_bound(py).into_super().unbind());
                }
                return Err(e);
            }
        }
        Ok(())
    }

    fn dispatch(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (mut events, leftover) = {
            let mut st = this.state.borrow_mut(py);
            (
                std::mem::take(&mut st.events),
                std::mem::take(&mut st.leftover),
            )
        };
        // Swap vectors with the driver: both keep their capacity, nothing is copied.
        this.with_io(py, |io| io.take_events(&mut events))?;
        if !leftover.is_empty() {
            let mut all = leftover;
            all.append(&mut events);
            events = all;
        }
        let mut i = 0;
        let mut result = Ok(());
        while i < events.len() {
            let t = events[i].token;
            // Consecutive data for one receive in one turn: one Python call.
            let mut j = i + 1;
            if events[i].result > 0 && events[i].buf.is_some() {
                while j < events.len()
                    && events[j].token == t
                    && events[j].result > 0
                    && events[j].buf.is_some()
                {
                    j += 1;
                }
            }
            let r = this.dispatch_one(py, &mut events[i..j]);
            i = j;
            if let Err(e) = r {
                result = Err(e);
                break;
            }
        }
        let mut st = this.state.borrow_mut(py);
        if i < events.len() {
            st.leftover.extend(events.drain(i..));
        }
        events.clear();
        st.events = events;
        result
    }

    fn dispatch_one(&self, py: Python<'_>, evs: &mut [IoEvent]) -> PyResult<()> {
        let Some((id, kind)) = untoken(evs[0].token) else {
            return Ok(());
        };
        match kind {
            Kind::WatchRead | Kind::WatchWrite => {
                self.watch_fired(py, id, kind == Kind::WatchWrite, evs[0].result);
                Ok(())
            }
            // A stale token (the source has gone): the buffers go back on drop.
            _ => match self.source(py, id) {
                Some(src) => src.on_event(py, kind, evs),
                None => Ok(()),
            },
        }
    }

    /// The live source `id`, if it is still registered.
    fn source(&self, py: Python<'_>, id: SourceId) -> Option<Source> {
        self.state.borrow(py).sources.get(id).cloned()
    }

    fn watch_fired(&self, py: Python<'_>, id: SourceId, write: bool, result: i32) {
        let fd = id.index as RawFd;
        let mut st = self.state.borrow_mut(py);
        let Some(w) = st.watches.get_mut(&fd) else {
            return;
        };
        let Some(dir) = w.dir(write).as_mut() else {
            return;
        };
        if dir.op.map(|(_, g)| g) != Some(id.gen) {
            return; // a cancelled poll's last word
        }
        dir.op = None;
        if result == -libc::ECANCELED || result == -libc::EBADF {
            // Cancelled by the driver (fd forgotten) or the fd is gone: nothing to report.
            return;
        }
        let h = dir.handle.clone_ref(py);
        dir.rearm = true;
        if h.get().is_cancelled() {
            return;
        }
        st.rearm_after_run.push((fd, write));
        st.ready.push_back(h);
    }
}

/// Releases the GIL for its lifetime (the loop's wait in the kernel).
struct GilReleased(*mut pyo3::ffi::PyThreadState);

impl GilReleased {
    fn new() -> Self {
        // SAFETY: called with the GIL held; the state is restored in `drop`, on the same
        // thread, before any Python object is touched again.
        GilReleased(unsafe { pyo3::ffi::PyEval_SaveThread() })
    }
}

impl Drop for GilReleased {
    fn drop(&mut self) {
        // SAFETY: restores the thread state saved in `new`.
        unsafe { pyo3::ffi::PyEval_RestoreThread(self.0) };
    }
}

#[pymethods]
impl LoopCore {
    #[new]
    #[pyo3(signature = (*_args, backend = None, **_kwargs))]
    fn new(
        _args: &Bound<'_, PyTuple>,
        backend: Option<&str>,
        _kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let io = IoDriver::new(backend).map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("ringway: cannot start a driver: {e}"))
        })?;
        let wakeup = Arc::new(Wakeup {
            sleeping: AtomicBool::new(false),
            waker: io.waker(),
        });
        Ok(LoopCore {
            state: GilCell::new(LoopState {
                ready: VecDeque::new(),
                timers: TimerHeap::default(),
                sources: Sources::default(),
                watches: HashMap::new(),
                watch_gen: 0,
                rearm: Vec::new(),
                rearm_after_run: Vec::new(),
                dirty: Vec::new(),
                rearm_spare: Vec::new(),
                dirty_spare: Vec::new(),
                events: Vec::with_capacity(256),
                leftover: Vec::new(),
                stopping: false,
                closed: false,
                debug: false,
                polled_last: false,
                sends: 0,
                direct_reads: 0,
            }),
            backend_name: io.backend_name(),
            backend_description: io.describe(),
            backend_fallbacks: io.fallbacks(),
            io: GilCell::new(Some(io)),
            wakeup,
            clock_resolution: clock::resolution(),
        })
    }

    /// Schedules `callback(*args)` for the next iteration.
    #[pyo3(signature = (callback, *args, context = None))]
    fn call_soon(
        slf: &Bound<'_, Self>,
        callback: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        context: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<Handle>> {
        let py = slf.py();
        let h = Py::new(
            py,
            Self::new_handle(slf, callback, args, context, "call_soon")?,
        )?;
        slf.get().push_ready(py, h.clone_ref(py));
        Ok(h)
    }

    /// Like `call_soon`, from any thread: wakes the loop if it sleeps.
    #[pyo3(signature = (callback, *args, context = None))]
    fn call_soon_threadsafe(
        slf: &Bound<'_, Self>,
        callback: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        context: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<Handle>> {
        let py = slf.py();
        let h = Py::new(
            py,
            Self::new_handle(slf, callback, args, context, "call_soon_threadsafe")?,
        )?;
        let this = slf.get();
        this.push_ready(py, h.clone_ref(py));
        if this.wakeup.sleeping.swap(false, Ordering::SeqCst) {
            this.wakeup.waker.notify();
        }
        Ok(h)
    }

    /// Schedules `callback(*args)` after `delay` seconds.
    #[pyo3(signature = (delay, callback, *args, context = None))]
    fn call_later(
        slf: &Bound<'_, Self>,
        delay: Option<f64>,
        callback: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        context: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<TimerHandle>> {
        let Some(delay) = delay else {
            return Err(PyTypeError::new_err("delay must not be None"));
        };
        let when = clock::monotonic() + delay;
        Self::schedule_timer(slf, when, callback, args, context, "call_later")
    }

    /// Schedules `callback(*args)` at `when` (on `time()`'s clock).
    #[pyo3(signature = (when, callback, *args, context = None))]
    fn call_at(
        slf: &Bound<'_, Self>,
        when: Option<f64>,
        callback: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        context: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<TimerHandle>> {
        let Some(when) = when else {
            return Err(PyTypeError::new_err("when cannot be None"));
        };
        Self::schedule_timer(slf, when, callback, args, context, "call_at")
    }

    /// Wraps `coro` in a task (asyncio's `create_task`; its common case without a
    /// Python frame, see `tasks.rs`).
    #[pyo3(signature = (coro, **kwargs))]
    fn create_task<'py>(
        slf: &Bound<'py, Self>,
        coro: &Bound<'py, PyAny>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (closed, debug) = {
            let st = slf.get().state.borrow(slf.py());
            (st.closed, st.debug)
        };
        crate::tasks::create_task(slf.as_any(), closed, debug, coro, kwargs)
    }

    /// A future attached to the loop (asyncio's `create_future`, natively).
    fn create_future<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        crate::tasks::create_future(slf.as_any())
    }

    /// True while `run_forever` runs (asyncio's: its `_thread_id` is set).
    fn is_running(slf: &Bound<'_, Self>) -> PyResult<bool> {
        Ok(!slf
            .getattr(pyo3::intern!(slf.py(), "_thread_id"))?
            .is_none())
    }

    /// True in debug mode (asyncio's `get_debug`, which `Task` and `Future` ask at
    /// every construction).
    fn get_debug(&self, py: Python<'_>) -> bool {
        self.state.borrow(py).debug
    }

    /// The loop's clock (`time.monotonic()`'s).
    fn time(&self) -> f64 {
        clock::monotonic()
    }

    /// One iteration (see the module docs).
    fn _run_once(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        Self::flush(slf)?;
        let timeout = this.compute_timeout(py);
        let unsent = this.with_io(py, |io| io.has_unsent()).unwrap_or(true);
        let (n, debug, skip) = {
            let mut st = this.state.borrow_mut(py);
            // Callbacks are waiting, nothing new is to be handed to the kernel, and the
            // previous iteration did ask it: this one need not ask again (as if the poll
            // had found nothing); the next one will. Saves the zero-timeout enter that a
            // coroutine woken by I/O would otherwise cost every message, without ever
            // starving I/O or delaying a submission.
            let skip = timeout == Some(Duration::ZERO)
                && !unsent
                && !st.ready.is_empty()
                && st.polled_last;
            st.polled_last = !skip;
            (st.ready.len(), st.debug, skip)
        };
        if !skip {
            this.turn(py, timeout)?;
            py.check_signals()?;
        }
        // asyncio's order: callbacks queued before the wait, then the I/O it found, then
        // due timers; what they schedule runs in the next iteration. Which timers are
        // due is decided now, as asyncio does right after its wait: one that falls due
        // while the callbacks run waits for the next iteration, behind what they
        // scheduled with call_soon.
        let end = clock::monotonic() + this.clock_resolution;
        let ran = Self::run_ready(slf, n, debug);
        // Whether or not a callback raised: a watch left unarmed would never report.
        {
            let mut st = this.state.borrow_mut(py);
            let st = &mut *st;
            st.rearm.append(&mut st.rearm_after_run);
        }
        ran?;
        Self::dispatch(slf)?;
        Self::run_due_timers(slf, debug, end)
    }

    #[getter(_stopping)]
    fn get_stopping_flag(&self, py: Python<'_>) -> bool {
        self.state.borrow(py).stopping
    }
    #[setter(_stopping)]
    fn set_stopping_flag(&self, py: Python<'_>, v: bool) {
        self.state.borrow_mut(py).stopping = v;
    }
    #[getter(_closed)]
    fn get_closed_flag(&self, py: Python<'_>) -> bool {
        self.state.borrow(py).closed
    }
    #[setter(_closed)]
    fn set_closed_flag(&self, py: Python<'_>, v: bool) {
        self.state.borrow_mut(py).closed = v;
    }
    #[getter(_debug)]
    fn get_debug_flag(&self, py: Python<'_>) -> bool {
        self.state.borrow(py).debug
    }
    #[setter(_debug)]
    fn set_debug_flag(&self, py: Python<'_>, v: bool) {
        self.state.borrow_mut(py).debug = v;
    }

    /// `"uring"` or `"epoll"`.
    #[getter]
    fn _ringway_backend(&self) -> &'static str {
        self.backend_name
    }

    /// The backend with its flags, and why better ones were refused.
    #[getter]
    fn _ringway_backend_description(&self) -> String {
        self.backend_description.clone()
    }

    /// Why io_uring (or a better configuration of it) was refused.
    #[getter]
    fn _ringway_fallbacks(&self) -> Vec<String> {
        self.backend_fallbacks.clone()
    }

    /// Counters (driver turns, enters, operations, pool buffers in use, live sources,
    /// ready handles, timers), for tests and diagnostics.
    fn _ringway_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        {
            let st = self.state.borrow(py);
            d.set_item("ready", st.ready.len())?;
            d.set_item("timers", st.timers.len())?;
            d.set_item("timers_cancelled", st.timers.cancelled())?;
            d.set_item("sources", st.sources.len())?;
            d.set_item("watches", st.watches.len())?;
            d.set_item("sends", st.sends)?;
            d.set_item("direct_reads", st.direct_reads)?;
        }
        if let Ok(s) = self.with_io(py, |io| io.stats()) {
            d.set_item("turns", s.turns)?;
            d.set_item("enters", s.enters)?;
            d.set_item("submitted", s.submitted)?;
            d.set_item("completions", s.completions)?;
            d.set_item("live_ops", s.live_ops)?;
            d.set_item("pool_in_use", s.pool_in_use)?;
            d.set_item("pool_total", s.pool_total)?;
        }
        Ok(d)
    }

    /// Drops every pending callback and timer, cancels every operation and closes the
    /// driver. Called by `Loop.close()`.
    fn _ringway_close(&self, py: Python<'_>) -> PyResult<()> {
        let (ready, timers, watches, sources, dirty) = {
            let mut st = self.state.borrow_mut(py);
            st.closed = true;
            (
                std::mem::take(&mut st.ready),
                st.timers.drain(),
                std::mem::take(&mut st.watches),
                st.sources.drain(),
                std::mem::take(&mut st.dirty),
            )
        };
        let driver = self.io.try_borrow_mut(py, "the loop's driver")?.take();
        if let Some(mut d) = driver {
            d.shutdown();
            drop(d);
        }
        for s in &sources {
            s.driver_gone(py);
        }
        drop((ready, timers, watches, sources, dirty));
        let mut st = self.state.borrow_mut(py);
        st.events.clear();
        st.leftover.clear();
        Ok(())
    }

    /// Watches `fd` for reading (`write=False`) or writing and runs `handle` each
    /// iteration it is ready; replaces (and cancels) an earlier handle. Returns whether
    /// one was replaced.
    fn _watch(&self, py: Python<'_>, fd: RawFd, write: bool, handle: Py<Handle>) -> PyResult<bool> {
        let replaced = {
            let mut st = self.state.borrow_mut(py);
            if st.closed {
                return Err(PyRuntimeError::new_err("Event loop is closed"));
            }
            let w = st.watches.entry(fd).or_default();
            let slot = w.dir(write);
            let old = slot
                .as_mut()
                .map(|d| std::mem::replace(&mut d.handle, handle.clone_ref(py)));
            if slot.is_none() {
                *slot = Some(WatchDir {
                    handle,
                    op: None,
                    rearm: true,
                });
            }
            if let Some(d) = slot.as_mut() {
                d.rearm = true;
            }
            st.rearm.push((fd, write));
            old
        };
        let had = replaced.is_some();
        if let Some(old) = replaced {
            old.get().mark_cancelled(py);
        }
        Ok(had)
    }

    /// Stops watching `fd` in one direction; true if it was watched.
    fn _unwatch(&self, py: Python<'_>, fd: RawFd, write: bool) -> PyResult<bool> {
        let (dir, now_empty) = {
            let mut st = self.state.borrow_mut(py);
            let Some(w) = st.watches.get_mut(&fd) else {
                return Ok(false);
            };
            let dir = w.dir(write).take();
            let empty = w.read.is_none() && w.write.is_none();
            if empty {
                st.watches.remove(&fd);
            }
            (dir, empty)
        };
        let Some(dir) = dir else {
            return Ok(false);
        };
        dir.handle.get().mark_cancelled(py);
        let _ = self.with_io(py, |io| {
            if let Some((key, _)) = dir.op {
                io.cancel(key);
            }
            if now_empty {
                // epoll: the fd may be closed right after this; a new fd with the same
                // number must start unregistered.
                io.forget_fd(fd);
            }
        });
        Ok(true)
    }

    /// The handle watching `fd` in one direction, if any.
    fn _watching(&self, py: Python<'_>, fd: RawFd, write: bool) -> Option<Py<Handle>> {
        let mut st = self.state.borrow_mut(py);
        let w = st.watches.get_mut(&fd)?;
        w.dir(write).as_ref().map(|d| d.handle.clone_ref(py))
    }

    /// A timer was cancelled (asyncio's hook, called by `TimerHandle.cancel` while it
    /// is still in the heap): let the heap count it.
    fn _timer_handle_cancelled(&self, py: Python<'_>, _handle: &Bound<'_, PyAny>) {
        let mut st = self.state.borrow_mut(py);
        st.timers.note_cancelled(|t| t.get().is_cancelled_timer(py));
    }

    /// Queues an existing handle (a signal's, when its byte arrives).
    fn _push_ready(&self, py: Python<'_>, handle: Py<Handle>) {
        self.push_ready(py, handle);
    }

    /// Makes a handle for `callback(*args)` in a copy of the current context (what
    /// asyncio's `add_reader` stores).
    fn _make_handle(
        slf: &Bound<'_, Self>,
        callback: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
    ) -> PyResult<Py<Handle>> {
        Py::new(
            slf.py(),
            Self::new_handle(slf, callback, args, None, "add_reader")?,
        )
    }
}
