"""What the readiness-based transports (UDP, pipes) share: closing, fatal errors, the
``connection_lost`` call. They read and write through the loop's
``add_reader``/``add_writer`` (polls on the ring); they carry no hot path, which is why
they are Python.

Each transport has the interface of its asyncio counterpart and no more: reading
(``ReadingFdTransport``) only where the transport reads, write-buffer flow control
(asyncio's ``_FlowControlMixin``) only where it writes, so a read method on a write
pipe raises ``NotImplementedError`` (asyncio's ``ReadTransport`` default) and a read
pipe has no ``write``."""

import logging
import warnings
from asyncio import constants, futures, transports

logger = logging.getLogger("asyncio")


class FdTransport:
    """Base of the datagram and pipe transports (mixed in before their asyncio ABC).
    ``_fd`` is watched for reading when ``_reads`` is true."""

    _reads = False

    def __init__(self, loop, fileobj, fd, protocol, waiter, extra):
        transports.BaseTransport.__init__(self, extra)
        self._loop = loop
        if isinstance(self, transports._FlowControlMixin):
            self._protocol_paused = False
            self._set_write_buffer_limits()
        self._fileobj = fileobj
        self._fd = fd
        self._protocol = protocol
        self._closing = False
        self._paused = False
        self._conn_lost = 0
        self._buffer_size = 0
        loop._transports[fd] = self
        loop.call_soon(self._protocol.connection_made, self)
        if self._reads:
            loop.call_soon(self._start_reading)
        if waiter is not None:
            loop.call_soon(futures._set_result_unless_cancelled, waiter, None)

    def __repr__(self):
        state = "closed" if self._fileobj is None else (
            "closing" if self._closing else "open")
        return f"<{self.__class__.__name__} fd={self._fd} {state}>"

    def __del__(self, _warn=warnings.warn):
        if self._fileobj is not None:
            _warn(f"unclosed transport {self!r}", ResourceWarning, source=self)
            self._fileobj.close()

    def _start_reading(self):
        if self._reads and not self._closing and not self._paused:
            self._loop._watch(self._fd, False, self._loop._make_handle(self._read_ready, ()))

    def _stop_reading(self):
        if self._loop._watching(self._fd, False) is not None:
            self._loop._unwatch(self._fd, False)

    def _start_writing(self):
        if self._loop._watching(self._fd, True) is None:
            self._loop._watch(self._fd, True, self._loop._make_handle(self._write_ready, ()))

    def _stop_writing(self):
        if self._loop._watching(self._fd, True) is not None:
            self._loop._unwatch(self._fd, True)

    def get_protocol(self):
        return self._protocol

    def set_protocol(self, protocol):
        self._protocol = protocol

    def is_closing(self):
        return self._closing

    def close(self):
        if self._closing:
            return
        self._closing = True
        self._stop_reading()
        if not self._buffer_size:
            self._conn_lost += 1
            self._stop_writing()
            self._loop.call_soon(self._call_connection_lost, None)

    def _fatal_error(self, exc, message="Fatal error on transport"):
        if isinstance(exc, OSError):
            if self._loop.get_debug():
                logger.debug("%r: %s", self, message, exc_info=True)
        else:
            self._loop.call_exception_handler({
                "message": message,
                "exception": exc,
                "transport": self,
                "protocol": self._protocol,
            })
        self._force_close(exc)

    def _force_close(self, exc):
        if self._conn_lost:
            return
        self._clear_buffer()
        self._stop_writing()
        if not self._closing:
            self._closing = True
            self._stop_reading()
        self._conn_lost += 1
        self._loop.call_soon(self._call_connection_lost, exc)

    def _clear_buffer(self):
        self._buffer_size = 0

    def _call_connection_lost(self, exc):
        try:
            self._protocol.connection_lost(exc)
        finally:
            loop = self._loop
            if loop._transports.get(self._fd) is self:
                del loop._transports[self._fd]
            if self._fileobj is not None:
                self._fileobj.close()
                self._fileobj = None
            self._protocol = None
            self._loop = None

    def _lost_write(self):
        if self._conn_lost >= constants.LOG_THRESHOLD_FOR_CONNLOST_WRITES:
            logger.warning("socket.send() raised exception.")
        self._conn_lost += 1


class ReadingFdTransport(FdTransport):
    """An ``FdTransport`` that reads: ``pause_reading``/``resume_reading``."""

    _reads = True

    def is_reading(self):
        return not self._closing and not self._paused

    def pause_reading(self):
        if not self.is_reading():
            return
        self._paused = True
        self._stop_reading()
        if self._loop.get_debug():
            logger.debug("%r pauses reading", self)

    def resume_reading(self):
        if self._closing or not self._paused:
            return
        self._paused = False
        self._start_reading()
        if self._loop.get_debug():
            logger.debug("%r resumes reading", self)
