"""The loop's API beyond streams: entry points, scheduling, timers, threads,
exception handler, debug mode, executors, DNS, UDP, sendfile."""

import asyncio
import contextvars
import logging
import os
import socket
import sys
import tempfile
import threading
import time

import pytest

import ringway
from conftest import run


def test_entry_points_make_ringway_loops():
    async def which():
        return type(asyncio.get_running_loop())

    assert ringway.run(which()) is ringway.Loop
    if sys.version_info >= (3, 12):  # asyncio.run's loop_factory is 3.12's
        assert asyncio.run(which(), loop_factory=ringway.new_event_loop) is ringway.Loop
    with asyncio.Runner(loop_factory=ringway.new_event_loop) as r:
        assert r.run(which()) is ringway.Loop
    old = asyncio.get_event_loop_policy()
    try:
        ringway.install()
        assert asyncio.run(which()) is ringway.Loop
        assert isinstance(asyncio.new_event_loop(), ringway.Loop)
    finally:
        asyncio.set_event_loop_policy(old)
    loop = ringway.new_event_loop()
    assert isinstance(loop, asyncio.AbstractEventLoop)
    assert loop.backend in ("uring", "epoll")
    loop.close()
    assert loop.is_closed()
    with pytest.raises(RuntimeError, match="closed"):
        loop.call_soon(print)


def test_forced_backends_and_bad_names():
    for b in ("uring", "epoll"):
        loop = ringway.new_event_loop(backend=b)
        assert loop.backend == b
        assert b.replace("uring", "io_uring") in loop._ringway_backend_description
        loop.close()
    with pytest.raises(OSError, match="expected one of auto, uring, epoll"):
        ringway.new_event_loop(backend="kqueue")


def test_call_soon_order_context_and_cancel(loop):
    var = contextvars.ContextVar("var", default="none")
    seen = []
    var.set("outer")
    loop.call_soon(lambda: seen.append(("a", var.get())))
    h = loop.call_soon(seen.append, "cancelled")
    ctx = contextvars.copy_context()
    ctx.run(var.set, "inner")
    loop.call_soon(lambda: seen.append(("c", var.get())), context=ctx)
    loop.call_soon(loop.stop)
    h.cancel()
    assert h.cancelled()
    loop.run_forever()
    assert seen == [("a", "outer"), ("c", "inner")]


def test_timers_fire_in_order_and_cancel_in_constant_time(loop):
    fired = []
    t0 = loop.time()
    for i, delay in enumerate([0.03, 0.01, 0.02, 0.01]):
        loop.call_at(t0 + delay, fired.append, i)
    handles = [loop.call_later(3600, fired.append, "never") for _ in range(10_000)]
    for h in handles:
        h.cancel()
    stats = loop._ringway_stats()
    assert stats["timers"] < 10_000, "cancelled timers are purged when they dominate"
    loop.call_at(t0 + 0.05, loop.stop)
    loop.run_forever()
    assert fired == [1, 3, 2, 0]
    assert loop.time() - t0 >= 0.05
    assert abs(loop.time() - time.monotonic()) < 0.01, "the same clock as asyncio"


def test_call_soon_threadsafe_wakes_a_sleeping_loop(loop):
    async def main():
        fut = loop.create_future()

        def other():
            time.sleep(0.05)
            loop.call_soon_threadsafe(fut.set_result, threading.get_ident())

        t = threading.Thread(target=other)
        t.start()
        # Nothing else would wake the loop for an hour.
        ident = await asyncio.wait_for(fut, 3600)
        t.join()
        assert ident != threading.get_ident()

    run(loop, main(), timeout=10)


def test_exception_handler_and_debug_slow_callbacks(loop, caplog):
    contexts = []
    loop.set_exception_handler(lambda l, c: contexts.append(c))

    def boom():
        raise ValueError("boom")

    loop.call_soon(boom)
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert contexts and isinstance(contexts[0]["exception"], ValueError)
    assert contexts[0]["message"].startswith("Exception in callback")
    loop.set_exception_handler(None)
    loop.set_debug(True)
    loop.slow_callback_duration = 0.01
    with caplog.at_level(logging.WARNING, logger="asyncio"):
        loop.call_soon(time.sleep, 0.02)
        loop.call_soon(loop.stop)
        loop.run_forever()
    assert any("took" in r.getMessage() for r in caplog.records)
    loop.set_debug(False)


def test_executor_and_dns_match_the_socket_module(loop):
    async def main():
        assert await loop.run_in_executor(None, sum, [1, 2, 3]) == 6
        for host in ("127.0.0.1", "localhost", "::1"):
            want = socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM)
            got = await loop.getaddrinfo(host, 80, type=socket.SOCK_STREAM)
            assert got == want
        assert await loop.getnameinfo(("127.0.0.1", 80)) == socket.getnameinfo(
            ("127.0.0.1", 80), 0)

    run(loop, main())


