"""Echo over 100 connections at once, every byte checked, through each of the server
styles (Protocol, BufferedProtocol, streams), on both backends; Unix sockets too."""

import asyncio
import os
import random
import tempfile

import pytest

from conftest import run

CONNS = 100


class EchoProtocol(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.transport.write(data)

    def eof_received(self):
        self.transport.close()


class EchoBuffered(asyncio.BufferedProtocol):
    def __init__(self):
        self.buf = bytearray(1000)  # smaller than a pool buffer: split deliveries

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        return self.buf

    def buffer_updated(self, nbytes):
        self.transport.write(bytes(self.buf[:nbytes]))

    def eof_received(self):
        self.transport.close()


async def stream_echo(reader, writer):
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()
    await writer.wait_closed()


async def client(open_conn, seed, size):
    rng = random.Random(seed)
    data = rng.randbytes(size)
    reader, writer = await open_conn()
    got = bytearray()

    async def read_all():
        while len(got) < size:
            chunk = await reader.read(65536)
            assert chunk, f"client {seed}: closed after {len(got)} of {size} bytes"
            got.extend(chunk)

    reading = asyncio.ensure_future(read_all())
    for i in range(0, size, 7919):  # odd piece sizes, crossing buffer boundaries
        writer.write(data[i:i + 7919])
        await writer.drain()
    await reading
    assert bytes(got) == data, f"client {seed}: bytes differ"
    writer.write_eof()
    assert await reader.read() == b""
    writer.close()
    await writer.wait_closed()


async def start(style, loop, **where):
    if style == "protocol":
        factory = EchoProtocol
    elif style == "buffered":
        factory = EchoBuffered
    else:
        factory = None
    if "path" in where:
        if factory is None:
            return await asyncio.start_unix_server(stream_echo, **where)
        return await loop.create_unix_server(factory, **where)
    if factory is None:
        return await asyncio.start_server(stream_echo, "127.0.0.1", 0)
    return await loop.create_server(factory, "127.0.0.1", 0)


@pytest.mark.parametrize("style", ["protocol", "buffered", "streams"])
def test_tcp_echo_100_connections_every_byte(loop, style):
    async def main():
        server = await start(style, loop)
        port = server.sockets[0].getsockname()[1]
        sizes = [1, 64, 4096, 65536, 300_000] + [random.Random(i).randrange(1, 200_000)
                                                 for i in range(CONNS - 5)]
        await asyncio.gather(*(
            client(lambda: asyncio.open_connection("127.0.0.1", port), i, sizes[i])
            for i in range(CONNS)))
        server.close()
        await server.wait_closed()

    run(loop, main(), timeout=120)


@pytest.mark.parametrize("style", ["protocol", "streams"])
def test_unix_echo(loop, style):
    async def main():
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "echo.sock")
            server = await start(style, loop, path=path)
            await asyncio.gather(*(
                client(lambda: asyncio.open_unix_connection(path), i, 50_000)
                for i in range(20)))
            server.close()
            await server.wait_closed()

    run(loop, main())


def test_buffered_protocol_buffer_filled_from_many_pool_buffers(loop):
    """200 KB already waiting in the socket arrive as many pool buffers in one turn;
    each get_buffer() is filled from as many of them as fit (as asyncio's recv_into
    fills it), so the rounds are counted by the protocol's 64 KiB buffer, not by the
    pool's buffer size."""
    import math
    import socket

    total, room = 200_000, 64 * 1024
    payload = os.urandom(total)

    class Sink(asyncio.BufferedProtocol):
        def __init__(self):
            self.buf = bytearray(room)
            self.got = bytearray()
            self.rounds = 0
            self.done = loop.create_future()

        def get_buffer(self, hint):
            return self.buf

        def buffer_updated(self, n):
            self.rounds += 1
            self.got += self.buf[:n]
            if len(self.got) == total:
                self.done.set_result(None)

    async def main():
        a, b = socket.socketpair()
        b.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        b.sendall(payload)  # all of it waits in the socket before reading starts
        tr, proto = await loop.connect_accepted_socket(Sink, a)
        await proto.done
        assert bytes(proto.got) == payload
        print(f"{loop.backend}: {proto.rounds} get_buffer/buffer_updated rounds for "
              f"{total} bytes")
        assert proto.rounds <= 2 * math.ceil(total / room), proto.rounds
        tr.close()
        b.close()

    run(loop, main())
