"""contextvars in protocol callbacks: every callback of a protocol runs in the context
of the call that made its transport (a server's connections: the context that started
the server), never in the loop's own. Checked for every API that makes a transport:
TCP and Unix connections and servers, ``connect_accepted_socket``, TLS, ``start_tls``,
datagrams, pipes and subprocesses, in Protocol and BufferedProtocol styles.

Each case runs on both backends and, as the reference, on stock asyncio's loop: the
test asserts the same values there (so a case that asyncio itself answers differently
would show here as a failing reference, not as a silent pass)."""

import asyncio
import contextvars
import os
import socket
import sys
import tempfile
from test.test_asyncio import utils as test_utils

import pytest

from conftest import run

VAR = contextvars.ContextVar("VAR", default="unset")


def in_outer_context(loop, coro_fn):
    """Runs ``coro_fn()`` with VAR set to "outer" in the context the loop itself runs
    in: a callback that runs in the loop's context instead of its transport's reads
    "outer"."""
    def go():
        VAR.set("outer")
        return run(loop, coro_fn())
    return contextvars.copy_context().run(go)


class Recorder:
    """Records (callback name, VAR) for every protocol callback."""

    def __init__(self, seen, tag):
        self.seen = seen
        self.tag = tag
        self.lost = asyncio.get_running_loop().create_future()
        self.got = bytearray()

    def note(self, name):
        self.seen.append((self.tag, name, VAR.get()))

    def connection_made(self, transport):
        self.transport = transport
        self.note("connection_made")

    def connection_lost(self, exc):
        self.note("connection_lost")
        if not self.lost.done():
            self.lost.set_result(None)

    def eof_received(self):
        self.note("eof_received")


class StreamRecorder(Recorder, asyncio.Protocol):
    """Echoes (server side) or collects (client side)."""

    def data_received(self, data):
        self.note("data_received")
        self.got += data
        if self.tag == "server":
            self.transport.write(data)

    def eof_received(self):
        self.note("eof_received")
        if self.tag == "server":
            self.transport.close()


class BufferedRecorder(Recorder, asyncio.BufferedProtocol):
    def get_buffer(self, hint):
        self.note("get_buffer")
        self.buf = bytearray(4096)
        return self.buf

    def buffer_updated(self, n):
        self.note("buffer_updated")
        self.got += self.buf[:n]
        self.transport.write(bytes(self.buf[:n]))

    def eof_received(self):
        self.note("eof_received")
        self.transport.close()


def check(seen, expect):
    """Every record of each tag reads that tag's expected value, and records came."""
    tags = {t for t, _, _ in seen}
    assert tags == set(expect), seen
    wrong = [s for s in seen if s[2] != expect[s[0]]]
    assert not wrong, f"callbacks in the wrong context: {wrong}"


async def serve_in_context(value, make_server):
    """Starts a server from a task whose VAR is ``value``."""
    async def start():
        VAR.set(value)
        return await make_server()
    return await asyncio.ensure_future(start())


async def client_round_trip(seen, connect, payload=b"ping" * 1000):
    VAR.set("inner")
    tr, proto = await connect(lambda: StreamRecorder(seen, "client"))
    tr.write(payload)
    while len(proto.got) < len(payload):
        await asyncio.sleep(0.005)
    assert bytes(proto.got) == payload
    tr.close()
    await proto.lost


@pytest.mark.parametrize("style", [StreamRecorder, BufferedRecorder])
def test_tcp_server_and_connection(any_loop, style):
    loop = any_loop
    seen = []

    async def main():
        server = await serve_in_context("server", lambda: loop.create_server(
            lambda: style(seen, "server"), "127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        await client_round_trip(
            seen, lambda f: loop.create_connection(f, "127.0.0.1", port))
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)

    in_outer_context(loop, main)
    check(seen, {"server": "server", "client": "inner"})


def test_connect_accepted_socket(any_loop):
    loop = any_loop
    seen = []

    async def main():
        VAR.set("inner")
        a, b = socket.socketpair()
        b.setblocking(False)
        tr, proto = await loop.connect_accepted_socket(
            lambda: StreamRecorder(seen, "server"), a)
        b.sendall(b"hello")
        b.shutdown(socket.SHUT_WR)
        got = b""
        while len(got) < 5:
            got += await loop.sock_recv(b, 100)
        assert got == b"hello"
        await proto.lost
        b.close()

    in_outer_context(loop, main)
    check(seen, {"server": "inner"})


def test_unix_server_and_connection(any_loop):
    loop = any_loop
    seen = []

    async def main():
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s")
            server = await serve_in_context("server", lambda: loop.create_unix_server(
                lambda: StreamRecorder(seen, "server"), path))
            await client_round_trip(
                seen, lambda f: loop.create_unix_connection(f, path))
            server.close()
            await server.wait_closed()
            await asyncio.sleep(0.05)

    in_outer_context(loop, main)
    check(seen, {"server": "server", "client": "inner"})