def test_udp_echo(loop):
    class Echo(asyncio.DatagramProtocol):
        def connection_made(self, tr):
            self.tr = tr

        def datagram_received(self, data, addr):
            self.tr.sendto(data[::-1], addr)

    class Client(asyncio.DatagramProtocol):
        def __init__(self):
            self.got = []
            self.done = loop.create_future()

        def datagram_received(self, data, addr):
            self.got.append(data)
            if len(self.got) == 50 and not self.done.done():
                self.done.set_result(None)

    async def main():
        st, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
        addr = st.get_extra_info("sockname")
        ct, cp = await loop.create_datagram_endpoint(Client, remote_addr=addr)
        for i in range(50):
            ct.sendto(b"%d-abc" % i)
        await cp.done
        assert sorted(cp.got) == sorted((b"%d-abc" % i)[::-1] for i in range(50))
        ct.close()
        st.close()
        await asyncio.sleep(0.01)

    run(loop, main())


def test_sock_methods_and_sendfile(loop):
    async def main():
        with tempfile.TemporaryFile() as f:
            blob = os.urandom(1_000_000)
            f.write(blob)
            f.flush()
            f.seek(0)
            lsock = socket.socket()
            lsock.bind(("127.0.0.1", 0))
            lsock.listen()
            lsock.setblocking(False)
            csock = socket.socket()
            csock.setblocking(False)
            accept = asyncio.ensure_future(loop.sock_accept(lsock))
            await loop.sock_connect(csock, lsock.getsockname())
            conn, _ = await accept
            sent = asyncio.ensure_future(loop.sock_sendfile(conn, f))
            got = bytearray()
            while len(got) < len(blob):
                got += await loop.sock_recv(csock, 1 << 20)
            assert await sent == len(blob)
            assert bytes(got) == blob
            await loop.sock_sendall(csock, b"bye")
            buf = bytearray(3)
            assert await loop.sock_recv_into(conn, buf) == 3 and buf == b"bye"
            for s in (conn, csock, lsock):
                s.close()

    run(loop, main())


def test_transport_sendfile_over_tcp(loop):
    async def main():
        got = bytearray()
        done = loop.create_future()

        class Sink(asyncio.Protocol):
            def data_received(self, data):
                got.extend(data)
                if len(got) == 500_000:
                    done.set_result(None)

        server = await loop.create_server(Sink, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        tr, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
        assert isinstance(tr, asyncio.Transport)
        assert tr.get_extra_info("peername")[1] == port
        with tempfile.TemporaryFile() as f:
            f.write(b"s" * 500_000)
            f.seek(0)
            assert await loop.sendfile(tr, f) == 500_000
        await done
        tr.close()
        server.close()
        await server.wait_closed()

    run(loop, main())


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13 has cleanup_socket")
def test_unsupported_arguments_say_so(loop):
    async def main():
        with pytest.raises(NotImplementedError, match="3.13"):
            await loop.create_unix_server(asyncio.Protocol, "/tmp/x", cleanup_socket=True)

    run(loop, main())


def test_a_timer_due_while_callbacks_run_waits_for_what_they_scheduled(any_loop):
    """asyncio decides which timers are due right after its wait, before it runs the
    iteration's callbacks: a timer that falls due while they run fires in the next
    iteration, after what they scheduled with call_soon. (CPython's
    test_queues.test_blocking_put_wait hangs otherwise on a loaded machine.)"""
    loop = any_loop
    order = []

    def first():
        loop.call_later(0.01, order.append, "timer")
        loop.call_soon(order.append, "soon")
        time.sleep(0.03)  # the timer falls due while this callback runs

    loop.call_soon(first)
    loop.call_later(0.2, loop.stop)
    loop.run_forever()
    assert order == ["soon", "timer"]


def test_add_reader_is_level_triggered(any_loop):
    """A reader that takes 10 of the 100 bytes waiting is called again until it has
    them all, and not once more (as with asyncio's selectors): readiness is a state,
    not an edge, and it is looked at after the callback ran. On the epoll backend the
    second call used to wait for new bytes that never came; on both, the poll was armed
    again before the callback read, and the callback ran once more for nothing."""
    loop = any_loop
    a, b = socket.socketpair()
    b.setblocking(False)
    got = bytearray()
    calls = []
    done = loop.create_future()

    def on_readable():
        try:
            chunk = b.recv(10)
        except BlockingIOError:
            calls.append("nothing to read")
            return
        calls.append(len(chunk))
        got.extend(chunk)
        if len(got) == 100 and not done.done():
            done.set_result(None)

    loop.add_reader(b.fileno(), on_readable)
    try:
        a.send(b"x" * 100)
        run(loop, done, timeout=5)
        run(loop, asyncio.sleep(0.05))
        a.send(b"y" * 5)
        run(loop, asyncio.sleep(0.05))
    finally:
        loop.remove_reader(b.fileno())
        a.close()
        b.close()
    assert bytes(got) == b"x" * 100 + b"y" * 5
    assert calls == [10] * 10 + [5], calls
