"""Cancellation and closing at awkward moments leave nothing behind: no operation in
flight, no pool buffer held, no source registered, no fd open."""

import asyncio
import os
import socket

from conftest import run


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def test_cancelled_socket_waits_leave_nothing(loop):
    async def main():
        before = open_fds()
        for _ in range(50):
            a, b = socket.socketpair()
            a.setblocking(False)
            t = asyncio.ensure_future(loop.sock_recv(a, 100))
            await asyncio.sleep(0)
            t.cancel()
            try:
                await t
            except asyncio.CancelledError:
                pass
            # The fd is free again for a new watcher.
            b.send(b"x")
            assert await loop.sock_recv(a, 100) == b"x"
            a.close()
            b.close()
        await asyncio.sleep(0.01)
        stats = loop._ringway_stats()
        assert stats["watches"] == 0, stats
        assert open_fds() == before

    run(loop, main())


def test_abort_and_close_with_queued_data_and_a_busy_peer(loop):
    async def main():
        before = open_fds()
        lost = []

        class P(asyncio.Protocol):
            def connection_made(self, tr):
                self.tr = tr

            def connection_lost(self, exc):
                lost.append(exc)

        for i in range(30):
            a, b = socket.socketpair()
            tr, pr = await loop.create_connection(P, sock=a)
            tr.write(b"q" * 500_000)  # more than the socket takes: queued
            if i % 3 == 0:
                tr.abort()
            elif i % 3 == 1:
                tr.close()
                b.close()  # the peer goes away while we still send
            else:
                tr.pause_reading()
                b.send(b"unread")
                tr.abort()
            await asyncio.sleep(0.01)
            if i % 3 != 1:
                b.close()
        for _ in range(100):
            if len(lost) == 30:
                break
            await asyncio.sleep(0.01)
        assert len(lost) == 30
        stats = loop._ringway_stats()
        assert stats["sources"] == 0 and stats["pool_in_use"] == 0, stats
        assert open_fds() == before

    run(loop, main())


def test_server_close_refuses_new_connections_at_once(loop):
    async def main():
        server = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        # No iteration ran since close(): the listening socket must be gone already.
        s = socket.socket()
        try:
            s.settimeout(2)
            try:
                s.connect(("127.0.0.1", port))
                refused = False
            except ConnectionRefusedError:
                refused = True
        finally:
            s.close()
        assert refused
        await server.wait_closed()

    run(loop, main())


def test_cancelling_a_task_mid_stream_closes_cleanly(loop):
    async def main():
        handlers_done = []

        async def handler(reader, writer):
            try:
                while await reader.read(1000):
                    pass
            finally:
                writer.close()
                handlers_done.append(1)

        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        async def chatter():
            r, w = await asyncio.open_connection("127.0.0.1", port)
            try:
                while True:
                    w.write(b"c" * 10000)
                    await w.drain()
            finally:
                w.close()

        tasks = [asyncio.ensure_future(chatter()) for _ in range(20)]
        await asyncio.sleep(0.1)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # (3.11's wait_closed does not wait for the connections.)
        while len(handlers_done) < 20:
            await asyncio.sleep(0.01)
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)

    run(loop, main())
