//! The transport's life (its [`Phase`]): `close()` (the queue drains first), `abort()` and
//! fatal errors (it is dropped), then `_finish`: the fd closed once nothing queued
//! names it, `connection_lost`, the source unregistered after the last completion.

use std::os::fd::RawFd;

use pyo3::exceptions::{PyConnectionError, PyOSError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::receive::RecvOp;
use super::send::InFlight;
use super::{Phase, StreamCore};
use crate::io_driver::OpKey;

/// What `_finish` takes out of the state under one borrow.
struct Ending {
    fd: RawFd,
    sock: Option<Py<PyAny>>,
    protocol: Option<Py<PyAny>>,
    transport: Option<Py<PyAny>>,
    exc: Option<Py<PyAny>>,
    connected: bool,
    empty_waiter: Option<Py<PyAny>>,
    cancels: [Option<OpKey>; 2],
}

impl StreamCore {
    /// `close()`: stop reading, send what is queued, then `connection_lost(None)`.
    pub(super) fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let (recv, send_now) = {
            let mut st = this.st.borrow_mut(py);
            if !st.is_open() {
                return Ok(());
            }
            st.phase = Phase::Closing;
            st.recv.held.clear();
            let send_now = !st.send.queue.is_empty() && st.send.in_flight.key().is_none();
            (st.recv.op_in_flight(), send_now)
        };
        this.cancel_op(py, recv);
        if send_now {
            // Closing: send what is queued now rather than at the next flush, so that
            // connection_lost comes on the next iteration, as with asyncio's transports.
            return Self::send_direct(slf);
        }
        Self::after_write_progress(slf)?;
        Self::maybe_finish(slf)
    }

    /// asyncio's `_fatal_error`: report (unless it is an `OSError`), then force-close.
    pub(super) fn fatal_error(
        slf: &Bound<'_, Self>,
        exc: Py<PyAny>,
        message: &str,
    ) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let lp = this.loop_core(py);
        if !exc.bind(py).is_instance_of::<PyOSError>() {
            let (tr, proto) = {
                let st = this.st.borrow(py);
                (
                    st.face.transport.as_ref().map(|t| t.clone_ref(py)),
                    st.face.protocol.as_ref().map(|p| p.clone_ref(py)),
                )
            };
            let ctx = PyDict::new(py);
            ctx.set_item("message", message)?;
            ctx.set_item("exception", exc.bind(py))?;
            ctx.set_item("transport", tr)?;
            ctx.set_item("protocol", proto)?;
            lp.call_method1(intern!(py, "call_exception_handler"), (ctx,))?;
        } else if lp.get().debug(py) {
            lp.call_method1(intern!(py, "_ringway_log_debug"), (message, exc.bind(py)))?;
        }
        Self::force_close(slf, Some(exc))
    }

    /// asyncio's `_force_close`: drop the queue, stop everything, `connection_lost(exc)`
    /// on the next iteration.
    pub(super) fn force_close(slf: &Bound<'_, Self>, exc: Option<Py<PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let cancels = {
            let mut st = this.st.borrow_mut(py);
            if st.phase.is_lost() {
                return Ok(());
            }
            st.send.drop_queue();
            st.recv.held.clear();
            st.phase = Phase::Lost { exc };
            [st.recv.op_in_flight(), st.send.in_flight.key()]
        };
        for k in cancels {
            this.cancel_op(py, k);
        }
        Self::call_soon_self(slf, intern!(py, "_finish"))
    }

    /// After `close()`: once the queue is sent, `connection_lost` is scheduled. The
    /// receive need not have ended: `_finish` pushes its cancel to the kernel before
    /// closing the fd.
    pub(super) fn maybe_finish(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        {
            let mut st = slf.get().st.borrow_mut(py);
            if !matches!(st.phase, Phase::Closing) || st.send.writing() {
                return Ok(());
            }
            st.phase = Phase::Lost { exc: None };
        }
        Self::call_soon_self(slf, intern!(py, "_finish"))
    }

    /// `_finish`: close the socket, `connection_lost(exc)`, detach from the server.
    pub(super) fn finish(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let Some(end) = this.take_ending(py) else {
            return Ok(());
        };
        if end.fd >= 0 {
            this.close_fd(py, end.fd, end.sock.as_ref(), end.cancels)?;
        }
        this.release_if_done(py);
        if let Some(w) = end.empty_waiter {
            let w = w.bind(py);
            if !w.call_method0(intern!(py, "done"))?.is_truthy()? {
                let err = PyConnectionError::new_err("Connection is closed by peer");
                w.call_method1(intern!(py, "set_exception"), (err.into_value(py),))?;
            }
        }
        let lost = match (&end.protocol, end.connected) {
            (Some(p), true) => p
                .bind(py)
                .call_method1(intern!(py, "connection_lost"), (end.exc,))
                .map(|_| ()),
            _ => Ok(()),
        };
        if let Some(tr) = end.transport {
            tr.bind(py).call_method0(intern!(py, "_ringway_detached"))?;
        }
        lost
    }

    /// Moves the state to `Finished` and takes what `_finish` hands out; `None` if it
    /// already finished.
    fn take_ending(&self, py: Python<'_>) -> Option<Ending> {
        let mut st = self.st.borrow_mut(py);
        let exc = match std::mem::replace(&mut st.phase, Phase::Finished) {
            Phase::Finished => return None,
            Phase::Lost { exc } => exc,
            Phase::Open | Phase::Closing => None,
        };
        let fd = std::mem::replace(&mut st.fd, -1);
        Some(Ending {
            fd,
            sock: st.face.sock.take(),
            protocol: st.face.protocol.take(),
            transport: st.face.transport.take(),
            exc,
            connected: st.face.connected,
            empty_waiter: st.send.empty_waiter.take(),
            cancels: [st.recv.op_in_flight(), st.send.in_flight.key()],
        })
    }

    /// Cancels what is in flight on `fd`, then closes it (through `sock` if the socket
    /// object owns it).
    fn close_fd(
        &self,
        py: Python<'_>,
        fd: RawFd,
        sock: Option<&Py<PyAny>>,
        cancels: [Option<OpKey>; 2],
    ) -> PyResult<()> {
        let lp = self.loop_.get();
        let _ = lp.with_io(py, |io| {
            for k in cancels.into_iter().flatten() {
                io.cancel(k);
            }
            io.forget_fd(fd);
        });
        if cancels.iter().any(Option::is_some) {
            // Every SQE naming `fd` must be in the kernel's hands before the number can
            // be reused; an operation in flight holds the file, not the number.
            lp.submit_now(py)?;
        }
        match sock {
            Some(s) => {
                s.bind(py).call_method0(intern!(py, "close"))?;
            }
            // SAFETY: we own `fd`; nothing queued names it any more (see above).
            None => unsafe {
                libc::close(fd);
            },
        }
        Ok(())
    }

    /// After `_finish`, the source stays registered until the last operation's final
    /// completion (which may still name it); then it goes.
    pub(super) fn release_if_done(&self, py: Python<'_>) {
        let id = {
            let mut st = self.st.borrow_mut(py);
            if !matches!(st.phase, Phase::Finished) || st.ops_in_flight() {
                return;
            }
            st.send.queue.clear();
            st.id.take()
        };
        if let Some(id) = id {
            self.loop_.get().unregister(py, id);
        }
    }

    /// The loop is closing: the driver is gone, so no operation is in flight any more.
    pub(super) fn driver_gone(&self, py: Python<'_>) {
        let mut st = self.st.borrow_mut(py);
        if let RecvOp::Armed(_) = st.recv.op {
            st.recv.op = RecvOp::Idle;
        }
        st.send.in_flight = InFlight::None;
        st.recv.held.clear();
        st.send.queue.clear();
        if st.face.sock.is_none() && st.fd >= 0 {
            // SAFETY: we own this fd and nothing refers to it any more.
            unsafe { libc::close(st.fd) };
            st.fd = -1;
        }
    }
}
