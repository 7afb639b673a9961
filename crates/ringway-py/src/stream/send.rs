//! The send side: the write queue, the one vectored send per loop iteration (an SQE on
//! io_uring, `sendmsg` on epoll, waiting for room when the socket is full), flow
//! control (`pause_writing`/`resume_writing` at the water marks), `write_eof`, and the
//! empty-queue waiter that `sendfile` uses.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView};

use super::{is_fatal_to_loop, os_error, Phase, StreamCore};
use crate::io_driver::{IoEvent, IoOp, OpKey};
use crate::sources::{token, Kind, SourceId};
use crate::write_queue::{WriteQueue, MAX_IOVECS};

/// asyncio's defaults: pause the protocol above 64 KiB queued, resume at a quarter.
pub(super) const DEFAULT_HIGH: usize = 64 * 1024;
/// After this many writes to a lost connection, each further one logs a warning.
const LOG_THRESHOLD_FOR_CONNLOST_WRITES: u32 = 5;

/// What keeps a queued chunk's memory alive.
pub(super) enum ChunkOwner {
    Bytes(#[allow(dead_code)] Py<PyBytes>),
    Owned(#[allow(dead_code)] Vec<u8>),
}

/// The operation the send side waits for (at most one: sends stay ordered).
#[derive(Clone, Copy)]
pub(super) enum InFlight {
    None,
    /// A vectored send (io_uring); its iovecs point into the queue.
    Send(OpKey),
    /// Waiting for room in a full socket (epoll, or a direct send that filled it).
    WaitRoom(OpKey),
}

impl InFlight {
    pub(super) fn key(self) -> Option<OpKey> {
        match self {
            InFlight::None => None,
            InFlight::Send(k) | InFlight::WaitRoom(k) => Some(k),
        }
    }

    fn is_idle(self) -> bool {
        matches!(self, InFlight::None)
    }
}

/// `write_eof()`: the write side's end.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteEof {
    Open,
    /// Asked for: the socket's write side shuts once the queue is sent.
    Requested,
    /// `shutdown(SHUT_WR)` done.
    Sent,
}

/// The send side's state.
pub(super) struct SendSide {
    pub(super) queue: WriteQueue<ChunkOwner>,
    /// The iovecs of the send in flight (refilled only when none is).
    iov: Vec<libc::iovec>,
    pub(super) in_flight: InFlight,
    /// On the loop's list of transports to flush before it waits.
    dirty: bool,
    pub(super) high: usize,
    pub(super) low: usize,
    /// `pause_writing` was called and `resume_writing` not yet.
    pub(super) protocol_paused: bool,
    pub(super) write_eof: WriteEof,
    pub(super) empty_waiter: Option<Py<PyAny>>,
    /// Writes dropped because the connection was lost (asyncio warns past a few).
    lost_writes: u32,
}

impl Default for SendSide {
    fn default() -> SendSide {
        SendSide {
            queue: WriteQueue::default(),
            iov: Vec::new(),
            in_flight: InFlight::None,
            dirty: false,
            high: DEFAULT_HIGH,
            low: DEFAULT_HIGH / 4,
            protocol_paused: false,
            write_eof: WriteEof::Open,
            empty_waiter: None,
            lost_writes: 0,
        }
    }
}

impl SendSide {
    /// Nothing queued and nothing in flight.
    pub(super) fn drained(&self) -> bool {
        self.queue.is_empty() && self.in_flight.is_idle()
    }

    /// Something is queued or in flight.
    pub(super) fn writing(&self) -> bool {
        !self.drained()
    }

    /// Drops the queue, unless a send in flight points into it (its completion will).
    pub(super) fn drop_queue(&mut self) {
        if !matches!(self.in_flight, InFlight::Send(_)) {
            self.queue.clear();
        }
    }

