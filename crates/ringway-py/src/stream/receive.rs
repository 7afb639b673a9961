//! The receive side: the multishot receive, delivery to the protocol (`data_received`,
//! or `get_buffer`/`buffer_updated`), `pause_reading`/`resume_reading` and what is held
//! meanwhile, end of stream.
//!
//! Two ways in ([`RecvMode`]). By default one multishot receive into the driver's pool:
//! no syscall per message, and a turn's messages of every connection arrive together.
//! A `data_received` protocol that gets [`DIRECT_AT`] or more in one turn moves to
//! direct reads: a readiness poll, then one `read` into a `bytes` object the size of
//! what came, handed to the protocol at once, connection by connection. For large
//! messages that is less work than the pool: the kernel writes into memory the
//! allocator just freed (the last message's `bytes`, still in cache) instead of into
//! a pool that one turn of ten 100 KiB messages cycles through, and nothing is copied
//! out of the pool (docs/measurements.md, "S14 100 KiB"). A direct read under
//! [`POOL_BELOW`] moves the transport back to the pool.

use std::collections::VecDeque;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;

use super::{call1, is_fatal_to_loop, os_error, StreamCore};
use crate::io_driver::{IoEvent, IoOp, OpKey};
use crate::sources::{token, Kind};

/// A turn's delivery of at least this many bytes moves a `data_received` protocol to
/// direct reads.
pub(super) const DIRECT_AT: usize = 64 * 1024;
/// A direct read of fewer bytes than this moves it back to the pool.
pub(super) const POOL_BELOW: usize = 16 * 1024;
/// What one direct read asks for. Below glibc's default mmap threshold (128 KiB, with
/// the object's header): a larger `bytes` object is a fresh `mmap` each time, its pages
/// faulted in by the read and unmapped when it dies (83 µs a 100 KiB message instead of
/// 16), while this one reuses the heap block the last message's object freed.
const DIRECT_READ: usize = 127 * 1024;

/// How the transport receives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RecvMode {
    /// The multishot receive into the driver's pool.
    Pool,
    /// A readiness poll, then a `read` into a new `bytes` object.
    Direct,
}

/// The receive operation's state.
#[derive(Clone, Copy)]
pub(super) enum RecvOp {
    /// None in flight: not armed yet, paused, or behind held data.
    Idle,
    /// The multishot receive (pool mode) or the readiness poll (direct mode) is in
    /// flight (perhaps cancelled, until its last word).
    Armed(OpKey),
    /// The peer ended the stream: nothing more to receive.
    Ended,
}

/// Something received while reading was paused (or behind such data). Bytes are
/// copied out of the pool at once: a paused transport must not hold the pool buffers
/// every other connection receives into.
pub(super) enum Held {
    Data(Vec<u8>),
    Eof,
}

/// The protocol's receiving methods, bound once (when the protocol is set), as uvloop
/// does: each delivery is then one vectorcall, with no method lookup.
pub(super) enum Receiver {
    Data(Py<PyAny>),
    Buffered {
        get_buffer: Py<PyAny>,
        buffer_updated: Py<PyAny>,
    },
}

impl Receiver {
    pub(super) fn of(protocol: &Bound<'_, PyAny>) -> PyResult<Receiver> {
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

/// One `bytes` object of the pool buffers of `evs`, in order: allocated uninitialised
/// and written once. (pyo3's `PyBytes::new_with` zeroes the object before its closure
/// fills it: a second pass over every byte, 100 KB of `memset` per 100 KiB message.)
fn joined_bytes<'py>(py: Python<'py>, evs: &[IoEvent]) -> PyResult<Bound<'py, PyBytes>> {
    let bufs = || evs.iter().filter_map(|e| e.buf.as_deref());
    let total: usize = bufs().map(|b| b.len()).sum();
    // SAFETY: the GIL is held; a NULL source makes CPython allocate `total` bytes
    // uninitialised (or fail with an exception set, which `from_owned_ptr_or_err`
    // takes); the object is new, so nobody else sees it before every byte of it is
    // written below.
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), total as pyo3::ffi::Py_ssize_t),
        )?
    };
    // SAFETY: `obj` is a bytes object of `total` bytes; the slices are copied end to end
    // and add up to `total`.
    unsafe {
        let mut dst = pyo3::ffi::PyBytes_AsString(obj.as_ptr()) as *mut u8;
        for b in bufs() {
            std::ptr::copy_nonoverlapping(b.as_ptr(), dst, b.len());
            dst = dst.add(b.len());
        }
    }
    Ok(obj.cast_into::<PyBytes>()?)
}

