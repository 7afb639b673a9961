"""Counts that do not depend on the machine's speed: what the design promises per
message. Two ``write()`` calls in one callback leave as one send; a steady echo needs
at most two driver waits per message on one connection (none of them a syscall per
operation on io_uring)."""

import asyncio
import socket
import threading

from conftest import run

N = 200


def _client(port, n, request, expect_len, out):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for _ in range(n):
            s.sendall(request)
            got = b""
            while len(got) < expect_len:
                chunk = s.recv(65536)
                assert chunk
                got += chunk
            out.append(got)
    finally:
        s.close()


class TwoWrites(asyncio.Protocol):
    BODY = b"hello world\n"
    HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n"

    def connection_made(self, tr):
        self.tr = tr

    def data_received(self, data):
        self.tr.write(self.HEAD)  # headers, then body: as ASGI servers answer
        self.tr.write(self.BODY)


def test_two_writes_per_response_leave_as_one_send(loop):
    async def main():
        server = await loop.create_server(TwoWrites, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        out = []
        before = loop._ringway_stats()
        resp_len = len(TwoWrites.HEAD) + len(TwoWrites.BODY)
        t = threading.Thread(target=_client, args=(port, N, b"GET / HTTP/1.1\r\n\r\n",
                                                   resp_len, out))
        t.start()
        while t.is_alive():
            await asyncio.sleep(0.01)
        t.join()
        after = loop._ringway_stats()
        assert len(out) == N and all(o == TwoWrites.HEAD + TwoWrites.BODY for o in out)
        sends = after["sends"] - before["sends"]
        assert sends == N, f"{sends} sends for {N} responses"
        waits = after["turns"] - before["turns"]
        # One wait for the request, at most one more for the send's own completion,
        # plus the test's own sleeps.
        print(f"{loop.backend}: {sends} sends, {waits} turns for {N} responses")
        assert waits <= 2 * N + 200, f"{waits} driver turns for {N} responses"
        server.close()
        await server.wait_closed()

    run(loop, main())
