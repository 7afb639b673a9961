//! The Python face of `StreamCore`: the `asyncio.Transport` methods that
//! `ringway._stream.StreamTransport` forwards (or binds directly), and the callbacks
//! the loop schedules (`_connection_made`, `_deliver_held`, `_finish`). Each is a thin
//! entry into the side that does the work.

use std::os::fd::RawFd;

use pyo3::intern;
use pyo3::prelude::*;

use super::receive::Receiver;
use super::StreamCore;
use crate::loop_core::LoopCore;

#[pymethods]
impl StreamCore {
    /// Starts a stream transport (TCP or Unix) on `fd`: `protocol.connection_made`
    /// runs on the next iteration, then receiving starts and `waiter` (if any) gets
    /// `None`. `sock` is the Python socket object owning `fd` (closed when the transport
    /// ends); without it the transport owns `fd`. The protocol's callbacks run in the
    /// context current now.
    #[staticmethod]
    #[pyo3(signature = (loop_, fd, transport, protocol, waiter, sock, tcp))]
    fn _start(
        loop_: &Bound<'_, LoopCore>,
        fd: RawFd,
        transport: Py<PyAny>,
        protocol: &Bound<'_, PyAny>,
        waiter: Option<Py<PyAny>>,
        sock: Option<Py<PyAny>>,
        tcp: bool,
    ) -> PyResult<Py<StreamCore>> {
        Self::start(loop_, fd, transport, protocol, waiter, sock, tcp)
    }

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
        Self::request_write_eof(slf)
    }

    fn can_write_eof(&self) -> bool {
        true
    }

    /// Closes after the queue is sent; `connection_lost(None)` follows.
    #[pyo3(name = "close")]
    fn py_close(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::close(slf)
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
        !self.st.borrow(py).is_open()
    }

    fn is_reading(&self, py: Python<'_>) -> bool {
        let st = self.st.borrow(py);
        !st.recv.paused && st.is_open()
    }

    /// Stops `data_received` calls until `resume_reading`.
    fn pause_reading(&self, py: Python<'_>) {
        self.pause(py);
    }

    /// Resumes receiving; bytes that arrived meanwhile are delivered first.
    fn resume_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::resume(slf)
    }

    fn get_write_buffer_size(&self, py: Python<'_>) -> usize {
        self.st.borrow(py).send.queue.len()
    }

    fn get_write_buffer_limits(&self, py: Python<'_>) -> (usize, usize) {
        let st = self.st.borrow(py);
        (st.send.low, st.send.high)
    }

    #[pyo3(signature = (high = None, low = None))]
    fn set_write_buffer_limits(
        slf: &Bound<'_, Self>,
        high: Option<i64>,
        low: Option<i64>,
    ) -> PyResult<()> {
        Self::set_limits(slf, high, low)
    }

    fn set_protocol(&self, py: Python<'_>, protocol: &Bound<'_, PyAny>) -> PyResult<()> {
        let receiver = Receiver::of(protocol)?;
        let mut st = self.st.borrow_mut(py);
        st.face.protocol = Some(protocol.clone().unbind());
        st.recv.receiver = Some(receiver);
        Ok(())
    }

    fn get_protocol(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        let st = self.st.borrow(py);
        st.face.protocol.as_ref().map(|p| p.clone_ref(py))
    }

    /// True while the protocol is paused for writing (over the high-water mark).
    fn _protocol_paused(&self, py: Python<'_>) -> bool {
        self.st.borrow(py).send.protocol_paused
    }

    /// The socket's fd, -1 once closed.
    fn fileno(&self, py: Python<'_>) -> RawFd {
        self.st.borrow(py).fd
    }

    /// Hands the core the socket object made (lazily) for `fd`: it then closes the fd
    /// through it, so the two never both close it.
    fn _adopt_sock(&self, py: Python<'_>, sock: Py<PyAny>) {
        let mut st = self.st.borrow_mut(py);
        if st.fd >= 0 && st.face.sock.is_none() {
            st.face.sock = Some(sock);
        }
    }

    /// True once `connection_lost` has been called (or scheduled).
    fn _lost(&self, py: Python<'_>) -> bool {
        self.st.borrow(py).phase.is_lost()
    }

    /// A future that completes once everything queued has been sent (sendfile waits on
    /// it before it takes over the socket).
    fn _make_empty_waiter(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Self::make_empty_waiter(slf)
    }

    fn _reset_empty_waiter(&self, py: Python<'_>) {
        self.st.borrow_mut(py).send.empty_waiter = None;
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
            if st.phase.is_lost() {
                return Ok(());
            }
            st.face.connected = true;
            (
                st.face.protocol.as_ref().map(|p| p.clone_ref(py)),
                st.face.transport.as_ref().map(|t| t.clone_ref(py)),
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
}