/// What one direct read brought.
enum Read<'py> {
    Data(Bound<'py, PyBytes>),
    /// Nothing there after all (`EAGAIN`).
    Again,
    Eof,
    Failed(i32),
}

/// One `read` of up to [`DIRECT_READ`] bytes from `fd` into a new `bytes` object,
/// shrunk to what came (as `socket.recv` does). The object is allocated uninitialised
/// and written once, by the kernel.
fn read_bytes(py: Python<'_>, fd: libc::c_int) -> PyResult<Read<'_>> {
    // SAFETY: the GIL is held; a NULL source makes CPython allocate the object
    // uninitialised (or fail with an exception set, which `from_owned_ptr_or_err`
    // takes); nobody else sees it before it is filled and shrunk below.
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(
                std::ptr::null(),
                DIRECT_READ as pyo3::ffi::Py_ssize_t,
            ),
        )?
    };
    let n = loop {
        // SAFETY: the object holds DIRECT_READ writable bytes; `read` writes at most that.
        let n = unsafe {
            libc::read(
                fd,
                pyo3::ffi::PyBytes_AsString(obj.as_ptr()) as *mut libc::c_void,
                DIRECT_READ,
            )
        };
        if n >= 0 {
            break n as usize;
        }
        match std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
        {
            libc::EINTR => continue,
            libc::EAGAIN => return Ok(Read::Again),
            e => return Ok(Read::Failed(e)),
        }
    };
    if n == 0 {
        return Ok(Read::Eof);
    }
    let mut ptr = obj.into_ptr();
    if n < DIRECT_READ {
        // SAFETY: `ptr` is the only reference to a new bytes object (what
        // `_PyBytes_Resize` requires); on failure it frees the object, sets `ptr` to
        // NULL and leaves an exception set, which `fetch` takes.
        if unsafe { pyo3::ffi::_PyBytes_Resize(&mut ptr, n as pyo3::ffi::Py_ssize_t) } != 0 {
            return Err(PyErr::fetch(py));
        }
    }
    // SAFETY: `ptr` is an owned reference to a bytes object (resized or not).
    let obj = unsafe { Bound::from_owned_ptr(py, ptr) };
    Ok(Read::Data(obj.cast_into::<PyBytes>()?))
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

/// A position in a list of byte slices (the pool buffers of one delivery).
#[derive(Default)]
struct Cursor {
    slice: usize,
    offset: usize,
}

impl Cursor {
    /// Moves past the slice it is at if that is used up (and any empty ones after).
    fn skip_empty(&mut self, slices: &[&[u8]]) {
        while self.slice < slices.len() && self.offset >= slices[self.slice].len() {
            self.slice += 1;
            self.offset = 0;
        }
    }
}

/// The receive side's state.
pub(super) struct RecvSide {
    pub(super) op: RecvOp,
    /// `pause_reading()` was called (and not yet resumed).
    pub(super) paused: bool,
    /// Received while paused, in order; delivered first on resume.
    pub(super) held: VecDeque<Held>,
    /// `_deliver_held` is scheduled.
    pub(super) deliver_scheduled: bool,
    pub(super) receiver: Option<Receiver>,
    pub(super) mode: RecvMode,
}

impl RecvSide {
    pub(super) fn new(receiver: Receiver) -> RecvSide {
        RecvSide {
            op: RecvOp::Idle,
            paused: false,
            held: VecDeque::new(),
            deliver_scheduled: false,
            receiver: Some(receiver),
            mode: RecvMode::Pool,
        }
    }

    /// The receive in flight, if any.
    pub(super) fn op_in_flight(&self) -> Option<OpKey> {
        match self.op {
            RecvOp::Armed(k) => Some(k),
            _ => None,
        }
    }

