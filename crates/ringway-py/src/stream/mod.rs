//! `StreamCore`: the native half of a TCP or Unix stream transport, one file per side
//! and phase:
//!
//! - [`receive`]: one multishot receive into the driver's provided buffers, armed after
//!   `connection_made` and kept until end of stream, an error, `pause_reading` or
//!   `close`. Each completion (consecutive ones of one turn coalesced) goes straight to
//!   `protocol.data_received(bytes)`, or into the protocol's own buffer through
//!   `get_buffer`/`buffer_updated` for a `BufferedProtocol`; what arrives while
//!   reading is paused is copied out of the pool and held. A `data_received` protocol
//!   that gets 64 KiB or more in a turn moves to direct reads (a readiness poll, then
//!   one `read` into a new `bytes` object), and back after a small read.
//! - [`send`]: `write()` appends to a queue (a `bytes` object is kept, not copied); the
//!   loop flushes every transport written to in an iteration before it waits, as one
//!   vectored send (an SQE that rides the turn's single `io_uring_enter`, or a
//!   `sendmsg` on epoll). A queue past the high-water mark is sent at once, and what
//!   the kernel does not take pauses the protocol until the queue drains below the
//!   low-water mark.
//! - [`close`]: the transport's life ([`Phase`]): open, closing (the queue drains),
//!   lost (`connection_lost` scheduled), finished. The fd is closed only after every
//!   operation on it has reported its last completion (the kernel must never see a
//!   recycled fd number), and then `connection_lost` runs.
//! - [`python`]: the Python face (`write`, `close`, `pause_reading`, ... and the loop
//!   callbacks `_connection_made`, `_deliver_held`, `_finish`).
//!
//! Every call into the protocol runs in the context of the call that made the
//! transport ([`ProtocolContext`]).

mod close;
mod python;
mod receive;
mod send;

use std::os::fd::RawFd;
use std::rc::Rc;

use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::gil_cell::GilCell;
use crate::io_driver::{IoEvent, OpKey};
use crate::io_source::IoSource;
use crate::loop_core::LoopCore;
use crate::protocol_context::ProtocolContext;
use crate::socket_setup::prepare_socket;
use crate::sources::{Kind, SourceId};

use receive::{Receiver, RecvSide};
use send::SendSide;

/// Where the transport is in its life. Each phase only ever moves forward.
enum Phase {
    /// Reading and writing (`connection_made` may not have run yet:
    /// `Face::connected`).
    Open,
    /// `close()` was called: what is queued is sent, then `connection_lost(None)`.
    Closing,
    /// `connection_lost(exc)` is scheduled (`_finish`). Nothing more is sent (an
    /// abort's queue is dropped); writes are counted as lost.
    Lost { exc: Option<Py<PyAny>> },
    /// `_finish` ran: the fd is closed and `connection_lost` called; the source stays
    /// registered until the last operation's final completion (which may name it).
    Finished,
}

impl Phase {
    /// `connection_lost` is scheduled or done.
    fn is_lost(&self) -> bool {
        matches!(self, Phase::Lost { .. } | Phase::Finished)
    }
}

/// The Python objects a transport connects: the `asyncio.Transport` around this core,
/// its protocol and (if it owns the fd) its socket object.
struct Face {
    transport: Option<Py<PyAny>>,
    protocol: Option<Py<PyAny>>,
    sock: Option<Py<PyAny>>,
    /// `connection_made` ran (so `connection_lost` is owed).
    connected: bool,
}

struct StreamState {
    fd: RawFd,
    id: Option<SourceId>,
    phase: Phase,
    face: Face,
    recv: RecvSide,
    send: SendSide,
}

impl StreamState {
    fn ops_in_flight(&self) -> bool {
        self.recv.op_in_flight().is_some() || self.send.in_flight.key().is_some()
    }

    /// True until `close()`, `abort()` or a fatal error.
    fn is_open(&self) -> bool {
        matches!(self.phase, Phase::Open)
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

impl IoSource for Py<StreamCore> {
    fn on_event(&self, py: Python<'_>, kind: Kind, evs: &mut [IoEvent]) -> PyResult<()> {
        let slf = self.bind(py);
        match kind {
            Kind::Recv => slf.get().ctx.run(py, || StreamCore::on_recv(slf, evs)),
            Kind::RecvReady => slf
                .get()
                .ctx
                .run(py, || StreamCore::on_recv_ready(slf, evs[0].result)),
            Kind::Send => StreamCore::on_send(slf, &evs[0]),
            Kind::SendReady => StreamCore::on_send_ready(slf, &evs[0]),
            _ => Ok(()),
        }
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        StreamCore::flush(self.bind(py))
    }

    fn driver_gone(&self, py: Python<'_>) {
        self.get().driver_gone(py);
    }
}

fn is_fatal_to_loop(py: Python<'_>, e: &PyErr) -> bool {
    e.is_instance_of::<PySystemExit>(py) || e.is_instance_of::<PyKeyboardInterrupt>(py)
}

fn os_error(py: Python<'_>, errno: i32) -> Py<PyAny> {
    PyErr::from(std::io::Error::from_raw_os_error(errno))
        .into_value(py)
        .into_any()
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

impl StreamCore {
    /// Starts a transport on `fd` (see `StreamCore._start`).
    fn start(
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
        let state = StreamState {
            fd,
            id: None,
            phase: Phase::Open,
            face: Face {
                transport: Some(transport),
                protocol: Some(protocol.clone().unbind()),
                sock,
                connected: false,
            },
            recv: RecvSide::new(Receiver::of(protocol)?),
            send: SendSide::default(),
        };
        let core = Py::new(
            py,
            StreamCore {
                loop_: loop_.clone().unbind(),
                ctx: ProtocolContext::capture(py)?,
                st: GilCell::new(state),
            },
        )?;
        let id = loop_.get().register(py, Rc::new(core.clone_ref(py)));
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

    fn cancel_op(&self, py: Python<'_>, key: Option<OpKey>) {
        if let Some(k) = key {
            let _ = self.loop_.get().with_io(py, |io| io.cancel(k));
        }
    }

    /// Schedules `self.<method>()` for the next iteration of the loop.
    fn call_soon_self(
        slf: &Bound<'_, Self>,
        method: &Bound<'_, pyo3::types::PyString>,
    ) -> PyResult<()> {
        let py = slf.py();
        let func = slf.getattr(method)?.unbind();
        LoopCore::call_soon_internal(&slf.get().loop_, py, func, PyTuple::empty(py).unbind())
    }
}
