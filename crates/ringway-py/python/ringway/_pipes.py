"""Pipe transports (``connect_read_pipe``/``connect_write_pipe``, and a subprocess's
stdio): ``os.read``/``os.write`` on a non-blocking fd, driven by readiness polls."""

import os
import stat
from asyncio import transports

from ._fdtransport import FdTransport, ReadingFdTransport


def _check_pipe(pipe):
    fd = pipe.fileno()
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        raise ValueError("Pipe transport is for pipes/sockets only.")
    os.set_blocking(fd, False)
    return fd, mode


class ReadPipeTransport(ReadingFdTransport, transports.ReadTransport):
    """The read end of a pipe."""

    max_size = 256 * 1024

    def __init__(self, loop, pipe, protocol, waiter=None, extra=None):
        fd, _ = _check_pipe(pipe)
        extra = dict(extra or {})
        extra["pipe"] = pipe
        self._pipe = pipe
        super().__init__(loop, pipe, fd, protocol, waiter, extra)

    def _read_ready(self):
        try:
            data = os.read(self._fd, self.max_size)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fatal_error(exc, "Fatal read error on pipe transport")
            return
        if data:
            self._protocol.data_received(data)
            return
        # End of file.
        self._closing = True
        self._stop_reading()
        self._loop.call_soon(self._protocol.eof_received)
        self._loop.call_soon(self._call_connection_lost, None)

    def close(self):
        if not self._closing:
            self._closing = True
            self._stop_reading()
            self._conn_lost += 1
            self._loop.call_soon(self._call_connection_lost, None)

    def _call_connection_lost(self, exc):
        super()._call_connection_lost(exc)
        self._pipe = None


class WritePipeTransport(FdTransport, transports._FlowControlMixin,
                         transports.WriteTransport):
    """The write end of a pipe. A pipe whose reader goes away is noticed through a
    read-readiness watch (the kernel reports the error as readable)."""

    def __init__(self, loop, pipe, protocol, waiter=None, extra=None):
        fd, mode = _check_pipe(pipe)
        extra = dict(extra or {})
        extra["pipe"] = pipe
        self._pipe = pipe
        self._buffer = bytearray()
        self._watch_peer = stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode)
        super().__init__(loop, pipe, fd, protocol, waiter, extra)
        if self._watch_peer:
            loop.call_soon(self._start_peer_watch)

    def _start_peer_watch(self):
        if not self._closing and self._loop is not None:
            self._loop._watch(self._fd, False, self._loop._make_handle(self._read_ready, ()))

    def _stop_reading(self):
        if self._loop is not None and self._loop._watching(self._fd, False) is not None:
            self._loop._unwatch(self._fd, False)

    def _read_ready(self):
        # The reader closed its end.
        if self._buffer:
            self._close(BrokenPipeError())
        else:
            self._close()

    def write(self, data):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data argument must be a bytes-like object, "
                            f"not {type(data).__name__!r}")
        if isinstance(data, bytearray):
            data = memoryview(data)
        if not data:
            return
        if self._conn_lost or self._closing:
            self._lost_write()
            return
        if not self._buffer:
            try:
                n = os.write(self._fd, data)
            except (BlockingIOError, InterruptedError):
                n = 0
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._conn_lost += 1
                self._fatal_error(exc, "Fatal write error on pipe transport")
                return
            if n == len(data):
                return
            if n > 0:
                data = memoryview(data)[n:]
            self._start_writing()
        self._buffer += data
        self._buffer_size = len(self._buffer)
        self._maybe_pause_protocol()

    def _write_ready(self):
        assert self._buffer, "Data should not be empty"
        try:
            n = os.write(self._fd, self._buffer)
        except (BlockingIOError, InterruptedError):
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._buffer.clear()
            self._buffer_size = 0
            self._conn_lost += 1
            self._stop_writing()
            self._fatal_error(exc, "Fatal write error on pipe transport")
            return
        if n == len(self._buffer):
            self._buffer.clear()
            self._buffer_size = 0
            self._stop_writing()
            self._maybe_resume_protocol()
            if self._closing:
                self._stop_reading()
                self._call_connection_lost(None)
            return
        if n > 0:
            del self._buffer[:n]
        self._buffer_size = len(self._buffer)

    def get_write_buffer_size(self):
        return self._buffer_size

    def can_write_eof(self):
        return True

    def write_eof(self):
        if self._closing:
            return
        self._closing = True
        if not self._buffer:
            self._stop_reading()
            self._conn_lost += 1
            self._loop.call_soon(self._call_connection_lost, None)

    def close(self):
        if self._pipe is not None and not self._closing:
            self.write_eof()

    def abort(self):
        self._close(None)

    def _close(self, exc=None):
        self._closing = True
        if self._buffer:
            self._stop_writing()
        self._buffer.clear()
        self._buffer_size = 0
        self._stop_reading()
        self._conn_lost += 1
        self._loop.call_soon(self._call_connection_lost, exc)

    def _fatal_error(self, exc, message="Fatal error on pipe transport"):
        if isinstance(exc, OSError):
            super()._fatal_error(exc, message)
            return
        self._loop.call_exception_handler({
            "message": message,
            "exception": exc,
            "transport": self,
            "protocol": self._protocol,
        })
        self._close(exc)

    def _force_close(self, exc):
        self._close(exc)

    def _clear_buffer(self):
        self._buffer.clear()
        self._buffer_size = 0

    def _call_connection_lost(self, exc):
        super()._call_connection_lost(exc)
        self._pipe = None
