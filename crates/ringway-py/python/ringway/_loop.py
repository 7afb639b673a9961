"""``ringway.Loop``: asyncio's event loop API on ringway's native core.

The class is ``LoopCore`` (native: ready queue, timers, ``_run_once``, transports) with
``asyncio.base_events.BaseEventLoop`` behind it, which supplies what is the same in
every loop: ``run_forever``/``run_until_complete`` (driving the native ``_run_once``),
tasks and futures, the exception handler, executors and DNS, ``create_connection`` with
happy eyeballs, ``create_server``'s socket setup, ``start_tls``, sendfile's fallback.
This module adds the loop-specific rest: transports, servers, readers and writers,
signals, subprocesses, pipes, UDP, Unix sockets. Nothing in asyncio is patched.
"""

import collections
import errno
import inspect
import logging
import os
import signal
import socket
import stat
import sys
import threading
import warnings
import weakref
from asyncio import base_events, constants, coroutines, events, format_helpers
from asyncio import futures, sslproto, tasks

from . import _compat
from ._datagram import DatagramTransport
from ._pipes import ReadPipeTransport, WritePipeTransport
from ._ringway import ListenerCore, LoopCore
from ._sockets import SocketMethods
from ._stream import StreamTransport
from ._subprocess import SubprocessTransport

logger = logging.getLogger("asyncio")

__all__ = ["Loop"]


#: The entry points asyncio's debug mode checks the calling thread for.
_THREAD_CHECKED = frozenset(("call_soon", "call_later", "call_at"))


def _fileobj_to_fd(fileobj):
    if isinstance(fileobj, int):
        fd = fileobj
    else:
        try:
            fd = int(fileobj.fileno())
        except (AttributeError, TypeError, ValueError):
            raise ValueError(f"Invalid file object: {fileobj!r}") from None
    if fd < 0:
        raise ValueError(f"Invalid file descriptor: {fd}")
    return fd


def _sighandler_noop(signum, frame):
    """The C-level handler writes the signal number to the wakeup fd; nothing else."""


class _Acceptor:
    """A server socket's accept callback: builds the protocol and transport for each
    fd the native listener accepted."""

    def __init__(self, loop, protocol_factory, sock, sslcontext, server,
                 ssl_handshake_timeout, ssl_shutdown_timeout):
        self._loop = loop
        self._protocol_factory = protocol_factory
        self._family = sock.family
        self._sslcontext = sslcontext
        self._server = server
        self._ssl_handshake_timeout = ssl_handshake_timeout
        self._ssl_shutdown_timeout = ssl_shutdown_timeout

    def accept(self, fd):
        loop = self._loop
        try:
            protocol = self._protocol_factory()
            if self._sslcontext:
                conn = socket.socket(fileno=fd)
                fd = -1
                waiter = loop.create_future()
                loop._make_ssl_transport(
                    conn, protocol, self._sslcontext, waiter=waiter, server_side=True,
                    server=self._server,
                    ssl_handshake_timeout=self._ssl_handshake_timeout,
                    ssl_shutdown_timeout=self._ssl_shutdown_timeout)
                waiter.add_done_callback(self._handshake_done)
            else:
                StreamTransport(loop, None, fd, protocol, None, None, self._server,
                                family=self._family)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            if fd >= 0:
                os.close(fd)
            loop.call_exception_handler({
                "message": "Error on transport creation for incoming connection",
                "exception": exc,
            })

    def _handshake_done(self, waiter):
        if waiter.cancelled():
            return
        exc = waiter.exception()
        if exc is not None and self._loop.get_debug():
            logger.debug("%r: TLS handshake failed: %r", self._loop, exc)


