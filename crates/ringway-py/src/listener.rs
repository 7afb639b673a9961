//! `ListenerCore`: a server socket's multishot accept. Each accepted fd is made
//! non-blocking (asyncio's sockets are) and, for TCP, gets `TCP_NODELAY` (as asyncio
//! sets it), then goes to the server's Python `on_accept(fd)`, which builds the
//! protocol and the transport.
//!
//! Running out of fds (`EMFILE`, `ENFILE`) or memory is reported to the exception
//! handler and accepting pauses for a second, as asyncio does; other per-connection
//! errors (a peer that reset before we accepted) are skipped.

use std::os::fd::RawFd;
use std::rc::Rc;

use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::gil_cell::GilCell;
use crate::io_driver::{IoEvent, IoOp, OpKey};
use crate::io_source::IoSource;
use crate::loop_core::LoopCore;
use crate::protocol_context::ProtocolContext;
use crate::socket_setup::prepare_socket;
use crate::sources::{token, Kind, SourceId};

/// asyncio's `ACCEPT_RETRY_DELAY`.
const ACCEPT_RETRY_DELAY: f64 = 1.0;

struct ListenerState {
    fd: RawFd,
    id: Option<SourceId>,
    op: Option<OpKey>,
    on_accept: Option<Py<PyAny>>,
    tcp: bool,
    closed: bool,
    /// Paused after running out of fds; a timer re-arms.
    backing_off: bool,
}

/// The native half of a listening socket.
#[pyclass(frozen, module = "ringway._ringway")]
pub struct ListenerCore {
    loop_: Py<LoopCore>,
    /// The context that started the server: each connection's transport copies it.
    ctx: ProtocolContext,
    st: GilCell<ListenerState>,
}

impl std::fmt::Debug for ListenerCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListenerCore")
    }
}

impl ListenerCore {
    pub(crate) fn start(
        loop_: &Bound<'_, LoopCore>,
        fd: RawFd,
        on_accept: Py<PyAny>,
        tcp: bool,
    ) -> PyResult<Py<ListenerCore>> {
        let py = loop_.py();
        let core = Py::new(
            py,
            ListenerCore {
                loop_: loop_.clone().unbind(),
                ctx: ProtocolContext::capture(py)?,
                st: GilCell::new(ListenerState {
                    fd,
                    id: None,
                    op: None,
                    on_accept: Some(on_accept),
                    tcp,
                    closed: false,
                    backing_off: false,
                }),
            },
        )?;
        let id = loop_.get().register(py, Rc::new(core.clone_ref(py)));
        core.get().st.borrow_mut(py).id = Some(id);
        core.get().arm(py)?;
        Ok(core)
    }

    fn arm(&self, py: Python<'_>) -> PyResult<()> {
        let mut st = self.st.borrow_mut(py);
        if st.closed || st.op.is_some() || st.backing_off {
            return Ok(());
        }
        let Some(id) = st.id else { return Ok(()) };
        let fd = st.fd;
        // SAFETY: an accept carries no pointers.
        let key = self.loop_.get().with_io(py, |io| unsafe {
            io.submit(IoOp::AcceptMulti { fd }, token(id, Kind::Accept))
        })?;
        st.op = Some(key);
        Ok(())
    }