    /// Bytes must wait: reading is paused, or held bytes go first.
    fn must_hold(&self) -> bool {
        self.paused || !self.held.is_empty()
    }
}

impl StreamCore {
    /// Arms the multishot receive (or, in direct mode, the readiness poll) if reading
    /// should be on and none is in flight.
    pub(super) fn arm_recv(&self, py: Python<'_>) -> PyResult<()> {
        let mut st = self.st.borrow_mut(py);
        let idle = matches!(st.recv.op, RecvOp::Idle);
        if !idle || !st.is_open() || st.recv.must_hold() || st.fd < 0 {
            return Ok(());
        }
        let Some(id) = st.id else { return Ok(()) };
        let fd = st.fd;
        let (op, kind) = match st.recv.mode {
            RecvMode::Pool => (IoOp::RecvMulti { fd }, Kind::Recv),
            RecvMode::Direct => (
                IoOp::Poll {
                    fd,
                    events: libc::POLLIN as u32,
                },
                Kind::RecvReady,
            ),
        };
        // SAFETY: a pool receive and a poll carry no pointers.
        let key = self
            .loop_
            .get()
            .with_io(py, |io| unsafe { io.submit(op, token(id, kind)) })?;
        st.recv.op = RecvOp::Armed(key);
        Ok(())
    }

    /// Completions of the receive (consecutive ones of one turn together).
    pub(super) fn on_recv(slf: &Bound<'_, Self>, evs: &mut [IoEvent]) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let last = evs.iter().any(|e| e.last);
        let has_data = evs[0].buf.is_some() && evs[0].result > 0;
        let hold = {
            let mut st = this.st.borrow_mut(py);
            if last {
                st.recv.op = RecvOp::Idle;
            }
            if !st.is_open() {
                drop(st);
                if last {
                    this.release_if_done(py);
                    Self::maybe_finish(slf)?;
                }
                return Ok(());
            }
            let hold = st.recv.must_hold();
            if hold && has_data {
                let bufs = evs.iter().filter_map(|e| e.buf.as_deref());
                st.recv.held.extend(bufs.map(|b| Held::Data(b.to_vec())));
            }
            hold
        };
        if !hold && has_data {
            Self::deliver(slf, evs)?;
            let got: usize = evs
                .iter()
                .filter_map(|e| e.buf.as_deref())
                .map(<[u8]>::len)
                .sum();
            if got >= DIRECT_AT {
                this.go_direct(py, last);
            }
        }
        if last {
            Self::recv_ended(slf, evs[evs.len() - 1].result)?;
        }
        Ok(())
    }

    /// A large delivery: a `data_received` protocol moves to direct reads. The
    /// multishot receive is cancelled (unless this turn brought its last word): what it
    /// still reports is delivered in order as usual, and its end arms the poll.
    fn go_direct(&self, py: Python<'_>, ended: bool) {
        let cancel = {
            let mut st = self.st.borrow_mut(py);
            let data = matches!(st.recv.receiver, Some(Receiver::Data(_)));
            if !data || st.recv.mode == RecvMode::Direct || !st.is_open() {
                return;
            }
            st.recv.mode = RecvMode::Direct;
            // Paused, the receive is being cancelled already.
            if ended || st.recv.paused {
                None
            } else {
                st.recv.op_in_flight()
            }
        };
        self.cancel_op(py, cancel);
    }

