//! `StreamCore`: the native half of a TCP or Unix stream transport.
//!
//! Receiving is one multishot receive into the driver's provided buffers, armed once
//! after `connection_made` and kept until end of stream, an error, `pause_reading` or
//! `close`. Each completion (consecutive ones of one turn coalesced) goes straight to
//! `protocol.data_received(bytes)`, or into the protocol's own buffer through
//! `get_buffer`/`buffer_updated` for a `BufferedProtocol`.
//!
//! Writing appends to a queue (a `bytes` object is kept, not copied); the loop flushes
//! every transport written to in an iteration before it waits, as one vectored send (an
//! SQE that rides the turn's single `io_uring_enter`, or a `sendmsg` on epoll). A queue
//! that grows past the high-water mark is sent at once, and what the kernel does not
//! take pauses the protocol until the queue drains below the low-water mark.
//!
//! The fd is closed only after every operation on it has reported its last completion
//! (the kernel must never see a recycled fd number), and then `connection_lost` runs.

use std::collections::VecDeque;
use std::os::fd::RawFd;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{
    PyConnectionError, PyKeyboardInterrupt, PyOSError, PyRuntimeError, PySystemExit, PyTypeError,
    PyValueError,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyTuple};

use crate::gil_cell::GilCell;
use crate::io_driver::{IoEvent, IoOp, OpKey};
use crate::loop_core::{LoopCore, Source};
use crate::protocol_context::ProtocolContext;
use crate::sources::{token, Kind, SourceId};
use crate::write_queue::{WriteQueue, MAX_IOVECS};

/// asyncio's defaults: pause the protocol above 64 KiB queued, resume at a quarter.
const DEFAULT_HIGH: usize = 64 * 1024;
/// After this many writes to a lost connection, each further one logs a warning.
const LOG_THRESHOLD_FOR_CONNLOST_WRITES: u32 = 5;

/// What keeps a queued chunk's memory alive.
enum ChunkOwner {
    Bytes(#[allow(dead_code)] Py<PyBytes>),
    Owned(#[allow(dead_code)] Vec<u8>),
}

/// Something received while reading was paused (or behind such data). Bytes are
/// copied out of the pool at once: a paused transport must not hold the pool buffers
/// every other connection receives into.
enum Held {
    Data(Vec<u8>),
    Eof,
}

/// The protocol's receiving methods, bound once (when the protocol is set), as uvloop
/// does: each delivery is then one vectorcall, with no method lookup.
enum Receiver {
    Data(Py<PyAny>),
    Buffered {
        get_buffer: Py<PyAny>,
        buffer_updated: Py<PyAny>,
    },
}

impl Receiver {
    fn of(protocol: &Bound<'_, PyAny>) -> PyResult<Receiver> {
        let py = protocol.py();
        if protocol.is_instance(buffered_protocol_class(py)?)? {
            Ok(Receiver::Buffered {
                get_buffer: protocol.getattr(intern!(py, "get_buffer"))?.unbind(),
                buffer_updated: protocol.getattr(intern!(py, "buffer_updated"))?.unbind(),
            })
        } else {
            Ok(Receiver::Data(
                protocol.getattr(intern!(py, "data_received"))?.unbind(),
            ))
        }
    }

    fn clone_ref(&self, py: Python<'_>) -> Receiver {
        match self {
            Receiver::Data(f) => Receiver::Data(f.clone_ref(py)),
            Receiver::Buffered {
                get_buffer,
                buffer_updated,
            } => Receiver::Buffered {
                get_buffer: get_buffer.clone_ref(py),
                buffer_updated: buffer_updated.clone_ref(py),
            },
        }
    }
}

/// Calls `func(arg)` by vectorcall, leaving the slot before the argument free for a
/// bound method's `self` (no tuple, no allocation).
fn call1<'py>(func: &Bound<'py, PyAny>, arg: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let mut args = [std::ptr::null_mut(), arg.as_ptr()];
    // SAFETY: `args[1..]` holds one live object; the offset flag lets the callee use
    // `args[0]` as scratch, which is ours; the GIL is held.
    unsafe {
        let r = pyo3::ffi::PyObject_Vectorcall(
            func.as_ptr(),
            args.as_mut_ptr().add(1),
            1 | pyo3::ffi::PY_VECTORCALL_ARGUMENTS_OFFSET,
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(func.py(), r)
    }
}

struct StreamState {
    fd: RawFd,
    id: Option<SourceId>,
    transport: Option<Py<PyAny>>,
    protocol: Option<Py<PyAny>>,
    receiver: Option<Receiver>,
    sock: Option<Py<PyAny>>,
    connected: bool,

    recv_op: Option<OpKey>,
    reading_paused: bool,
    eof_seen: bool,
    held: VecDeque<Held>,
    deliver_scheduled: bool,

    queue: WriteQueue<ChunkOwner>,
    iov: Vec<libc::iovec>,
    send_op: Option<OpKey>,
    send_ready_op: Option<OpKey>,
    dirty: bool,
    high: usize,
    low: usize,
    protocol_paused: bool,
    eof_requested: bool,
    eof_sent: bool,
    empty_waiter: Option<Py<PyAny>>,

    closing: bool,
    aborted: bool,
    conn_lost: u32,
    lost_exc: Option<Py<PyAny>>,
    lost_scheduled: bool,
    finished: bool,
}

impl StreamState {
    fn ops_in_flight(&self) -> bool {
        self.recv_op.is_some() || self.send_op.is_some() || self.send_ready_op.is_some()
    }
}

/// The native half of a stream transport.
#[pyclass(frozen, module = "ringway._ringway")]
pub struct StreamCore {
    loop_: Py<LoopCore>,
    /// The context of the call that made the transport: every protocol callback runs
    /// in it.
    ctx: ProtocolContext,
    st: GilCell<StreamState>,
}

impl std::fmt::Debug for StreamCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamCore")
    }
}