class Loop(SocketMethods, LoopCore, base_events.BaseEventLoop):
    """An asyncio event loop on ringway's io_uring driver (epoll when io_uring is
    refused; ``RINGWAY_BACKEND=epoll`` forces it, ``backend=`` too)."""

    def __init__(self, backend=None):
        super().__init__()
        self._selector = None  # no selector: some tools print its class name
        self._transports = weakref.WeakValueDictionary()
        self._listeners = {}
        self._signal_handlers = {}
        self._sig_rsock = self._sig_wsock = None
        self._unix_server_paths = {}
        self._pidfds = {}

    def __repr__(self):
        return (f"<{self.__class__.__name__} running={self.is_running()} "
                f"closed={self.is_closed()} debug={self.get_debug()} "
                f"backend={self._ringway_backend}>")

    @property
    def backend(self):
        """``"uring"`` or ``"epoll"``."""
        return self._ringway_backend

    # -- lifecycle -----------------------------------------------------------------------

    def close(self):
        if self.is_running():
            raise RuntimeError("Cannot close a running event loop")
        if self.is_closed():
            return
        for sig in list(getattr(self, "_signal_handlers", ())):
            self.remove_signal_handler(sig)
        for pidfd in list(getattr(self, "_pidfds", ())):
            self._forget_child(pidfd)
        super().close()
        self._ringway_close()

    # -- called by the native core --------------------------------------------------------

    def _ringway_debug_checks(self, callback, method):
        # As asyncio's debug mode: the thread check guards call_soon, call_later and
        # call_at only (call_soon_threadsafe is made to be called from other threads),
        # and add_reader's callbacks are not checked.
        if method in _THREAD_CHECKED:
            self._check_thread()
        if method != "add_reader":
            self._check_callback(callback, method)

    def _ringway_extract_stack(self):
        return format_helpers.extract_stack(sys._getframe(1))

    def _ringway_run_debug(self, handle):
        try:
            self._current_handle = handle
            t0 = self.time()
            handle._run()
            dt = self.time() - t0
            if dt >= self.slow_callback_duration:
                logger.warning("Executing %s took %.3f seconds",
                               base_events._format_handle(handle), dt)
        finally:
            self._current_handle = None

    def _ringway_callback_error(self, handle, exc):
        cb = _compat.format_callback(handle._callback, handle._args, self.get_debug())
        context = {
            "message": f"Exception in callback {cb}",
            "exception": exc,
            "handle": handle,
        }
        if handle._source_traceback:
            context["source_traceback"] = handle._source_traceback
        self.call_exception_handler(context)

    def _ringway_log_debug(self, message, exc):
        logger.debug("%r: %s", self, message, exc_info=exc)

    def _ringway_log_warning(self, message):
        logger.warning(message)

    # -- readers and writers (one-shot polls on the ring, re-armed each iteration) -----

    def _ensure_fd_no_transport(self, fd):
        fileno = fd
        if not isinstance(fileno, int):
            try:
                fileno = int(fileno.fileno())
            except (AttributeError, TypeError, ValueError):
                raise ValueError(f"Invalid file object: {fd!r}") from None
        transport = self._transports.get(fileno)
        if transport is not None and not transport.is_closing():
            raise RuntimeError(
                f"File descriptor {fd!r} is used by transport {transport!r}")

    def add_reader(self, fd, callback, *args):
        self._check_closed()
        fd = _fileobj_to_fd(fd)
        self._ensure_fd_no_transport(fd)
        self._watch(fd, False, self._make_handle(callback, args))

    def remove_reader(self, fd):
        if self.is_closed():
            return False
        fd = _fileobj_to_fd(fd)
        self._ensure_fd_no_transport(fd)
        return self._unwatch(fd, False)

    def add_writer(self, fd, callback, *args):
        self._check_closed()
        fd = _fileobj_to_fd(fd)
        self._ensure_fd_no_transport(fd)
        self._watch(fd, True, self._make_handle(callback, args))

    def remove_writer(self, fd):
        if self.is_closed():
            return False
        fd = _fileobj_to_fd(fd)
        self._ensure_fd_no_transport(fd)
        return self._unwatch(fd, True)

    # -- transports -------------------------------------------------------------------

    def _make_socket_transport(self, sock, protocol, waiter=None, *, extra=None,
                               server=None):
        return StreamTransport(self, sock, sock.fileno(), protocol, waiter, extra, server)

    def _make_ssl_transport(self, rawsock, protocol, sslcontext, waiter=None, *,
                            server_side=False, server_hostname=None, extra=None,
                            server=None,
                            ssl_handshake_timeout=constants.SSL_HANDSHAKE_TIMEOUT,
                            ssl_shutdown_timeout=constants.SSL_SHUTDOWN_TIMEOUT,
                            call_connection_made=True):
        ssl_protocol = sslproto.SSLProtocol(
            self, protocol, sslcontext, waiter, server_side, server_hostname,
            ssl_handshake_timeout=ssl_handshake_timeout,
            ssl_shutdown_timeout=ssl_shutdown_timeout,
            call_connection_made=call_connection_made)
        StreamTransport(self, rawsock, rawsock.fileno(), ssl_protocol, None, extra, server)
        return ssl_protocol._app_transport

    def _make_datagram_transport(self, sock, protocol, address=None, waiter=None,
                                 extra=None):
        return DatagramTransport(self, sock, protocol, address, waiter, extra)

    def _make_read_pipe_transport(self, pipe, protocol, waiter=None, extra=None):
        return ReadPipeTransport(self, pipe, protocol, waiter, extra)

    def _make_write_pipe_transport(self, pipe, protocol, waiter=None, extra=None):
        return WritePipeTransport(self, pipe, protocol, waiter, extra)

    async def _make_subprocess_transport(self, protocol, args, shell, stdin, stdout,
                                         stderr, bufsize, extra=None, **kwargs):
        waiter = self.create_future()
        transp = SubprocessTransport(self, protocol, args, shell, stdin, stdout, stderr,
                                     bufsize, waiter=waiter, extra=extra, **kwargs)
        self._watch_child(transp.get_pid(), transp)
        try:
            await waiter
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException:
            transp.close()
            await transp._wait()
            raise
        return transp

    # -- servers -----------------------------------------------------------------------

    def _start_serving(self, protocol_factory, sock, sslcontext=None, server=None,
                       backlog=100, ssl_handshake_timeout=constants.SSL_HANDSHAKE_TIMEOUT,
                       ssl_shutdown_timeout=constants.SSL_SHUTDOWN_TIMEOUT):
        fd = sock.fileno()
        if fd in self._listeners:
            return
        acceptor = _Acceptor(self, protocol_factory, sock, sslcontext, server,
                             ssl_handshake_timeout, ssl_shutdown_timeout)
        tcp = sock.family in (socket.AF_INET, socket.AF_INET6)
        self._listeners[fd] = ListenerCore._start(self, fd, acceptor.accept, tcp)

    def _stop_serving(self, sock):
        listener = self._listeners.pop(sock.fileno(), None)
        if listener is not None:
            listener.close()
        path = self._unix_server_paths.pop(sock, None)
        sock.close()
        if path is not None:
            self._unlink_unix_path(*path)

    # -- Unix sockets ------------------------------------------------------------------

    async def create_unix_connection(
            self, protocol_factory, path=None, *, ssl=None, sock=None,
            server_hostname=None, ssl_handshake_timeout=None, ssl_shutdown_timeout=None):
        assert server_hostname is None or isinstance(server_hostname, str)
        if ssl:
            if server_hostname is None:
                raise ValueError("you have to pass server_hostname when using ssl")
        else:
            if server_hostname is not None:
                raise ValueError("server_hostname is only meaningful with ssl")
            if ssl_handshake_timeout is not None:
                raise ValueError("ssl_handshake_timeout is only meaningful with ssl")
            if ssl_shutdown_timeout is not None:
                raise ValueError("ssl_shutdown_timeout is only meaningful with ssl")
        if path is not None:
            if sock is not None:
                raise ValueError("path and sock can not be specified at the same time")
            path = os.fspath(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)
            try:
                sock.setblocking(False)
                await self.sock_connect(sock, path)
            except BaseException:
                sock.close()
                raise
        else:
            if sock is None:
                raise ValueError("no path and sock were specified")
            if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A UNIX Domain Stream Socket was expected, got {sock!r}")
            sock.setblocking(False)
        return await self._create_connection_transport(
            sock, protocol_factory, ssl, server_hostname,
            ssl_handshake_timeout=ssl_handshake_timeout,
            ssl_shutdown_timeout=ssl_shutdown_timeout)

    async def create_unix_server(
            self, protocol_factory, path=None, *, sock=None, backlog=100, ssl=None,
            ssl_handshake_timeout=None, ssl_shutdown_timeout=None, start_serving=True,
            **kwargs):
        if "cleanup_socket" in kwargs and not _compat.UNIX_SERVER_CLEANUP:
            raise NotImplementedError(
                "create_unix_server(cleanup_socket=...) is Python 3.13's; this Python's "
                "asyncio does not have it")
        cleanup_socket = kwargs.pop("cleanup_socket", True)
        if kwargs:
            raise TypeError(f"unexpected keyword arguments: {', '.join(kwargs)}")
        if isinstance(ssl, bool):
            raise TypeError("ssl argument must be an SSLContext or None")
        if ssl_handshake_timeout is not None and not ssl:
            raise ValueError("ssl_handshake_timeout is only meaningful with ssl")
        if ssl_shutdown_timeout is not None and not ssl:
            raise ValueError("ssl_shutdown_timeout is only meaningful with ssl")
        if path is not None:
            if sock is not None:
                raise ValueError("path and sock can not be specified at the same time")
            path = os.fspath(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            # A stale socket file left by a previous server would make bind fail.
            if path[0] not in (0, "\x00"):
                try:
                    if stat.S_ISSOCK(os.stat(path).st_mode):
                        os.remove(path)
                except FileNotFoundError:
                    pass
                except OSError as err:
                    logger.error("Unable to check or remove stale UNIX socket %r: %r",
                                 path, err)
            try:
                sock.bind(path)
            except OSError as exc:
                sock.close()
                if exc.errno == errno.EADDRINUSE:
                    raise OSError(errno.EADDRINUSE,
                                  f"Address {path!r} is already in use") from None
                raise
            except BaseException:
                sock.close()
                raise
        else:
            if sock is None:
                raise ValueError("path was not specified, and no sock specified")
            if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A UNIX Domain Stream Socket was expected, got {sock!r}")
        if _compat.UNIX_SERVER_CLEANUP and cleanup_socket:
            bound = sock.getsockname()
            if isinstance(bound, str) and bound and bound[0] != "\x00":
                try:
                    self._unix_server_paths[sock] = (bound, os.stat(bound).st_ino)
                except FileNotFoundError:
                    pass
        sock.setblocking(False)
        server = base_events.Server(self, [sock], protocol_factory, ssl, backlog,
                                    ssl_handshake_timeout, ssl_shutdown_timeout)
        if start_serving:
            server._start_serving()
            # Let the server start before returning, as asyncio's loops do.
            await tasks.sleep(0)
        return server

    @staticmethod
    def _unlink_unix_path(path, inode):
        try:
            if os.stat(path).st_ino == inode:
                os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as err:
            logger.error("Unable to clean up listening UNIX socket %r: %r", path, err)

    # -- sendfile on a transport ---------------------------------------------------------

    async def _sendfile_native(self, transp, file, offset, count):
        fd = transp._sock_fd
        sock = transp._ringway_sock()
        if sock is None:
            raise ConnectionError("the transport is closed")
        del self._transports[fd]
        resume_reading = transp.is_reading()
        transp.pause_reading()
        await transp._make_empty_waiter()
        try:
            return await self.sock_sendfile(sock, file, offset, count, fallback=False)
        finally:
            transp._reset_empty_waiter()
            if resume_reading:
                transp.resume_reading()
            self._transports[fd] = transp

    # -- signals (the wakeup fd, read through the ring) ---------------------------------

    def _check_signal(self, sig):
        if not isinstance(sig, int):
            raise TypeError(f"sig must be an int, not {sig!r}")
        if sig not in signal.valid_signals():
            raise ValueError(f"invalid signal number {sig}")

    def add_signal_handler(self, sig, callback, *args):
        # inspect's test, not asyncio.iscoroutinefunction (deprecated in 3.14): the
        # same answer on 3.11+, where asyncio's legacy coroutine marker is gone.
        if coroutines.iscoroutine(callback) or inspect.iscoroutinefunction(callback):
            raise TypeError("coroutines cannot be used with add_signal_handler()")
        self._check_signal(sig)
        self._check_closed()
        if self._sig_wsock is None:
            self._sig_rsock, self._sig_wsock = socket.socketpair()
            self._sig_rsock.setblocking(False)
            self._sig_wsock.setblocking(False)
            self._watch(self._sig_rsock.fileno(), False,
                        self._make_handle(self._read_signals, ()))
        try:
            # Only the main thread may do this: ValueError otherwise.
            signal.set_wakeup_fd(self._sig_wsock.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError) as exc:
            raise RuntimeError(str(exc))
        handle = self._make_handle(callback, args)
        self._signal_handlers[sig] = handle
        try:
            signal.signal(sig, _sighandler_noop)
            signal.siginterrupt(sig, False)
        except OSError as exc:
            del self._signal_handlers[sig]
            if not self._signal_handlers:
                self._drop_wakeup_fd()
            if exc.errno == errno.EINVAL:
                raise RuntimeError(f"sig {sig:d} cannot be caught")
            raise

    def remove_signal_handler(self, sig):
        self._check_signal(sig)
        handle = self._signal_handlers.pop(sig, None)
        if handle is None:
            return False
        handle.cancel()
        if sig == signal.SIGINT:
            handler = signal.default_int_handler
        else:
            handler = signal.SIG_DFL
        try:
            signal.signal(sig, handler)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                raise RuntimeError(f"sig {sig:d} cannot be caught")
            raise
        if not self._signal_handlers:
            self._drop_wakeup_fd()
        return True

    def _drop_wakeup_fd(self):
        try:
            signal.set_wakeup_fd(-1)
        except (ValueError, OSError) as exc:
            logger.info("set_wakeup_fd(-1) failed: %s", exc)
        if self._sig_rsock is not None:
            self._unwatch(self._sig_rsock.fileno(), False)
            self._sig_rsock.close()
            self._sig_wsock.close()
            self._sig_rsock = self._sig_wsock = None

    def _read_signals(self):
        while True:
            try:
                data = self._sig_rsock.recv(4096)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                return
            for signum in data:
                handle = self._signal_handlers.get(signum)
                if handle is not None and not handle.cancelled():
                    self._push_ready(handle)

    # -- child processes (pidfd, read through the ring) --------------------------------

    def _watch_child(self, pid, transp):
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            # Already reaped by someone else: report what waitpid can still tell.
            self.call_soon(transp._process_exited, 255)
            return
        self._pidfds[pidfd] = (pid, transp)
        self._watch(pidfd, False, self._make_handle(self._child_exited, (pidfd,)))

    def _child_exited(self, pidfd):
        entry = self._pidfds.get(pidfd)
        if entry is None:
            return
        pid, transp = entry
        try:
            wpid, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            logger.warning("child process pid %d exit status already read: "
                           "will report returncode 255", pid)
            returncode = 255
        else:
            if wpid == 0:
                return  # spurious: still running
            returncode = os.waitstatus_to_exitcode(status)
        self._forget_child(pidfd)
        if self.get_debug():
            logger.debug("process %s exited with returncode %s", pid, returncode)
        transp._process_exited(returncode)

    def _forget_child(self, pidfd):
        self._pidfds.pop(pidfd, None)
        self._unwatch(pidfd, False)
        os.close(pidfd)
