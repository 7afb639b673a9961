"""The UDP (and Unix datagram) transport."""

import collections
from asyncio import transports

from . import _compat
from ._fdtransport import ReadingFdTransport


class DatagramTransport(ReadingFdTransport, transports._FlowControlMixin,
                        transports.DatagramTransport):
    """A datagram transport: ``sendto`` tries at once and queues what would block;
    datagrams are read one per readiness report, as asyncio's selector loop does."""

    max_size = 256 * 1024

    def __init__(self, loop, sock, protocol, address=None, waiter=None, extra=None):
        extra = dict(extra or {})
        extra["socket"] = _transport_socket(sock)
        try:
            extra["sockname"] = sock.getsockname()
        except OSError:
            extra["sockname"] = None
        if "peername" not in extra:
            try:
                extra["peername"] = sock.getpeername()
            except OSError:
                extra["peername"] = None
        self._sock = sock
        self._address = address
        self._buffer = collections.deque()
        super().__init__(loop, sock, sock.fileno(), protocol, waiter, extra)

    def get_write_buffer_size(self):
        return self._buffer_size

    def abort(self):
        self._force_close(None)

    def _read_ready(self):
        if self._conn_lost:
            return
        try:
            data, addr = self._sock.recvfrom(self.max_size)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            self._protocol.error_received(exc)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal read error on datagram transport")
        else:
            self._protocol.datagram_received(data, addr)

    def _send_one(self, data, addr):
        if self._extra["peername"]:
            self._sock.send(data)
        else:
            self._sock.sendto(data, addr)

    def sendto(self, data, addr=None):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data argument must be a bytes-like object, "
                            f"not {type(data).__name__!r}")
        if not data and not _compat.EMPTY_DATAGRAMS:
            return
        if self._address:
            if addr not in (None, self._address):
                raise ValueError(f"Invalid address: must be None or {self._address}")
            addr = self._address
        if self._conn_lost and self._address:
            self._lost_write()
            return
        if not self._buffer:
            try:
                self._send_one(data, addr)
                return
            except (BlockingIOError, InterruptedError):
                self._start_writing()
            except OSError as exc:
                self._protocol.error_received(exc)
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on datagram transport")
                return
        self._buffer.append((bytes(data), addr))
        self._buffer_size += len(data) + 8  # a datagram's header
        self._maybe_pause_protocol()

    def _write_ready(self):
        while self._buffer:
            data, addr = self._buffer.popleft()
            self._buffer_size -= len(data) + 8
            try:
                self._send_one(data, addr)
            except (BlockingIOError, InterruptedError):
                self._buffer.appendleft((data, addr))
                self._buffer_size += len(data) + 8
                break
            except OSError as exc:
                self._protocol.error_received(exc)
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._fatal_error(exc, "Fatal write error on datagram transport")
                return
        self._maybe_resume_protocol()
        if not self._buffer:
            self._stop_writing()
            if self._closing:
                self._call_connection_lost(None)

    def _clear_buffer(self):
        self._buffer.clear()
        self._buffer_size = 0


def _transport_socket(sock):
    from asyncio import trsock
    return trsock.TransportSocket(sock)
