"""What a new user runs first, in a fresh environment: an echo over TCP and a
subprocess through ``ringway.run``, on each backend. Prints one line per backend and
exits non-zero on any mismatch."""

import asyncio
import os
import sys

import ringway


async def echo_and_subprocess():
    async def handle(reader, writer):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = os.urandom(200_000)
    writer.write(payload)
    await writer.drain()
    echoed = await reader.readexactly(len(payload))
    writer.close()
    await writer.wait_closed()
    server.close()
    await server.wait_closed()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read()[::-1])",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate(b"ringway")
    loop = asyncio.get_running_loop()
    return echoed == payload, out, proc.returncode, type(loop).__name__, loop.backend


def main():
    for backend in ("uring", "epoll"):
        os.environ["RINGWAY_BACKEND"] = backend
        ok, out, code, cls, ran = ringway.run(echo_and_subprocess())
        print(f"smoke {backend}: echo {'ok' if ok else 'WRONG'}, subprocess {out!r} "
              f"exit {code}, {cls} on {ran}")
        if not (ok and out == b"yawgnir" and code == 0 and cls == "Loop" and ran == backend):
            return 1
    print(f"ringway from {os.path.dirname(ringway.__file__)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