fn buffered_protocol_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static CLS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CLS.get_or_try_init(py, || {
        Ok::<_, PyErr>(
            py.import("asyncio.protocols")?
                .getattr("BufferedProtocol")?
                .unbind(),
        )
    })
    .map(|c| c.bind(py))
}

fn is_fatal_to_loop(py: Python<'_>, e: &PyErr) -> bool {
    e.is_instance_of::<PySystemExit>(py) || e.is_instance_of::<PyKeyboardInterrupt>(py)
}

fn os_error(py: Python<'_>, errno: i32) -> Py<PyAny> {
    PyErr::from(std::io::Error::from_raw_os_error(errno))
        .into_value(py)
        .into_any()
}

/// Makes a socket non-blocking (asyncio's sockets are) and, for TCP, sets `TCP_NODELAY`.
pub(crate) fn prepare_socket(fd: RawFd, tcp: bool) {
    let on: libc::c_int = 1;
    // SAFETY: `fd` is an open socket; FIONBIO reads an int flag.
    unsafe { libc::ioctl(fd, libc::FIONBIO, &on) };
    if tcp {
        // SAFETY: setsockopt reads `len` bytes from a live int.
        unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                &on as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
}

impl StreamCore {
    /// See `LoopCore._stream_new`.
    pub(crate) fn start(
        loop_: &Bound<'_, LoopCore>,
        fd: RawFd,
        transport: Py<PyAny>,
        protocol: &Bound<'_, PyAny>,
        waiter: Option<Py<PyAny>>,
        sock: Option<Py<PyAny>>,
        tcp: bool,
    ) -> PyResult<Py<StreamCore>> {
        let py = loop_.py();
        if fd < 0 {
            return Err(PyValueError::new_err("the transport's socket is closed"));
        }
        prepare_socket(fd, tcp);
        let receiver = Receiver::of(protocol)?;
        let core = Py::new(
            py,
            StreamCore {
                loop_: loop_.clone().unbind(),
                ctx: ProtocolContext::capture(py)?,
                st: GilCell::new(StreamState {
                    fd,
                    id: None,
                    transport: Some(transport),
                    protocol: Some(protocol.clone().unbind()),
                    receiver: Some(receiver),
                    sock,
                    connected: false,
                    recv_op: None,
                    reading_paused: false,
                    eof_seen: false,
                    held: VecDeque::new(),
                    deliver_scheduled: false,
                    queue: WriteQueue::default(),
                    iov: Vec::new(),
                    send_op: None,
                    send_ready_op: None,
                    dirty: false,
                    high: DEFAULT_HIGH,
                    low: DEFAULT_HIGH / 4,
                    protocol_paused: false,
                    eof_requested: false,
                    eof_sent: false,
                    empty_waiter: None,
                    closing: false,
                    aborted: false,
                    conn_lost: 0,
                    lost_exc: None,
                    lost_scheduled: false,
                    finished: false,
                }),
            },
        )?;
        let id = loop_.get().register(py, Source::Stream(core.clone_ref(py)));
        core.get().st.borrow_mut(py).id = Some(id);
        let func = core
            .bind(py)
            .getattr(intern!(py, "_connection_made"))?
            .unbind();
        let args = PyTuple::new(py, [waiter.unwrap_or_else(|| py.None())])?.unbind();
        LoopCore::call_soon_internal(&core.get().loop_, py, func, args)?;
        Ok(core)
    }

    fn loop_core<'py>(&self, py: Python<'py>) -> &Bound<'py, LoopCore> {
        self.loop_.bind(py)
    }

    /// Arms the multishot receive if reading should be on and none is in flight.
    fn arm_recv(&self, py: Python<'_>) -> PyResult<()> {
        let mut st = self.st.borrow_mut(py);
        if st.recv_op.is_some()
            || st.closing
            || st.reading_paused
            || st.eof_seen
            || !st.held.is_empty()
            || st.fd < 0
        {
            return Ok(());
        }
        let Some(id) = st.id else { return Ok(()) };
        let fd = st.fd;
        // SAFETY: a pool receive carries no pointers.
        let key = self.loop_.get().with_io(py, |io| unsafe {
            io.submit(IoOp::RecvMulti { fd }, token(id, Kind::Recv))
        })?;
        st.recv_op = Some(key);
        Ok(())
    }

    fn cancel_op(&self, py: Python<'_>, key: Option<OpKey>) {
        if let Some(k) = key {
            let _ = self.loop_.get().with_io(py, |io| io.cancel(k));
        }
    }

    /// Completions for this transport.
    pub(crate) fn on_event(slf: &Bound<'_, Self>, kind: Kind, evs: &mut [IoEvent]) -> PyResult<()> {
        match kind {
            Kind::Recv => slf.get().ctx.run(slf.py(), || Self::on_recv(slf, evs)),
            Kind::Send => Self::on_send(slf, &evs[0]),
            Kind::SendReady => Self::on_send_ready(slf, &evs[0]),
            _ => Ok(()),
        }
    }

    fn on_recv(slf: &Bound<'_, Self>, evs: &mut [IoEvent]) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let last = evs.iter().any(|e| e.last);
        let result = evs[evs.len() - 1].result;
        let has_data = evs[0].buf.is_some() && evs[0].result > 0;
        let hold = {
            let mut st = this.st.borrow_mut(py);
            if last {
                st.recv_op = None;
            }
            if st.closing || st.finished {
                drop(st);
                if last {
                    this.release_if_done(py);
                    Self::maybe_finish(slf)?;
                }
                return Ok(());
            }
            let hold = st.reading_paused || !st.held.is_empty();
            if hold && has_data {
                for e in evs.iter() {
                    if let Some(buf) = &e.buf {
                        st.held.push_back(Held::Data(buf.to_vec()));
                    }
                }
            }
            hold
        };
        if !hold && has_data {
            Self::deliver(slf, evs)?;
        }
        if !last {
            return Ok(());
        }
        if result == 0 {
            let hold = {
                let mut st = this.st.borrow_mut(py);
                st.eof_seen = true;
                let hold = st.reading_paused || !st.held.is_empty();
                if hold {
                    st.held.push_back(Held::Eof);
                }
                hold
            };
            if !hold {
                Self::eof(slf)?;
            }
        } else if result == -libc::ECANCELED || result > 0 {
            // Paused (resume may have come before this last word), or a receive that
            // ended after data: receive again if reading is still wanted.
            this.arm_recv(py)?;
        } else if result < 0 {
            let exc = os_error(py, -result);
            Self::fatal_error(slf, exc, "Fatal read error on socket transport")?;
        }
        Ok(())
    }

    /// Hands received bytes (the pool buffers of `evs`) to the protocol; what it cannot
    /// take now (it paused reading or closed from inside a callback) is held.
    fn deliver(slf: &Bound<'_, Self>, evs: &[IoEvent]) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let receiver = match &this.st.borrow(py).receiver {
            Some(r) => r.clone_ref(py),
            None => return Ok(()),
        };
        match receiver {
            Receiver::Data(data_received) => {
                let data = if evs.len() == 1 {
                    PyBytes::new(py, evs[0].buf.as_deref().unwrap_or(&[]))
                } else {
                    let total: usize = evs
                        .iter()
                        .filter_map(|e| e.buf.as_ref())
                        .map(|b| b.len())
                        .sum();
                    PyBytes::new_with(py, total, |dst| {
                        let mut at = 0;
                        for b in evs.iter().filter_map(|e| e.buf.as_ref()) {
                            dst[at..at + b.len()].copy_from_slice(b);
                            at += b.len();
                        }
                        Ok(())
                    })?
                };
                if let Err(e) = call1(data_received.bind(py), &data) {
                    if is_fatal_to_loop(py, &e) {
                        return Err(e);
                    }
                    let exc = e.into_value(py).into_any();
                    Self::fatal_error(
                        slf,
                        exc,
                        "Fatal error: protocol.data_received() call failed.",
                    )?;
                }
                Ok(())
            }
            Receiver::Buffered {
                get_buffer,
                buffer_updated,
            } => {
                let methods = (get_buffer.bind(py), buffer_updated.bind(py));
                if evs.len() == 1 {
                    let one: [&[u8]; 1] = [evs[0].buf.as_deref().unwrap_or(&[])];
                    Self::feed_all(slf, methods, &one, false)
                } else {
                    let slices: Vec<&[u8]> = evs.iter().filter_map(|e| e.buf.as_deref()).collect();
                    Self::feed_all(slf, methods, &slices, false)
                }
            }
        }
    }

    /// Feeds `slices` to a BufferedProtocol until it is all taken or the transport
    /// pauses or closes from inside a callback; the rest is held (copied): behind what
    /// is held already, or in front of it when it came from there (`from_held`).
    fn feed_all(
        slf: &Bound<'_, Self>,
        methods: (&Bound<'_, PyAny>, &Bound<'_, PyAny>),
        slices: &[&[u8]],
        from_held: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        for (i, data) in slices.iter().enumerate() {
            let mut offset = 0;
            while offset < data.len() {
                {
                    let mut st = this.st.borrow_mut(py);
                    if st.reading_paused || st.closing {
                        if !st.closing {
                            let rest = std::iter::once(&data[offset..])
                                .chain(slices[i + 1..].iter().copied())
                                .map(|d| Held::Data(d.to_vec()));
                            if from_held {
                                for (k, h) in rest.enumerate() {
                                    st.held.insert(k, h);
                                }
                            } else {
                                st.held.extend(rest);
                            }
                        }
                        return Ok(());
                    }
                }
                match Self::feed_buffered(py, methods, &data[offset..]) {
                    Ok(n) => offset += n,
                    Err((e, what)) => {
                        if is_fatal_to_loop(py, &e) {
                            return Err(e);
                        }
                        let exc = e.into_value(py).into_any();
                        let msg = format!("Fatal error: protocol.{what}() call failed.");
                        return Self::fatal_error(slf, exc, &msg);
                    }
                }
            }
        }
        Ok(())
    }

    /// One `get_buffer` / copy / `buffer_updated` round; returns the bytes taken.
    fn feed_buffered(
        py: Python<'_>,
        (get_buffer, buffer_updated): (&Bound<'_, PyAny>, &Bound<'_, PyAny>),
        data: &[u8],
    ) -> Result<usize, (PyErr, &'static str)> {
        let Ok(hint) = (-1i64).into_pyobject(py);
        let target = call1(get_buffer, hint.as_any()).map_err(|e| (e, "get_buffer"))?;
        let pybuf = PyBuffer::<u8>::get(&target).map_err(|e| (e, "get_buffer"))?;
        if pybuf.readonly() || !pybuf.is_c_contiguous() {
            return Err((
                PyTypeError::new_err("get_buffer() must return a writable, contiguous buffer"),
                "get_buffer",
            ));
        }
        let room = pybuf.len_bytes();
        if room == 0 {
            return Err((
                PyRuntimeError::new_err("get_buffer() returned an empty buffer"),
                "get_buffer",
            ));
        }
        let n = room.min(data.len());
        // SAFETY: the buffer is writable, C-contiguous and at least `n` bytes long; the
        // exporter keeps it alive while `pybuf` holds the view.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), pybuf.buf_ptr() as *mut u8, n) };
        drop(pybuf);
        drop(target);
        let Ok(n_obj) = n.into_pyobject(py);
        call1(buffer_updated, n_obj.as_any()).map_err(|e| (e, "buffer_updated"))?;
        Ok(n)
    }

    fn eof(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let protocol = match &slf.get().st.borrow(py).protocol {
            Some(p) => p.clone_ref(py),
            None => return Ok(()),
        };
        match protocol.bind(py).call_method0(intern!(py, "eof_received")) {
            Ok(keep_open) => {
                if !keep_open.is_truthy()? {
                    Self::close(slf)?;
                }
                Ok(())
            }
            Err(e) => {
                if is_fatal_to_loop(py, &e) {
                    return Err(e);
                }
                let exc = e.into_value(py).into_any();
                Self::fatal_error(
                    slf,
                    exc,
                    "Fatal error: protocol.eof_received() call failed.",
                )
            }
        }
    }

    /// asyncio's `_fatal_error`: report (unless it is an `OSError`), then force-close.
    fn fatal_error(slf: &Bound<'_, Self>, exc: Py<PyAny>, message: &str) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        if !exc.bind(py).is_instance_of::<PyOSError>() {
            let (tr, proto) = {
                let st = this.st.borrow(py);
                (
                    st.transport.as_ref().map(|t| t.clone_ref(py)),
                    st.protocol.as_ref().map(|p| p.clone_ref(py)),
                )
            };
            let ctx = PyDict::new(py);
            ctx.set_item("message", message)?;
            ctx.set_item("exception", exc.bind(py))?;
            ctx.set_item("transport", tr)?;
            ctx.set_item("protocol", proto)?;
            this.loop_core(py)
                .call_method1(intern!(py, "call_exception_handler"), (ctx,))?;
        } else if this.loop_core(py).get().debug(py) {
            this.loop_core(py)
                .call_method1(intern!(py, "_ringway_log_debug"), (message, exc.bind(py)))?;
        }
        Self::force_close(slf, Some(exc))
    }

    /// asyncio's `_force_close`: drop the queue, stop everything, `connection_lost(exc)`.
    fn force_close(slf: &Bound<'_, Self>, exc: Option<Py<PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let cancels = {
            let mut st = this.st.borrow_mut(py);
            if st.conn_lost > 0 || st.finished {
                return Ok(());
            }
            st.aborted = true;
            if st.send_op.is_none() {
                st.queue.clear();
            }
            st.closing = true;
            st.held.clear();
            st.conn_lost += 1;
            st.lost_exc = exc;
            [st.recv_op, st.send_op, st.send_ready_op]
        };
        for k in cancels {
            this.cancel_op(py, k);
        }
        Self::maybe_finish(slf)
    }

    /// After `_finish`, the source stays registered until the last operation's final
    /// completion (which may still name it); then it goes.
    fn release_if_done(&self, py: Python<'_>) {
        let id = {
            let mut st = self.st.borrow_mut(py);
            if !st.finished || st.ops_in_flight() {
                return;
            }
            st.queue.clear();
            st.id.take()
        };
        if let Some(id) = id {
            self.loop_.get().unregister(py, id);
        }
    }

    /// Schedules `_finish` (connection_lost) once closing and, unless aborted, once the
    /// queue is sent.
    fn maybe_finish(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        {
            let mut st = this.st.borrow_mut(py);
            if !st.closing || st.lost_scheduled {
                return Ok(());
            }
            // A graceful close sends what is queued first. The receive need not have
            // ended: `_finish` pushes its cancel to the kernel before closing the fd.
            let writing =
                !st.queue.is_empty() || st.send_op.is_some() || st.send_ready_op.is_some();
            if writing && !st.aborted {
                return Ok(());
            }
            if st.conn_lost == 0 {
                st.conn_lost = 1;
            }
            st.lost_scheduled = true;
        }
        let func = slf.getattr(intern!(py, "_finish"))?.unbind();
        LoopCore::call_soon_internal(&this.loop_, py, func, PyTuple::empty(py).unbind())
    }

    fn on_send(slf: &Bound<'_, Self>, ev: &IoEvent) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let failed = {
            let mut st = this.st.borrow_mut(py);
            st.send_op = None;
            if st.aborted {
                st.queue.clear();
                None
            } else if ev.result >= 0 {
                st.queue.consume(ev.result as usize);
                None
            } else if ev.result == -libc::ECANCELED {
                None
            } else {
                Some(-ev.result)
            }
        };
        if this.st.borrow(py).finished {
            this.release_if_done(py);
            return Ok(());
        }
        if let Some(errno) = failed {
            let exc = os_error(py, errno);
            return Self::fatal_error(slf, exc, "Fatal write error on socket transport");
        }
        Self::after_write_progress(slf)
    }

    fn on_send_ready(slf: &Bound<'_, Self>, ev: &IoEvent) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        {
            let mut st = this.st.borrow_mut(py);
            st.send_ready_op = None;
            if st.finished {
                drop(st);
                this.release_if_done(py);
                return Ok(());
            }
            if st.aborted || ev.result == -libc::ECANCELED {
                drop(st);
                return Self::maybe_finish(slf);
            }
        }
        Self::send_direct(slf)
    }

    /// Sends from the queue with `sendmsg` until it is empty or the socket is full;
    /// waits for room (epoll) if it is full.
    fn send_direct(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let outcome = {
            let mut st = this.st.borrow_mut(py);
            let st = &mut *st;
            let mut outcome = Ok(false);
            while !st.queue.is_empty() && st.fd >= 0 {
                st.queue.fill_iovecs(&mut st.iov, MAX_IOVECS);
                let want: usize = st.iov.iter().map(|v| v.iov_len).sum();
                // SAFETY: a zeroed msghdr is valid; the iovecs point into live chunks of
                // the queue.
                let r = unsafe {
                    let mut msg: libc::msghdr = std::mem::zeroed();
                    msg.msg_iov = st.iov.as_mut_ptr();
                    msg.msg_iovlen = st.iov.len() as _;
                    libc::sendmsg(st.fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
                };
                this.loop_.get().count_send(py);
                if r < 0 {
                    let e = std::io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(libc::EIO);
                    match e {
                        libc::EINTR => continue,
                        libc::EAGAIN => {
                            outcome = Ok(true);
                        }
                        e => outcome = Err(e),
                    }
                    break;
                }
                st.queue.consume(r as usize);
                if (r as usize) < want {
                    outcome = Ok(true);
                    break;
                }
            }
            outcome
        };
        match outcome {
            Err(errno) => {
                let exc = os_error(py, errno);
                Self::fatal_error(slf, exc, "Fatal write error on socket transport")
            }
            Ok(true) => {
                // Full: wait for room.
                let mut st = this.st.borrow_mut(py);
                if st.send_ready_op.is_none() {
                    if let Some(id) = st.id {
                        let fd = st.fd;
                        // SAFETY: a poll carries no pointers.
                        let key = this.loop_.get().with_io(py, |io| unsafe {
                            io.submit(
                                IoOp::Poll {
                                    fd,
                                    events: libc::POLLOUT as u32,
                                },
                                token(id, Kind::SendReady),
                            )
                        })?;
                        st.send_ready_op = Some(key);
                    }
                }
                drop(st);
                Self::after_write_progress(slf)
            }
            Ok(false) => Self::after_write_progress(slf),
        }
    }

    /// Called by the loop before it waits, for a transport written to in this iteration.
    pub(crate) fn flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let uring = this.loop_.get().is_uring();
        {
            let mut st = this.st.borrow_mut(py);
            st.dirty = false;
            if st.aborted || st.fd < 0 || st.queue.is_empty() {
                return Ok(());
            }
            if st.send_op.is_some() || st.send_ready_op.is_some() {
                return Ok(()); // its completion continues
            }
            if uring {
                let st = &mut *st;
                let Some(id) = st.id else { return Ok(()) };
                st.queue.fill_iovecs(&mut st.iov, MAX_IOVECS);
                let (fd, iov, iovcnt) = (st.fd, st.iov.as_ptr(), st.iov.len() as u32);
                // SAFETY: the iovecs and the chunks they point at stay untouched until the
                // send's completion: the iovec vector is only refilled when no send is in
                // flight, and queued chunks are only dropped by `consume`/`clear`, which
                // run after the completion.
                let key = this.loop_.get().with_io(py, |io| unsafe {
                    io.submit(
                        IoOp::SendVectored { fd, iov, iovcnt },
                        token(id, Kind::Send),
                    )
                })?;
                st.send_op = Some(key);
                this.loop_.get().count_send(py);
                return Ok(());
            }
        }
        Self::send_direct(slf)
    }

    /// After bytes left (or the queue was dropped): resume the protocol, wake a
    /// sendfile waiter, send the pending EOF, finish a close.
    fn after_write_progress(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (resume, drained, waiter, shutdown_fd, redirty) = {
            let mut st = this.st.borrow_mut(py);
            let resume = st.protocol_paused && st.queue.len() <= st.low;
            if resume {
                st.protocol_paused = false;
            }
            let idle = st.send_op.is_none() && st.send_ready_op.is_none();
            let drained = st.queue.is_empty() && idle;
            let waiter = if drained {
                st.empty_waiter.as_ref().map(|w| w.clone_ref(py))
            } else {
                None
            };
            let shutdown_fd = if drained && st.eof_requested && !st.eof_sent && st.fd >= 0 {
                st.eof_sent = true;
                Some(st.fd)
            } else {
                None
            };
            // A short send on io_uring: send the rest before the next wait.
            let redirty = !st.queue.is_empty() && idle && !st.aborted && !st.dirty;
            if redirty {
                st.dirty = true;
            }
            (resume, drained, waiter, shutdown_fd, redirty)
        };
        if redirty {
            this.loop_.get().mark_dirty(py, slf.clone().unbind());
        }
        if let Some(fd) = shutdown_fd {
            // SAFETY: shutting down the write side of our own open socket.
            unsafe { libc::shutdown(fd, libc::SHUT_WR) };
        }
        if let Some(w) = waiter {
            let w = w.bind(py);
            if !w.call_method0(intern!(py, "done"))?.is_truthy()? {
                w.call_method1(intern!(py, "set_result"), (py.None(),))?;
            }
        }
        if resume {
            Self::call_protocol_flow(slf, "resume_writing")?;
        }
        if drained {
            Self::maybe_finish(slf)?;
        }
        Ok(())
    }

    fn call_protocol_flow(slf: &Bound<'_, Self>, method: &str) -> PyResult<()> {
        let py = slf.py();
        slf.get()
            .ctx
            .run(py, || Self::call_protocol_flow_inner(slf, method))
    }

    fn call_protocol_flow_inner(slf: &Bound<'_, Self>, method: &str) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (tr, proto) = {
            let st = this.st.borrow(py);
            (
                st.transport.as_ref().map(|t| t.clone_ref(py)),
                st.protocol.as_ref().map(|p| p.clone_ref(py)),
            )
        };
        let Some(proto) = proto else { return Ok(()) };
        if let Err(e) = proto.bind(py).call_method0(method) {
            if is_fatal_to_loop(py, &e) {
                return Err(e);
            }
            let ctx = PyDict::new(py);
            ctx.set_item("message", format!("protocol.{method}() failed"))?;
            ctx.set_item("exception", e.into_value(py))?;
            ctx.set_item("transport", tr)?;
            ctx.set_item("protocol", proto)?;
            this.loop_core(py)
                .call_method1(intern!(py, "call_exception_handler"), (ctx,))?;
        }
        Ok(())
    }

    fn maybe_pause_protocol(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let pause = {
            let mut st = slf.get().st.borrow_mut(py);
            let pause = !st.protocol_paused && st.queue.len() > st.high;
            if pause {
                st.protocol_paused = true;
            }
            pause
        };
        if pause {
            Self::call_protocol_flow(slf, "pause_writing")?;
        }
        Ok(())
    }

    /// Queues one bytes-like object. Returns false if the write was dropped.
    fn enqueue(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<bool> {
        let mut st = self.st.borrow_mut(py);
        if st.eof_requested {
            return Err(PyRuntimeError::new_err(
                "Cannot call write() after write_eof()",
            ));
        }
        if st.empty_waiter.is_some() {
            return Err(PyRuntimeError::new_err(
                "unable to write; sendfile is in progress",
            ));
        }
        if let Ok(b) = data.cast::<PyBytes>() {
            let bytes = b.as_bytes();
            if bytes.is_empty() {
                return Ok(false);
            }
            if st.conn_lost > 0 {
                return self.lost_write(py, st);
            }
            let (ptr, len) = (bytes.as_ptr(), bytes.len());
            // SAFETY: a bytes object's buffer never moves or changes while it is alive,
            // and the queue keeps it alive.
            unsafe {
                st.queue
                    .push(ptr, len, ChunkOwner::Bytes(b.clone().unbind()))
            };
            return Ok(true);
        }
        if !(data.is_instance_of::<PyByteArray>() || data.is_instance_of::<PyMemoryView>()) {
            return Err(PyTypeError::new_err(format!(
                "data argument must be a bytes-like object, not {:?}",
                data.get_type().name()?.to_string()
            )));
        }
        let buf = PyBuffer::<u8>::get(data)?;
        let owned = buf.to_vec(py)?;
        if owned.is_empty() {
            return Ok(false);
        }
        if st.conn_lost > 0 {
            return self.lost_write(py, st);
        }
        let (ptr, len) = (owned.as_ptr(), owned.len());
        // SAFETY: the Vec's heap block does not move when the Vec moves into the queue.
        unsafe { st.queue.push(ptr, len, ChunkOwner::Owned(owned)) };
        Ok(true)
    }

    fn lost_write(
        &self,
        py: Python<'_>,
        mut st: std::cell::RefMut<'_, StreamState>,
    ) -> PyResult<bool> {
        st.conn_lost += 1;
        let warn = st.conn_lost > LOG_THRESHOLD_FOR_CONNLOST_WRITES;
        drop(st);
        if warn {
            self.loop_core(py).call_method1(
                intern!(py, "_ringway_log_warning"),
                ("socket.send() raised exception.",),
            )?;
        }
        Ok(false)
    }

    /// After new bytes were queued: send now if the queue is over the high-water mark,
    /// else leave them for the flush before the next wait; pause the protocol if what is
    /// left is still over the mark.
    fn after_enqueue(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (now, mark) = {
            let mut st = this.st.borrow_mut(py);
            let idle = st.send_op.is_none() && st.send_ready_op.is_none();
            let now = idle && st.queue.len() > st.high && st.fd >= 0;
            let mark = !now && !st.dirty && idle;
            if mark {
                st.dirty = true;
            }
            (now, mark)
        };
        if mark {
            this.loop_.get().mark_dirty(py, slf.clone().unbind());
        }
        if now {
            Self::send_direct(slf)?;
        }
        Self::maybe_pause_protocol(slf)
    }

    /// The loop is closing: the driver is gone, so no operation is in flight any more.
    pub(crate) fn driver_gone(&self, py: Python<'_>) {
        let mut st = self.st.borrow_mut(py);
        st.recv_op = None;
        st.send_op = None;
        st.send_ready_op = None;
        st.held.clear();
        st.queue.clear();
        if st.sock.is_none() && st.fd >= 0 {
            // SAFETY: we own this fd and nothing refers to it any more.
            unsafe { libc::close(st.fd) };
            st.fd = -1;
        }
    }

    fn deliver_held_now(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        loop {
            let item = {
                let mut st = this.st.borrow_mut(py);
                if st.reading_paused || st.closing {
                    st.deliver_scheduled = false;
                    return Ok(());
                }
                st.held.pop_front()
            };
            match item {
                None => break,
                Some(Held::Eof) => Self::eof(slf)?,
                Some(Held::Data(bytes)) => Self::deliver_bytes(slf, &bytes)?,
            }
        }
        this.st.borrow_mut(py).deliver_scheduled = false;
        this.arm_recv(py)
    }

    fn deliver_bytes(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<()> {
        let py = slf.py();
        let receiver = match &slf.get().st.borrow(py).receiver {
            Some(r) => r.clone_ref(py),
            None => return Ok(()),
        };
        match receiver {
            Receiver::Buffered {
                get_buffer,
                buffer_updated,
            } => Self::feed_all(
                slf,
                (get_buffer.bind(py), buffer_updated.bind(py)),
                &[data],
                true,
            ),
            Receiver::Data(data_received) => {
                let bytes = PyBytes::new(py, data);
                if let Err(e) = call1(data_received.bind(py), &bytes) {
                    if is_fatal_to_loop(py, &e) {
                        return Err(e);
                    }
                    let exc = e.into_value(py).into_any();
                    Self::fatal_error(
                        slf,
                        exc,
                        "Fatal error: protocol.data_received() call failed.",
                    )?;
                }
                Ok(())
            }
        }
    }
}

#[pymethods]
impl StreamCore {
    /// Queues `data` (bytes, bytearray or memoryview) for sending.
    fn write(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        if slf.get().enqueue(slf.py(), data)? {
            Self::after_enqueue(slf)?;
        }
        Ok(())
    }

    /// Queues every item of `list_of_data`.
    fn writelines(slf: &Bound<'_, Self>, list_of_data: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut any = false;
        for item in list_of_data.try_iter()? {
            any |= slf.get().enqueue(slf.py(), &item?)?;
        }
        if any {
            Self::after_enqueue(slf)?;
        }
        Ok(())
    }

    /// Closes the write side once the queue is sent.
    fn write_eof(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        {
            let mut st = slf.get().st.borrow_mut(py);
            if st.closing || st.eof_requested {
                return Ok(());
            }
            st.eof_requested = true;
        }
        Self::after_write_progress(slf)
    }

    fn can_write_eof(&self) -> bool {
        true
    }

    /// Closes after the queue is sent; `connection_lost(None)` follows.
    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let recv = {
            let mut st = this.st.borrow_mut(py);
            if st.closing {
                return Ok(());
            }
            st.closing = true;
            st.held.clear();
            st.recv_op
        };
        this.cancel_op(py, recv);
        let send_now = {
            let st = this.st.borrow(py);
            !st.queue.is_empty() && st.send_op.is_none() && st.send_ready_op.is_none()
        };
        if send_now {
            // Closing: send what is queued now rather than at the next flush, so that
            // connection_lost comes on the next iteration, as with asyncio's transports.
            return Self::send_direct(slf);
        }
        Self::after_write_progress(slf)?;
        Self::maybe_finish(slf)
    }

    /// Closes now, dropping the queue; `connection_lost(None)` follows.
    fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::force_close(slf, None)
    }

    /// Closes now with `exc` for `connection_lost` (what sslproto calls on a fatal
    /// TLS error).
    #[pyo3(signature = (exc = None))]
    fn _force_close(slf: &Bound<'_, Self>, exc: Option<Py<PyAny>>) -> PyResult<()> {
        Self::force_close(slf, exc.filter(|e| !e.is_none(slf.py())))
    }

    fn is_closing(&self, py: Python<'_>) -> bool {
        self.st.borrow(py).closing
    }

    fn is_reading(&self, py: Python<'_>) -> bool {
        let st = self.st.borrow(py);
        !st.reading_paused && !st.closing
    }

    /// Stops `data_received` calls until `resume_reading`.
    fn pause_reading(&self, py: Python<'_>) {
        let recv = {
            let mut st = self.st.borrow_mut(py);
            if st.reading_paused || st.closing {
                return;
            }
            st.reading_paused = true;
            st.recv_op
        };
        self.cancel_op(py, recv);
    }

    /// Resumes receiving; bytes that arrived meanwhile are delivered first.
    fn resume_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let schedule = {
            let mut st = this.st.borrow_mut(py);
            if st.closing || !st.reading_paused {
                return Ok(());
            }
            st.reading_paused = false;
            let s = !st.held.is_empty() && !st.deliver_scheduled;
            if s {
                st.deliver_scheduled = true;
            }
            s
        };
        if schedule {
            let func = slf.getattr(intern!(py, "_deliver_held"))?.unbind();
            return LoopCore::call_soon_internal(
                &this.loop_,
                py,
                func,
                PyTuple::empty(py).unbind(),
            );
        }
        this.arm_recv(py)
    }

    fn get_write_buffer_size(&self, py: Python<'_>) -> usize {
        self.st.borrow(py).queue.len()
    }

    fn get_write_buffer_limits(&self, py: Python<'_>) -> (usize, usize) {
        let st = self.st.borrow(py);
        (st.low, st.high)
    }

    #[pyo3(signature = (high = None, low = None))]
    fn set_write_buffer_limits(
        slf: &Bound<'_, Self>,
        high: Option<i64>,
        low: Option<i64>,
    ) -> PyResult<()> {
        let high = match (high, low) {
            (Some(h), _) => h,
            (None, Some(l)) => 4 * l,
            (None, None) => DEFAULT_HIGH as i64,
        };
        let low = low.unwrap_or(high / 4);
        if !(high >= low && low >= 0) {
            return Err(PyValueError::new_err(format!(
                "high ({high}) must be >= low ({low}) must be >= 0"
            )));
        }
        {
            let mut st = slf.get().st.borrow_mut(slf.py());
            st.high = high as usize;
            st.low = low as usize;
        }
        Self::maybe_pause_protocol(slf)
    }

    fn set_protocol(&self, py: Python<'_>, protocol: &Bound<'_, PyAny>) -> PyResult<()> {
        let receiver = Receiver::of(protocol)?;
        let mut st = self.st.borrow_mut(py);
        st.protocol = Some(protocol.clone().unbind());
        st.receiver = Some(receiver);
        Ok(())
    }

    fn get_protocol(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.st
            .borrow(py)
            .protocol
            .as_ref()
            .map(|p| p.clone_ref(py))
    }

    /// True while the protocol is paused for writing (over the high-water mark).
    fn _protocol_paused(&self, py: Python<'_>) -> bool {
        self.st.borrow(py).protocol_paused
    }

    /// The socket's fd, -1 once closed.
    fn fileno(&self, py: Python<'_>) -> RawFd {
        self.st.borrow(py).fd
    }

    /// Hands the core the socket object made (lazily) for `fd`: it then closes the fd
    /// through it, so the two never both close it.
    fn _adopt_sock(&self, py: Python<'_>, sock: Py<PyAny>) {
        let mut st = self.st.borrow_mut(py);
        if st.fd >= 0 && st.sock.is_none() {
            st.sock = Some(sock);
        }
    }

    /// True once `connection_lost` has been called (or scheduled).
    fn _lost(&self, py: Python<'_>) -> bool {
        let st = self.st.borrow(py);
        st.lost_scheduled || st.finished
    }

    /// A future that completes once everything queued has been sent (sendfile waits on
    /// it before it takes over the socket).
    fn _make_empty_waiter(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        if this.st.borrow(py).empty_waiter.is_some() {
            return Err(PyRuntimeError::new_err("Empty waiter is already set"));
        }
        let fut = this
            .loop_core(py)
            .call_method0(intern!(py, "create_future"))?;
        let drained = {
            let mut st = this.st.borrow_mut(py);
            st.empty_waiter = Some(fut.clone().unbind());
            st.queue.is_empty() && st.send_op.is_none() && st.send_ready_op.is_none()
        };
        if drained {
            fut.call_method1(intern!(py, "set_result"), (py.None(),))?;
        }
        Ok(fut.unbind())
    }

    fn _reset_empty_waiter(&self, py: Python<'_>) {
        self.st.borrow_mut(py).empty_waiter = None;
    }

    /// First callback of a new transport: `connection_made`, then start receiving, then
    /// wake the creator's waiter.
    fn _connection_made(slf: &Bound<'_, Self>, waiter: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        slf.get().ctx.run(py, || Self::connection_made(slf, waiter))
    }

    fn _deliver_held(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.get().ctx.run(slf.py(), || Self::deliver_held_now(slf))
    }

    /// Last callback: close the socket, `connection_lost(exc)`, detach from the server.
    fn _finish(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.get().ctx.run(slf.py(), || Self::finish(slf))
    }
}

