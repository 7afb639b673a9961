"""ringway's asyncio loop in one file: an echo server (a Protocol: each receive goes
from the ring's buffer straight to ``data_received``) and clients (asyncio streams) on
one loop, then a subprocess, on a loop made by ``ringway.new_event_loop`` (what
``ringway.run`` does, with the backend chosen here). Bounded: it exits when done.

    python examples/echo.py [--backend auto|uring|epoll] [--clients 10] [--messages 1000]

Any asyncio code runs the same way: ``ringway.run(main())``, or
``asyncio.run(main(), loop_factory=ringway.new_event_loop)`` (Python 3.12+).
"""

import argparse
import asyncio
import sys
import time

import ringway


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.transport.write(data)  # leaves with this iteration's one send

    def eof_received(self):
        self.transport.close()


async def client(port, messages, size):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    for _ in range(messages):
        writer.write(payload)
        assert await reader.readexactly(size) == payload
    writer.write_eof()
    assert await reader.read() == b""
    writer.close()
    await writer.wait_closed()
    return messages


async def main(clients, messages, size):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    t0 = time.perf_counter()
    done = await asyncio.gather(*(client(port, messages, size) for _ in range(clients)))
    elapsed = time.perf_counter() - t0
    server.close()
    await server.wait_closed()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "print('hello from a child')",
        stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    print(f"{type(loop).__name__} on {loop.backend}: {sum(done)} echoes of {size} B over "
          f"{clients} connections in {elapsed:.2f} s; child said {out.decode().strip()!r}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="auto", choices=["auto", "uring", "epoll"])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--size", type=int, default=1024)
    args = ap.parse_args()
    with asyncio.Runner(loop_factory=lambda: ringway.new_event_loop(backend=args.backend)) as r:
        r.run(main(args.clients, args.messages, args.size))