def test_tls_server_and_connection(any_loop):
    loop = any_loop
    seen = []
    server_ctx = test_utils.simple_server_sslcontext()
    client_ctx = test_utils.simple_client_sslcontext()

    async def main():
        server = await serve_in_context("server", lambda: loop.create_server(
            lambda: StreamRecorder(seen, "server"), "127.0.0.1", 0, ssl=server_ctx))
        port = server.sockets[0].getsockname()[1]
        await client_round_trip(seen, lambda f: loop.create_connection(
            f, "127.0.0.1", port, ssl=client_ctx, server_hostname="localhost"))
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)

    in_outer_context(loop, main)
    check(seen, {"server": "server", "client": "inner"})


def test_start_tls(any_loop):
    loop = any_loop
    seen = []
    server_ctx = test_utils.simple_server_sslcontext()
    client_ctx = test_utils.simple_client_sslcontext()

    class Upgrading(StreamRecorder):
        """Server side: answers "go", then upgrades its connection to TLS."""

        def data_received(self, data):
            self.note("data_received")
            if data == b"starttls":
                self.transport.pause_reading()
                self.transport.write(b"go")
                asyncio.ensure_future(self.upgrade())

        async def upgrade(self):
            tls = await loop.start_tls(self.transport, self, server_ctx, server_side=True)
            self.transport = tls

    async def main():
        server = await serve_in_context("server", lambda: loop.create_server(
            lambda: Upgrading(seen, "server"), "127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        VAR.set("inner")
        tr, proto = await loop.create_connection(
            lambda: StreamRecorder(seen, "client"), "127.0.0.1", port)
        tr.write(b"starttls")
        while proto.got != b"go":
            await asyncio.sleep(0.005)
        tls = await loop.start_tls(tr, proto, client_ctx, server_hostname="localhost")
        tls.close()
        await proto.lost
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)

    in_outer_context(loop, main)
    check(seen, {"server": "server", "client": "inner"})


def test_datagram_endpoints(any_loop):
    loop = any_loop
    seen = []

    class Dgram(Recorder, asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):
            self.note("datagram_received")
            if self.tag == "server":
                self.transport.sendto(data, addr)
            else:
                self.got += data

        def error_received(self, exc):
            self.note("error_received")

    async def main():
        st, sp = await serve_in_context("server", lambda: loop.create_datagram_endpoint(
            lambda: Dgram(seen, "server"), local_addr=("127.0.0.1", 0)))
        VAR.set("inner")
        ct, cp = await loop.create_datagram_endpoint(
            lambda: Dgram(seen, "client"), remote_addr=st.get_extra_info("sockname"))
        ct.sendto(b"abc")
        while cp.got != b"abc":
            await asyncio.sleep(0.005)
        ct.close()
        await cp.lost
        # asyncio runs connection_lost in the context of the close() call: close the
        # server's transport from the server's context, as a server would.
        await serve_in_context("server", lambda: asyncio.sleep(0, st.close()))
        await sp.lost

    in_outer_context(loop, main)
    check(seen, {"server": "server", "client": "inner"})


def test_read_and_write_pipes(any_loop):
    loop = any_loop
    seen = []

    async def main():
        VAR.set("inner")
        rfd, wfd = os.pipe()
        rtr, rproto = await loop.connect_read_pipe(
            lambda: StreamRecorder(seen, "reader"), os.fdopen(rfd, "rb", 0))
        wtr, wproto = await loop.connect_write_pipe(
            lambda: StreamRecorder(seen, "writer"), os.fdopen(wfd, "wb", 0))
        wtr.write(b"x" * 100_000)
        while len(rproto.got) < 100_000:
            await asyncio.sleep(0.005)
        wtr.close()
        await rproto.lost
        await wproto.lost

    in_outer_context(loop, main)
    check(seen, {"reader": "inner", "writer": "inner"})


def test_subprocess_protocol(any_loop):
    loop = any_loop
    seen = []

    class Proc(asyncio.SubprocessProtocol):
        def __init__(self):
            self.out = bytearray()
            self.exited = loop.create_future()

        def note(self, name):
            seen.append(("proc", name, VAR.get()))

        def connection_made(self, transport):
            self.note("connection_made")

        def pipe_data_received(self, fd, data):
            self.note("pipe_data_received")
            self.out += data

        def pipe_connection_lost(self, fd, exc):
            self.note("pipe_connection_lost")

        def process_exited(self):
            self.note("process_exited")

        def connection_lost(self, exc):
            self.note("connection_lost")
            self.exited.set_result(None)

    async def main():
        VAR.set("inner")
        tr, proto = await loop.subprocess_exec(
            Proc, sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None)
        tr.get_pipe_transport(0).write(b"echo me")
        tr.get_pipe_transport(0).close()
        await proto.exited
        assert bytes(proto.out) == b"echo me"
        tr.close()

    in_outer_context(loop, main)
    if isinstance(loop, asyncio.SelectorEventLoop) and sys.version_info < (3, 12):
        # The reference on 3.11: asyncio's default child watcher is a thread, and
        # process_exited (then connection_lost) runs in that thread's context. The
        # reference is checked on the callbacks before those only.
        seen = [s for s in seen if s[1] not in ("process_exited", "connection_lost")]
    check(seen, {"proc": "inner"})