impl StreamCore {
    fn connection_made(slf: &Bound<'_, Self>, waiter: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (proto, tr) = {
            let mut st = this.st.borrow_mut(py);
            if st.finished || st.lost_scheduled {
                return Ok(());
            }
            st.connected = true;
            (
                st.protocol.as_ref().map(|p| p.clone_ref(py)),
                st.transport.as_ref().map(|t| t.clone_ref(py)),
            )
        };
        let made = match proto {
            Some(p) => p
                .bind(py)
                .call_method1(intern!(py, "connection_made"), (tr,))
                .map(|_| ()),
            None => Ok(()),
        };
        this.arm_recv(py)?;
        // A waiter that was cancelled meanwhile is done too: leave it alone.
        if !waiter.is_none() && !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
            waiter.call_method1(intern!(py, "set_result"), (py.None(),))?;
        }
        made
    }

    fn finish(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (fd, sock, proto, tr, exc, connected, waiter, cancels) = {
            let mut st = this.st.borrow_mut(py);
            if st.finished {
                return Ok(());
            }
            st.finished = true;
            let fd = std::mem::replace(&mut st.fd, -1);
            (
                fd,
                st.sock.take(),
                st.protocol.take(),
                st.transport.take(),
                st.lost_exc.take(),
                st.connected,
                st.empty_waiter.take(),
                [st.recv_op, st.send_op, st.send_ready_op],
            )
        };
        if fd >= 0 {
            let lp = this.loop_.get();
            let _ = lp.with_io(py, |io| {
                for k in cancels.into_iter().flatten() {
                    io.cancel(k);
                }
                io.forget_fd(fd);
            });
            if cancels.iter().any(Option::is_some) {
                // Every SQE naming `fd` must be in the kernel's hands before the number
                // can be reused; an operation in flight holds the file, not the number.
                lp.submit_now(py)?;
            }
            match &sock {
                Some(s) => {
                    s.bind(py).call_method0(intern!(py, "close"))?;
                }
                // SAFETY: we own `fd`; nothing queued names it any more (see above).
                None => unsafe {
                    libc::close(fd);
                },
            }
        }
        this.release_if_done(py);
        if let Some(w) = waiter {
            let w = w.bind(py);
            if !w.call_method0(intern!(py, "done"))?.is_truthy()? {
                w.call_method1(
                    intern!(py, "set_exception"),
                    (PyConnectionError::new_err("Connection is closed by peer").into_value(py),),
                )?;
            }
        }
        let lost = match (&proto, connected) {
            (Some(p), true) => p
                .bind(py)
                .call_method1(intern!(py, "connection_lost"), (exc,))
                .map(|_| ()),
            _ => Ok(()),
        };
        if let Some(tr) = tr {
            tr.bind(py).call_method0(intern!(py, "_ringway_detached"))?;
        }
        lost
    }
}
