"""The loop's low-level socket methods (``sock_recv``, ``sock_sendall``, ...): try the
call, and if the socket would block, wait for readiness through the loop's
``add_reader``/``add_writer`` (a poll on the ring) and try again."""

import errno
import io
import os
import socket
from asyncio import base_events, exceptions


class SocketMethods:
    """Mixed into ``ringway.Loop``."""

    def _check_sock(self, sock):
        base_events._check_ssl_socket(sock)
        if self._debug and sock.gettimeout() != 0:
            raise ValueError("the socket must be non-blocking")

    async def _sock_io(self, sock, write, attempt, try_first=True):
        """Returns ``attempt()``, retrying it each time ``sock`` becomes readable (or
        writable) while it raises ``BlockingIOError``; with ``try_first=False`` the
        first try waits for readiness too."""
        if try_first:
            try:
                return attempt()
            except (BlockingIOError, InterruptedError):
                pass
        fd = sock.fileno()
        self._ensure_fd_no_transport(fd)
        fut = self.create_future()

        def ready():
            if fut.done():
                return
            try:
                result = attempt()
            except (BlockingIOError, InterruptedError):
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                fut.set_exception(exc)
            else:
                fut.set_result(result)

        handle = self._make_handle(ready, ())
        self._watch(fd, write, handle)
        try:
            return await fut
        finally:
            # Only if nobody replaced our callback meanwhile.
            if self._watching(fd, write) is handle:
                self._unwatch(fd, write)
            fut = None

    async def sock_recv(self, sock, n):
        self._check_sock(sock)
        return await self._sock_io(sock, False, lambda: sock.recv(n))

    async def sock_recv_into(self, sock, buf):
        self._check_sock(sock)
        return await self._sock_io(sock, False, lambda: sock.recv_into(buf))

    async def sock_recvfrom(self, sock, bufsize):
        self._check_sock(sock)
        return await self._sock_io(sock, False, lambda: sock.recvfrom(bufsize))

    async def sock_recvfrom_into(self, sock, buf, nbytes=0):
        self._check_sock(sock)
        if not nbytes:
            nbytes = len(buf)
        return await self._sock_io(sock, False, lambda: sock.recvfrom_into(buf, nbytes))

    async def sock_sendto(self, sock, data, address):
        self._check_sock(sock)
        return await self._sock_io(sock, True, lambda: sock.sendto(data, address))

    async def sock_sendall(self, sock, data):
        self._check_sock(sock)
        view = memoryview(data)
        total = len(view)
        sent = 0

        def attempt():
            nonlocal sent
            while sent < total:
                n = sock.send(view[sent:])
                sent += n
            return None

        if not total:
            return
        try:
            return await self._sock_io(sock, True, attempt)
        finally:
            view.release()

    async def sock_connect(self, sock, address):
        self._check_sock(sock)
        if sock.family == socket.AF_INET or (
            base_events._HAS_IPv6 and sock.family == socket.AF_INET6
        ):
            resolved = await self._ensure_resolved(
                address, family=sock.family, type=sock.type, proto=sock.proto, loop=self
            )
            _, _, _, _, address = resolved[0]
        try:
            sock.connect(address)
            return
        except (BlockingIOError, InterruptedError):
            pass

        def finished():
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err == errno.EINPROGRESS or err == errno.EALREADY:
                raise BlockingIOError(err, os.strerror(err))
            if err != 0:
                raise OSError(err, f"Connect call failed {address}")

        # Only once writable: reading SO_ERROR earlier would consume an error that a
        # cancelled connect must leave for the next connect() to report.
        await self._sock_io(sock, True, finished, try_first=False)

    async def sock_accept(self, sock):
        self._check_sock(sock)

        def attempt():
            conn, address = sock.accept()
            conn.setblocking(False)
            return conn, address

        return await self._sock_io(sock, False, attempt)

    async def _sock_sendfile_native(self, sock, file, offset, count):
        try:
            fileno = file.fileno()
        except (AttributeError, io.UnsupportedOperation) as err:
            raise exceptions.SendfileNotAvailableError("not a regular file") from err
        try:
            fsize = os.fstat(fileno).st_size
        except OSError as err:
            raise exceptions.SendfileNotAvailableError("not a regular file") from err
        blocksize = count if count else fsize
        if not blocksize:
            return 0
        blocksize = min(blocksize, 0x7FFFF000)
        sent = 0
        position = offset

        def attempt():
            nonlocal sent, position
            while True:
                want = blocksize - sent if count else fsize - position
                if want <= 0:
                    return sent
                try:
                    n = os.sendfile(sock.fileno(), fileno, position, want)
                except (BlockingIOError, InterruptedError):
                    raise
                except OSError as exc:
                    if sent == 0:
                        # Nothing went out: the caller may fall back to read + send.
                        raise exceptions.SendfileNotAvailableError(
                            "os.sendfile call failed"
                        ) from exc
                    if exc.errno == errno.ENOTCONN and type(exc) is not ConnectionError:
                        raise ConnectionError("socket is not connected", errno.ENOTCONN) from exc
                    raise
                if n == 0:
                    return sent  # end of file
                sent += n
                position += n

        try:
            return await self._sock_io(sock, True, attempt)
        finally:
            if sent > 0:
                file.seek(offset + sent)
