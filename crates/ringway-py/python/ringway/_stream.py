"""The stream transport (TCP and Unix sockets): an ``asyncio.Transport`` whose work is
done by the native ``StreamCore`` (receive into provided buffers, batched vectored
sends, flow control). This class adds what Python code expects of a transport: the
ABC, ``get_extra_info``, the server bookkeeping and the hooks ``loop.sendfile`` and
``loop.start_tls`` use."""

import socket
from asyncio import constants, transports, trsock

from . import _compat
from ._ringway import StreamCore


class StreamTransport(transports._FlowControlMixin, transports.Transport):
    """A TCP or Unix stream transport on ringway's driver."""

    _start_tls_compatible = True
    _sendfile_compatible = constants._SendfileMode.TRY_NATIVE

    def __init__(self, loop, sock, fd, protocol, waiter=None, extra=None, server=None,
                 family=None):
        # Flow control is the core's; the mixin is a base for what tests it with
        # isinstance (asyncio's sendfile fallback).
        transports.Transport.__init__(self, extra)
        self._loop = loop
        self._sock = sock
        self._sock_fd = fd
        self._server = server
        if family is None:
            family = sock.family if sock is not None else _family_of(fd)
        self._family = family
        tcp = family in (socket.AF_INET, socket.AF_INET6)
        core = StreamCore._start(loop, fd, self, protocol, waiter, sock, tcp)
        self._core = core
        # The hot methods, bound once: a call goes straight to the native code.
        self.write = core.write
        self.writelines = core.writelines
        self.is_closing = core.is_closing
        loop._transports[fd] = self
        if server is not None:
            _compat.server_attach(server, self)

    def __repr__(self):
        info = [self.__class__.__name__]
        fd = self._core.fileno()
        if fd < 0:
            info.append("closed")
        elif self._core.is_closing():
            info.append("closing")
        info.append(f"fd={self._sock_fd}")
        if fd >= 0:
            info.append("read=" + ("polling" if self._core.is_reading() else "idle"))
            info.append(f"write=<bufsize={self._core.get_write_buffer_size()}>")
        return "<{}>".format(" ".join(info))

    # -- the asyncio.Transport API ------------------------------------------------------

    def write(self, data):
        self._core.write(data)

    def writelines(self, list_of_data):
        self._core.writelines(list_of_data)

    def is_closing(self):
        return self._core.is_closing()

    def write_eof(self):
        self._core.write_eof()

    def can_write_eof(self):
        return True

    def close(self):
        self._core.close()

    def abort(self):
        self._core.abort()

    def is_reading(self):
        return self._core.is_reading()

    def _force_close(self, exc):
        self._core._force_close(exc)

    def pause_reading(self):
        self._core.pause_reading()

    def resume_reading(self):
        self._core.resume_reading()

    def set_write_buffer_limits(self, high=None, low=None):
        self._core.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self):
        return self._core.get_write_buffer_limits()

    def get_write_buffer_size(self):
        return self._core.get_write_buffer_size()

    @property
    def _protocol_paused(self):
        return self._core._protocol_paused()

    def set_protocol(self, protocol):
        self._core.set_protocol(protocol)

    def get_protocol(self):
        return self._core.get_protocol()

    def get_extra_info(self, name, default=None):
        if name in self._extra:
            return self._extra[name]
        if name in ("socket", "sockname", "peername"):
            self._fill_socket_info()
            return self._extra.get(name, default)
        return default

    # -- internals ----------------------------------------------------------------------

    def _ringway_sock(self):
        """The socket object, made on first use for accepted connections (which the
        native core accepted as a bare fd); ``None`` once closed."""
        if self._sock is None and self._core.fileno() >= 0:
            sock = socket.socket(fileno=self._sock_fd)
            self._core._adopt_sock(sock)
            self._sock = sock
        return self._sock

    def _fill_socket_info(self):
        sock = self._ringway_sock()
        if sock is None:
            return
        self._extra.setdefault("socket", trsock.TransportSocket(sock))
        if "sockname" not in self._extra:
            try:
                self._extra["sockname"] = sock.getsockname()
            except OSError:
                self._extra["sockname"] = None
        if "peername" not in self._extra:
            try:
                self._extra["peername"] = sock.getpeername()
            except OSError:
                # Not connected (any more): peername is None, as in asyncio.
                self._extra["peername"] = None

    def _make_empty_waiter(self):
        return self._core._make_empty_waiter()

    def _reset_empty_waiter(self):
        self._core._reset_empty_waiter()

    def _ringway_detached(self):
        """Called by the core after ``connection_lost``."""
        loop = self._loop
        if loop is not None and loop._transports.get(self._sock_fd) is self:
            del loop._transports[self._sock_fd]
        server = self._server
        self._server = None
        self._sock = None
        if server is not None:
            _compat.server_detach(server, self)


def _family_of(fd):
    """The address family of a bare socket fd (``SO_DOMAIN``)."""
    s = socket.socket(fileno=fd)
    try:
        return s.family
    finally:
        s.detach()