    /// Direct mode: the socket is readable (or the poll ended with `-errno`). One read
    /// into a new `bytes` object goes straight to `data_received`; then the poll is
    /// armed again (or the pool's receive, after a small read).
    pub(super) fn on_recv_ready(slf: &Bound<'_, Self>, result: i32) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let read_from = {
            let mut st = this.st.borrow_mut(py);
            st.recv.op = RecvOp::Idle;
            if !st.is_open() {
                drop(st);
                this.release_if_done(py);
                return Self::maybe_finish(slf);
            }
            let data = matches!(st.recv.receiver, Some(Receiver::Data(_)));
            if !data {
                // `set_protocol` gave it a BufferedProtocol: back to the pool.
                st.recv.mode = RecvMode::Pool;
            }
            let can_read = data && result > 0 && !st.recv.must_hold() && st.fd >= 0;
            can_read.then_some(st.fd)
        };
        let Some(fd) = read_from else {
            if result < 0 && result != -libc::ECANCELED {
                return Self::recv_ended(slf, result);
            }
            return this.arm_recv(py);
        };
        this.loop_.get().count_direct_read(py);
        match read_bytes(py, fd)? {
            Read::Data(bytes) => {
                if bytes.as_bytes().len() < POOL_BELOW {
                    this.st.borrow_mut(py).recv.mode = RecvMode::Pool;
                }
                // Armed before the protocol runs, as the pool's receive stays armed: a
                // `KeyboardInterrupt` out of `data_received` must not leave the
                // transport deaf (a pause or close from inside it cancels this).
                this.arm_recv(py)?;
                match this.receiver(py) {
                    Some(Receiver::Data(f)) => Self::data_received(slf, f.bind(py), &bytes),
                    // Checked before the read, and no Python ran since: unreachable.
                    _ => Ok(()),
                }
            }
            Read::Again => this.arm_recv(py),
            Read::Eof => Self::recv_ended(slf, 0),
            Read::Failed(errno) => Self::recv_ended(slf, -errno),
        }
    }

    /// The receive's last completion, with `result`: end of stream, a pause's cancel
    /// (or a receive that ended after data: receive again if reading is still wanted),
    /// or an error.
    fn recv_ended(slf: &Bound<'_, Self>, result: i32) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        if result == 0 {
            let hold = {
                let mut st = this.st.borrow_mut(py);
                st.recv.op = RecvOp::Ended;
                let hold = st.recv.must_hold();
                if hold {
                    st.recv.held.push_back(Held::Eof);
                }
                hold
            };
            if !hold {
                Self::eof(slf)?;
            }
        } else if result == -libc::ECANCELED || result > 0 {
            this.arm_recv(py)?;
        } else if result < 0 {
            let exc = os_error(py, -result);
            Self::fatal_error(slf, exc, "Fatal read error on socket transport")?;
        }
        Ok(())
    }

    fn receiver(&self, py: Python<'_>) -> Option<Receiver> {
        self.st
            .borrow(py)
            .recv
            .receiver
            .as_ref()
            .map(|r| r.clone_ref(py))
    }

    /// Hands received bytes (the pool buffers of `evs`) to the protocol; what it cannot
    /// take now (it paused reading or closed from inside a callback) is held.
    fn deliver(slf: &Bound<'_, Self>, evs: &[IoEvent]) -> PyResult<()> {
        let py = slf.py();
        let Some(receiver) = slf.get().receiver(py) else {
            return Ok(());
        };
        match receiver {
            Receiver::Data(data_received) => {
                let data = if evs.len() == 1 {
                    PyBytes::new(py, evs[0].buf.as_deref().unwrap_or(&[]))
                } else {
                    joined_bytes(py, evs)?
                };
                Self::data_received(slf, data_received.bind(py), &data)
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

    /// `protocol.data_received(data)`; an exception from it is a fatal error of the
    /// transport (`SystemExit` and `KeyboardInterrupt` stop the loop).
    fn data_received(
        slf: &Bound<'_, Self>,
        data_received: &Bound<'_, PyAny>,
        data: &Bound<'_, PyBytes>,
    ) -> PyResult<()> {
        let py = slf.py();
        if let Err(e) = call1(data_received, data) {
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

    /// Feeds `slices` to a BufferedProtocol until it is all taken or the transport
    /// pauses or closes from inside a callback; the rest is held (copied): behind what
    /// is held already, or in front of it when it came from there (`from_held`). Each
    /// `get_buffer()` is filled from as many slices as fit (as asyncio's `recv_into`
    /// fills it from the socket), so a message that came in many pool buffers costs
    /// one `get_buffer`/`buffer_updated` round per protocol buffer, not per pool buffer.
    fn feed_all(
        slf: &Bound<'_, Self>,
        methods: (&Bound<'_, PyAny>, &Bound<'_, PyAny>),
        slices: &[&[u8]],
        from_held: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let mut at = Cursor::default();
        at.skip_empty(slices);
        while at.slice < slices.len() {
            {
                let mut st = this.st.borrow_mut(py);
                if st.recv.paused || !st.is_open() {
                    if st.is_open() {
                        let rest = std::iter::once(&slices[at.slice][at.offset..])
                            .chain(slices[at.slice + 1..].iter().copied())
                            .map(|d| Held::Data(d.to_vec()));
                        if from_held {
                            for (k, h) in rest.enumerate() {
                                st.recv.held.insert(k, h);
                            }
                        } else {
                            st.recv.held.extend(rest);
                        }
                    }
                    return Ok(());
                }
            }
            if let Err((e, what)) = Self::feed_buffered(py, methods, slices, &mut at) {
                if is_fatal_to_loop(py, &e) {
                    return Err(e);
                }
                let exc = e.into_value(py).into_any();
                let msg = format!("Fatal error: protocol.{what}() call failed.");
                return Self::fatal_error(slf, exc, &msg);
            }
        }
        Ok(())
    }

    /// One `get_buffer` / copy / `buffer_updated` round, from `at` on, moving it past
    /// the bytes the protocol's buffer took.
    fn feed_buffered(
        py: Python<'_>,
        (get_buffer, buffer_updated): (&Bound<'_, PyAny>, &Bound<'_, PyAny>),
        slices: &[&[u8]],
        at: &mut Cursor,
    ) -> Result<(), (PyErr, &'static str)> {
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
        let dst = pybuf.buf_ptr() as *mut u8;
        let mut n = 0;
        while n < room && at.slice < slices.len() {
            let src = &slices[at.slice][at.offset..];
            let k = src.len().min(room - n);
            // SAFETY: the buffer is writable, C-contiguous and `room` bytes long, and
            // `n + k <= room`; the exporter keeps it alive while `pybuf` holds the view.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.add(n), k) };
            n += k;
            at.offset += k;
            at.skip_empty(slices);
        }
        drop(pybuf);
        drop(target);
        let Ok(n_obj) = n.into_pyobject(py);
        call1(buffer_updated, n_obj.as_any()).map_err(|e| (e, "buffer_updated"))?;
        Ok(())
    }

    /// `protocol.eof_received()`; unless it returns true, the transport closes.
    fn eof(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let protocol = match &slf.get().st.borrow(py).face.protocol {
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

    /// Stops `data_received` calls until `resume_reading` (the receive is cancelled:
    /// the kernel then pushes back on the peer).
    pub(super) fn pause(&self, py: Python<'_>) {
        let recv = {
            let mut st = self.st.borrow_mut(py);
            if st.recv.paused || !st.is_open() {
                return;
            }
            st.recv.paused = true;
            st.recv.op_in_flight()
        };
        self.cancel_op(py, recv);
    }

    /// Resumes receiving; bytes that arrived meanwhile are delivered first, on the
    /// next iteration.
    pub(super) fn resume(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let schedule = {
            let mut st = this.st.borrow_mut(py);
            if !st.is_open() || !st.recv.paused {
                return Ok(());
            }
            st.recv.paused = false;
            let s = !st.recv.held.is_empty() && !st.recv.deliver_scheduled;
            if s {
                st.recv.deliver_scheduled = true;
            }
            s
        };
        if schedule {
            return Self::call_soon_self(slf, intern!(py, "_deliver_held"));
        }
        this.arm_recv(py)
    }

    /// Delivers what was held, in order, until reading pauses again; then receives.
    pub(super) fn deliver_held_now(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        loop {
            let item = {
                let mut st = this.st.borrow_mut(py);
                if st.recv.paused || !st.is_open() {
                    st.recv.deliver_scheduled = false;
                    return Ok(());
                }
                st.recv.held.pop_front()
            };
            match item {
                None => break,
                Some(Held::Eof) => Self::eof(slf)?,
                Some(Held::Data(bytes)) => Self::deliver_bytes(slf, &bytes)?,
            }
        }
        this.st.borrow_mut(py).recv.deliver_scheduled = false;
        this.arm_recv(py)
    }

    fn deliver_bytes(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<()> {
        let py = slf.py();
        let Some(receiver) = slf.get().receiver(py) else {
            return Ok(());
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
                Self::data_received(slf, data_received.bind(py), &bytes)
            }
        }
    }
}