    fn on_accept(slf: &Bound<'_, Self>, ev: &IoEvent) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (closed, on_accept, tcp) = {
            let mut st = this.st.borrow_mut(py);
            if ev.last {
                st.op = None;
            }
            (
                st.closed,
                st.on_accept.as_ref().map(|c| c.clone_ref(py)),
                st.tcp,
            )
        };
        if closed {
            if ev.result >= 0 {
                // SAFETY: a connection accepted after the server closed: ours to close.
                unsafe { libc::close(ev.result) };
            }
            if ev.last {
                this.finish(py);
            }
            return Ok(());
        }
        let mut result = Ok(());
        if ev.result >= 0 {
            let fd = ev.result;
            prepare_socket(fd, tcp);
            if let Some(cb) = on_accept {
                if let Err(e) = this.ctx.run(py, || cb.bind(py).call1((fd,))) {
                    if e.is_instance_of::<PySystemExit>(py)
                        || e.is_instance_of::<PyKeyboardInterrupt>(py)
                    {
                        result = Err(e);
                    } else {
                        this.report(py, "Error in connection callback", Some(e))?;
                    }
                }
            }
        } else {
            let errno = -ev.result;
            match errno {
                libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM => {
                    this.report(
                        py,
                        "socket.accept() out of system resource",
                        Some(PyErr::from(std::io::Error::from_raw_os_error(errno))),
                    )?;
                    Self::back_off(slf)?;
                }
                _ => {} // ECONNABORTED and the like: that peer is gone, go on
            }
        }
        if ev.last {
            this.arm(py)?;
        }
        result
    }

    fn report(&self, py: Python<'_>, message: &str, e: Option<PyErr>) -> PyResult<()> {
        let ctx = PyDict::new(py);
        ctx.set_item("message", message)?;
        if let Some(e) = e {
            ctx.set_item("exception", e.into_value(py))?;
        }
        self.loop_
            .bind(py)
            .call_method1(intern!(py, "call_exception_handler"), (ctx,))?;
        Ok(())
    }

    fn back_off(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let op = {
            let mut st = this.st.borrow_mut(py);
            st.backing_off = true;
            st.op
        };
        if let Some(k) = op {
            let _ = this.loop_.get().with_io(py, |io| io.cancel(k));
        }
        let resume = slf.getattr(intern!(py, "_resume"))?;
        this.loop_
            .bind(py)
            .call_method1(intern!(py, "call_later"), (ACCEPT_RETRY_DELAY, resume))?;
        Ok(())
    }

    fn finish(&self, py: Python<'_>) {
        let id = {
            let mut st = self.st.borrow_mut(py);
            st.on_accept = None;
            st.id.take()
        };
        if let Some(id) = id {
            self.loop_.get().unregister(py, id);
        }
    }
}

impl IoSource for Py<ListenerCore> {
    fn on_event(&self, py: Python<'_>, _kind: Kind, evs: &mut [IoEvent]) -> PyResult<()> {
        ListenerCore::on_accept(self.bind(py), &evs[0])
    }

    fn flush(&self, _py: Python<'_>) -> PyResult<()> {
        Ok(())
    }

    fn driver_gone(&self, _py: Python<'_>) {}
}

#[pymethods]
impl ListenerCore {
    /// Starts accepting on the listening socket `fd`; each new connection's fd (made
    /// non-blocking, with `TCP_NODELAY` if `tcp`) goes to `on_accept(fd)`, in the
    /// context current now (the one that started the server).
    #[staticmethod]
    fn _start(
        loop_: &Bound<'_, LoopCore>,
        fd: RawFd,
        on_accept: Py<PyAny>,
        tcp: bool,
    ) -> PyResult<Py<ListenerCore>> {
        Self::start(loop_, fd, on_accept, tcp)
    }

    /// Stops accepting. The cancel is pushed to the kernel at once, so the caller may
    /// close the socket right after this returns.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let (op, fd) = {
            let mut st = self.st.borrow_mut(py);
            if st.closed {
                return Ok(());
            }
            st.closed = true;
            (st.op, st.fd)
        };
        match op {
            Some(k) => {
                let _ = self.loop_.get().with_io(py, |io| {
                    io.cancel(k);
                    io.forget_fd(fd);
                });
                self.loop_.get().submit_now(py)?;
            }
            None => {
                let _ = self.loop_.get().with_io(py, |io| io.forget_fd(fd));
                self.finish(py);
            }
        }
        Ok(())
    }

    /// True while accepting.
    fn is_serving(&self, py: Python<'_>) -> bool {
        !self.st.borrow(py).closed
    }

    fn _resume(&self, py: Python<'_>) -> PyResult<()> {
        self.st.borrow_mut(py).backing_off = false;
        self.arm(py)
    }
}
