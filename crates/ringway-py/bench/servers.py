"""The Python servers of the S14 benchmark, one process each, on a chosen loop.

    python servers.py --loop ringway|asyncio|uvloop|rloop --mode MODE [--port 0] [--count]

Modes: ``protocol`` (echo in ``Protocol.data_received``), ``buffered`` (echo through
``BufferedProtocol``), ``streams`` (``start_server`` with ``reader.read``/``writer.write``
/``drain``), ``http`` (answers each request with two ``write()`` calls, headers then
body, as ASGI servers do). Prints ``PORT <n>`` once listening; runs until SIGTERM or
SIGINT. The steady state is one ``run_forever``, never one run per operation.

``--count`` (``protocol`` mode; for ``counts.py``): the protocol counts its
``data_received`` calls and bytes; SIGUSR1 zeroes the counters, SIGUSR2 prints them as
one ``COUNTS {json}`` line (with ringway's own counters, ``loop._ringway_stats()``, as
differences since the zero)."""

import argparse
import asyncio
import json
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


class Counts:
    calls = 0
    nbytes = 0


class CountingEcho(Echo):
    def data_received(self, data):
        Counts.calls += 1
        Counts.nbytes += len(data)
        self.transport.write(data)


def install_counters(loop):
    """SIGUSR1 zeroes, SIGUSR2 prints ``COUNTS {json}``."""
    stats = getattr(loop, "_ringway_stats", None)
    base = {}

    def zero():
        Counts.calls = Counts.nbytes = 0
        base.clear()
        if stats:
            base.update(stats())

    def report():
        out = {"data_received": Counts.calls, "bytes": Counts.nbytes}
        if stats:
            now = stats()
            for k in ("turns", "enters", "submitted", "completions", "sends", "direct_reads"):
                out[k] = now[k] - base.get(k, 0)
        print("COUNTS", json.dumps(out), flush=True)

    loop.add_signal_handler(signal.SIGUSR1, zero)
    loop.add_signal_handler(signal.SIGUSR2, report)


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
    ap.add_argument("--count", action="store_true",
                    help="count data_received calls (SIGUSR1 zeroes, SIGUSR2 prints)")
    args = ap.parse_args()
    loop = make_loop(args.loop)
    asyncio.set_event_loop(loop)
    if args.mode == "streams":
        server = loop.run_until_complete(
            asyncio.start_server(stream_echo, "127.0.0.1", args.port))
    else:
        echo = CountingEcho if args.count else Echo
        factory = {"protocol": echo, "buffered": EchoBuffered, "http": TwoWriteHttp}[args.mode]
        server = loop.run_until_complete(
            loop.create_server(factory, "127.0.0.1", args.port, backlog=1024))
    if args.count:
        install_counters(loop)
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