    /// `sendmsg` from the queue until it is empty or the socket is full. `Ok(true)`:
    /// full; `Err(errno)`: failed. `sends` counts the calls.
    fn send_now(&mut self, fd: libc::c_int, sends: &mut u64) -> Result<bool, i32> {
        while !self.queue.is_empty() && fd >= 0 {
            self.queue.fill_iovecs(&mut self.iov, MAX_IOVECS);
            let want: usize = self.iov.iter().map(|v| v.iov_len).sum();
            // SAFETY: a zeroed msghdr is valid; the iovecs point into live chunks of the
            // queue.
            let r = unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = self.iov.as_mut_ptr();
                msg.msg_iovlen = self.iov.len() as _;
                libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
            };
            *sends += 1;
            if r < 0 {
                let e = std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                match e {
                    libc::EINTR => continue,
                    libc::EAGAIN => return Ok(true),
                    e => return Err(e),
                }
            }
            self.queue.consume(r as usize);
            if (r as usize) < want {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// What `after_write_progress` found to do, decided under one borrow.
struct Progress {
    resume: bool,
    drained: bool,
    waiter: Option<Py<PyAny>>,
    shutdown_fd: Option<libc::c_int>,
    /// Back on the loop's flush list (a short send: the rest goes before the next wait).
    redirty: Option<SourceId>,
}

impl StreamCore {
    /// Queues one bytes-like object. Returns false if the write was dropped.
    pub(super) fn enqueue(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<bool> {
        let mut st = self.st.borrow_mut(py);
        if st.send.write_eof != WriteEof::Open {
            return Err(PyRuntimeError::new_err(
                "Cannot call write() after write_eof()",
            ));
        }
        if st.send.empty_waiter.is_some() {
            return Err(PyRuntimeError::new_err(
                "unable to write; sendfile is in progress",
            ));
        }
        if let Ok(b) = data.cast::<PyBytes>() {
            let bytes = b.as_bytes();
            if bytes.is_empty() {
                return Ok(false);
            }
            if st.phase.is_lost() {
                drop(st);
                return self.lost_write(py);
            }
            let (ptr, len) = (bytes.as_ptr(), bytes.len());
            // SAFETY: a bytes object's buffer never moves or changes while it is alive,
            // and the queue keeps it alive.
            unsafe {
                st.send
                    .queue
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
        if st.phase.is_lost() {
            drop(st);
            return self.lost_write(py);
        }
        let (ptr, len) = (owned.as_ptr(), owned.len());
        // SAFETY: the Vec's heap block does not move when the Vec moves into the queue.
        unsafe { st.send.queue.push(ptr, len, ChunkOwner::Owned(owned)) };
        Ok(true)
    }

    /// A write to a lost connection: dropped, and counted (asyncio warns past a few).
    fn lost_write(&self, py: Python<'_>) -> PyResult<bool> {
        let warn = {
            let mut st = self.st.borrow_mut(py);
            st.send.lost_writes += 1;
            st.send.lost_writes >= LOG_THRESHOLD_FOR_CONNLOST_WRITES
        };
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
    pub(super) fn after_enqueue(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (now, mark) = {
            let mut st = this.st.borrow_mut(py);
            let idle = st.send.in_flight.is_idle();
            let now = idle && st.send.queue.len() > st.send.high && st.fd >= 0;
            let mark = if !now && !st.send.dirty && idle {
                st.send.dirty = st.id.is_some();
                st.id
            } else {
                None
            };
            (now, mark)
        };
        if let Some(id) = mark {
            this.loop_.get().mark_dirty(py, id);
        }
        if now {
            Self::send_direct(slf)?;
        }
        Self::maybe_pause_protocol(slf)
    }

    /// Called by the loop before it waits, for a transport written to in this iteration.
    pub(super) fn flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        {
            let mut st = this.st.borrow_mut(py);
            st.send.dirty = false;
            if st.phase.is_lost() || st.fd < 0 || st.send.queue.is_empty() {
                return Ok(());
            }
            if !st.send.in_flight.is_idle() {
                return Ok(()); // its completion continues
            }
            if this.loop_.get().is_uring() {
                return this.submit_send(py, &mut st);
            }
        }
        Self::send_direct(slf)
    }

    /// io_uring: the whole queue as one vectored send, riding the next enter.
    fn submit_send(&self, py: Python<'_>, st: &mut super::StreamState) -> PyResult<()> {
        let Some(id) = st.id else { return Ok(()) };
        let send = &mut st.send;
        send.queue.fill_iovecs(&mut send.iov, MAX_IOVECS);
        let (fd, iov, iovcnt) = (st.fd, send.iov.as_ptr(), send.iov.len() as u32);
        // SAFETY: the iovecs and the chunks they point at stay untouched until the
        // send's completion: the iovec vector is only refilled when no send is in
        // flight, and queued chunks are only dropped by `consume`/`clear`, which run
        // after the completion (`drop_queue` leaves a queue a send points into).
        let key = self.loop_.get().with_io(py, |io| unsafe {
            io.submit(
                IoOp::SendVectored { fd, iov, iovcnt },
                token(id, Kind::Send),
            )
        })?;
        send.in_flight = InFlight::Send(key);
        self.loop_.get().count_sends(py, 1);
        Ok(())
    }

    /// Sends from the queue with `sendmsg` until it is empty or the socket is full;
    /// waits for room if it is full.
    pub(super) fn send_direct(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let mut sends = 0;
        let outcome = {
            let mut st = this.st.borrow_mut(py);
            let fd = st.fd;
            st.send.send_now(fd, &mut sends)
        };
        this.loop_.get().count_sends(py, sends);
        match outcome {
            Err(errno) => {
                let exc = os_error(py, errno);
                Self::fatal_error(slf, exc, "Fatal write error on socket transport")
            }
            Ok(full) => {
                if full {
                    this.wait_for_room(py)?;
                }
                Self::after_write_progress(slf)
            }
        }
    }

    /// The socket is full: poll for room (its completion sends the rest).
    fn wait_for_room(&self, py: Python<'_>) -> PyResult<()> {
        let mut st = self.st.borrow_mut(py);
        if !st.send.in_flight.is_idle() {
            return Ok(());
        }
        let Some(id) = st.id else { return Ok(()) };
        let fd = st.fd;
        // SAFETY: a poll carries no pointers.
        let key = self.loop_.get().with_io(py, |io| unsafe {
            io.submit(
                IoOp::Poll {
                    fd,
                    events: libc::POLLOUT as u32,
                },
                token(id, Kind::SendReady),
            )
        })?;
        st.send.in_flight = InFlight::WaitRoom(key);
        Ok(())
    }

    /// The vectored send's completion.
    pub(super) fn on_send(slf: &Bound<'_, Self>, ev: &IoEvent) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (failed, finished) = {
            let mut st = this.st.borrow_mut(py);
            st.send.in_flight = InFlight::None;
            let failed = if st.phase.is_lost() {
                st.send.queue.clear();
                None
            } else if ev.result >= 0 {
                st.send.queue.consume(ev.result as usize);
                None
            } else if ev.result == -libc::ECANCELED {
                None
            } else {
                Some(-ev.result)
            };
            (failed, matches!(st.phase, Phase::Finished))
        };
        if finished {
            this.release_if_done(py);
            return Ok(());
        }
        if let Some(errno) = failed {
            let exc = os_error(py, errno);
            return Self::fatal_error(slf, exc, "Fatal write error on socket transport");
        }
        Self::after_write_progress(slf)
    }

    /// Room in a full socket (or the poll's cancel).
    pub(super) fn on_send_ready(slf: &Bound<'_, Self>, ev: &IoEvent) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (finished, stop) = {
            let mut st = this.st.borrow_mut(py);
            st.send.in_flight = InFlight::None;
            let finished = matches!(st.phase, Phase::Finished);
            (
                finished,
                st.phase.is_lost() || ev.result == -libc::ECANCELED,
            )
        };
        if finished {
            this.release_if_done(py);
            return Ok(());
        }
        if stop {
            return Self::maybe_finish(slf);
        }
        Self::send_direct(slf)
    }

    /// After bytes left (or the queue was dropped): resume the protocol, wake a
    /// sendfile waiter, send the pending EOF, finish a close.
    pub(super) fn after_write_progress(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let p = this.progress(py);
        if let Some(id) = p.redirty {
            this.loop_.get().mark_dirty(py, id);
        }
        if let Some(fd) = p.shutdown_fd {
            // SAFETY: shutting down the write side of our own open socket.
            unsafe { libc::shutdown(fd, libc::SHUT_WR) };
        }
        if let Some(w) = p.waiter {
            let w = w.bind(py);
            if !w.call_method0(intern!(py, "done"))?.is_truthy()? {
                w.call_method1(intern!(py, "set_result"), (py.None(),))?;
            }
        }
        if p.resume {
            Self::call_protocol_flow(slf, intern!(py, "resume_writing"))?;
        }
        if p.drained {
            Self::maybe_finish(slf)?;
        }
        Ok(())
    }

    fn progress(&self, py: Python<'_>) -> Progress {
        let mut st = self.st.borrow_mut(py);
        let st = &mut *st;
        let send = &mut st.send;
        let resume = send.protocol_paused && send.queue.len() <= send.low;
        if resume {
            send.protocol_paused = false;
        }
        let idle = send.in_flight.is_idle();
        let drained = send.drained();
        let waiter = match (drained, &send.empty_waiter) {
            (true, Some(w)) => Some(w.clone_ref(py)),
            _ => None,
        };
        let shutdown = drained && send.write_eof == WriteEof::Requested && st.fd >= 0;
        if shutdown {
            send.write_eof = WriteEof::Sent;
        }
        // A short send on io_uring: send the rest before the next wait.
        let redirty = match st.id {
            Some(id) if !send.queue.is_empty() && idle && !st.phase.is_lost() && !send.dirty => {
                send.dirty = true;
                Some(id)
            }
            _ => None,
        };
        Progress {
            resume,
            drained,
            waiter,
            shutdown_fd: shutdown.then_some(st.fd),
            redirty,
        }
    }

    /// `protocol.pause_writing()` / `resume_writing()`, in the transport's context; an
    /// exception goes to the exception handler.
    fn call_protocol_flow(
        slf: &Bound<'_, Self>,
        method: &Bound<'_, pyo3::types::PyString>,
    ) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (tr, proto) = {
            let st = this.st.borrow(py);
            (
                st.face.transport.as_ref().map(|t| t.clone_ref(py)),
                st.face.protocol.as_ref().map(|p| p.clone_ref(py)),
            )
        };
        let Some(proto) = proto else { return Ok(()) };
        let called = this.ctx.run(py, || proto.bind(py).call_method0(method));
        if let Err(e) = called {
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

    pub(super) fn maybe_pause_protocol(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let pause = {
            let mut st = slf.get().st.borrow_mut(py);
            let pause = !st.send.protocol_paused && st.send.queue.len() > st.send.high;
            if pause {
                st.send.protocol_paused = true;
            }
            pause
        };
        if pause {
            Self::call_protocol_flow(slf, intern!(py, "pause_writing"))?;
        }
        Ok(())
    }

    /// `write_eof()`: the write side shuts once the queue is sent.
    pub(super) fn request_write_eof(slf: &Bound<'_, Self>) -> PyResult<()> {
        {
            let mut st = slf.get().st.borrow_mut(slf.py());
            if !st.is_open() || st.send.write_eof != WriteEof::Open {
                return Ok(());
            }
            st.send.write_eof = WriteEof::Requested;
        }
        Self::after_write_progress(slf)
    }

    /// `set_write_buffer_limits(high, low)`, asyncio's defaults and checks.
    pub(super) fn set_limits(
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
            st.send.high = high as usize;
            st.send.low = low as usize;
        }
        Self::maybe_pause_protocol(slf)
    }

    /// A future that completes once everything queued has been sent (sendfile waits on
    /// it before it takes over the socket).
    pub(super) fn make_empty_waiter(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        if this.st.borrow(py).send.empty_waiter.is_some() {
            return Err(PyRuntimeError::new_err("Empty waiter is already set"));
        }
        let fut = this
            .loop_core(py)
            .call_method0(intern!(py, "create_future"))?;
        let drained = {
            let mut st = this.st.borrow_mut(py);
            st.send.empty_waiter = Some(fut.clone().unbind());
            st.send.drained()
        };
        if drained {
            fut.call_method1(intern!(py, "set_result"), (py.None(),))?;
        }
        Ok(fut.unbind())
    }
}
