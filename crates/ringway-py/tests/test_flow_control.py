"""Flow control: pause_writing above the high-water mark when the peer does not read,
resume_writing below the low-water mark when it does; pause_reading stops
data_received and lets the kernel push back on the sender; resume_reading delivers
what arrived meanwhile first, in order."""

import asyncio
import socket

from conftest import run


class Recorder(asyncio.Protocol):
    def __init__(self):
        self.events = []
        self.data = bytearray()
        self.lost = asyncio.get_event_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport

    def pause_writing(self):
        self.events.append(("pause", self.transport.get_write_buffer_size()))

    def resume_writing(self):
        self.events.append(("resume", self.transport.get_write_buffer_size()))

    def data_received(self, data):
        self.data.extend(data)

    def connection_lost(self, exc):
        if not self.lost.done():
            self.lost.set_result(exc)


def test_pause_and_resume_writing_follow_the_water_marks(loop):
    async def main():
        a, b = socket.socketpair()
        b.setblocking(False)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
        tr, pr = await loop.create_connection(Recorder, sock=a)
        tr.set_write_buffer_limits(high=64 * 1024, low=16 * 1024)
        assert tr.get_write_buffer_limits() == (16 * 1024, 64 * 1024)
        chunk = b"x" * 16384
        for _ in range(64):  # 1 MiB, far more than the peer's and our buffers
            tr.write(chunk)
        await asyncio.sleep(0.05)
        assert pr.events and pr.events[0][0] == "pause", pr.events
        assert pr.events[0][1] > 64 * 1024
        assert tr.get_write_buffer_size() > 0
        # The peer reads everything: the queue drains and the protocol resumes.
        got = 0
        while got < 64 * 16384:
            try:
                got += len(b.recv(1 << 20))
            except BlockingIOError:
                await asyncio.sleep(0.001)
        for _ in range(100):
            if tr.get_write_buffer_size() == 0:
                break
            await asyncio.sleep(0.01)
        assert pr.events[-1][0] == "resume", pr.events
        assert pr.events[-1][1] <= 16 * 1024
        assert tr.get_write_buffer_size() == 0
        tr.close()
        await pr.lost
        b.close()

    run(loop, main())


def test_pause_reading_holds_data_and_pushes_back(loop):
    async def main():
        a, b = socket.socketpair()
        b.setblocking(False)
        tr, pr = await loop.create_connection(Recorder, sock=a)
        b.send(b"before ")
        await asyncio.sleep(0.02)
        assert bytes(pr.data) == b"before "
        tr.pause_reading()
        assert not tr.is_reading()
        b.send(b"while paused ")
        await asyncio.sleep(0.05)
        assert bytes(pr.data) == b"before ", "no data_received while paused"
        # The kernel pushes back: the peer eventually cannot send any more.
        sent = 0
        try:
            for _ in range(10000):
                sent += b.send(b"y" * 65536)
        except BlockingIOError:
            pass
        assert sent < 10000 * 65536
        tr.resume_reading()
        assert tr.is_reading()
        want = len(b"before while paused ") + sent
        for _ in range(500):
            if len(pr.data) >= want:
                break
            await asyncio.sleep(0.01)
        b.send(b"after")
        want += len(b"after")
        for _ in range(500):
            if len(pr.data) >= want:
                break
            await asyncio.sleep(0.01)
        assert len(pr.data) == want
        assert bytes(pr.data[:20]) == b"before while paused "
        assert bytes(pr.data[-5:]) == b"after", "in order: held data first"
        tr.close()
        await pr.lost
        b.close()

    run(loop, main())


def test_stream_writer_drain_waits_for_a_slow_reader(loop):
    async def main():
        release = asyncio.Event()
        received = loop.create_future()

        async def slow(reader, writer):
            await release.wait()
            n = 0
            while chunk := await reader.read(1 << 20):
                n += len(chunk)
            received.set_result(n)
            writer.close()

        # Small fixed kernel buffers (no autotuning): once full they stay full.
        lsock = socket.socket()
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        lsock.bind(("127.0.0.1", 0))
        server = await asyncio.start_server(slow, sock=lsock)
        port = server.sockets[0].getsockname()[1]
        csock = socket.socket()
        csock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
        csock.connect(("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(sock=csock)
        high = writer.transport.get_write_buffer_limits()[1]
        # The peer's handler does not read: once its StreamReader has paused its
        # transport (past 128 KiB) and the kernel's buffers are full, our queue grows
        # past the high-water mark (bounded, in case nothing ever pushes back).
        written = 0
        while written < 1024 * 1024 or writer.transport.get_write_buffer_size() <= high:
            assert written < 256 * 1024 * 1024, "the kernel never pushed back"
            writer.write(b"z" * 65536)
            written += 65536
            await asyncio.sleep(0)
        drain = asyncio.ensure_future(writer.drain())
        await asyncio.sleep(0.05)
        assert not drain.done(), "drain() must wait while the peer does not read"
        release.set()
        await drain
        assert writer.transport.get_write_buffer_size() <= high
        writer.write_eof()
        assert await received == written
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()

    run(loop, main())
