"""The Python servers of the S14 benchmark, one process each, on a chosen loop.

    python servers.py --loop ringway|asyncio|uvloop|rloop --mode MODE [--port 0]

Modes: ``protocol`` (echo in ``Protocol.data_received``), ``buffered`` (echo through
``BufferedProtocol``), ``streams`` (``start_server`` with ``reader.read``/``writer.write``
/``drain``), ``http`` (answers each request with two ``write()`` calls, headers then
body, as ASGI servers do). Prints ``PORT <n>`` once listening; runs until SIGTERM or
SIGINT. The steady state is one ``run_forever``, never one run per operation."""

import argparse
import asyncio
import signal
import sys

BODY = b"Hello, World!"
HEAD = (b"HTTP/1.1 200 OK\r\nserver: ringway\r\ncontent-type: text/plain\r\n"
        b"content-length: 13\r\n\r\n")


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.transport.write(data)


class EchoBuffered(asyncio.BufferedProtocol):
    def __init__(self):
        self.buf = bytearray(256 * 1024)
        self.view = memoryview(self.buf)

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        return self.buf

    def buffer_updated(self, nbytes):
        self.transport.write(bytes(self.view[:nbytes]))


class TwoWriteHttp(asyncio.Protocol):
    """Counts request heads (``\\r\\n\\r\\n``) and answers each with two writes."""

    def connection_made(self, transport):
        self.transport = transport
        self.pending = b""

    def data_received(self, data):
        data = self.pending + data if self.pending else data
        start = 0
        write = self.transport.write
        while (end := data.find(b"\r\n\r\n", start)) >= 0:
            write(HEAD)
            write(BODY)
            start = end + 4
        self.pending = data[start:]


async def stream_echo(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    writer.close()


def make_loop(name):
    if name == "ringway":
        import ringway
        return ringway.new_event_loop()
    if name == "asyncio":
        return asyncio.SelectorEventLoop()
    if name == "uvloop":
        import uvloop
        return uvloop.new_event_loop()
    if name == "rloop":
        import rloop
        return rloop.new_event_loop()
    raise SystemExit(f"unknown loop {name!r}: expected ringway, asyncio, uvloop or rloop")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loop", required=True)
    ap.add_argument("--mode", required=True,
                    choices=["protocol", "buffered", "streams", "http"])
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    loop = make_loop(args.loop)
    asyncio.set_event_loop(loop)
    if args.mode == "streams":
        server = loop.run_until_complete(
            asyncio.start_server(stream_echo, "127.0.0.1", args.port))
    else:
        factory = {"protocol": Echo, "buffered": EchoBuffered, "http": TwoWriteHttp}[args.mode]
        server = loop.run_until_complete(
            loop.create_server(factory, "127.0.0.1", args.port, backlog=1024))
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    signal.signal(signal.SIGTERM, lambda *_: loop.call_soon_threadsafe(loop.stop))
    try:
        loop.run_forever()
    except KeyboardInterrupt:
        pass
    server.close()
    loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
