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


def test_a_message_that_fits_a_pool_buffer_arrives_in_one_receive(loop):
    """100 KB waiting whole in the socket when reading starts is one receive completion
    and one data_received: the loop's pool buffers are 256 KiB (the runtime's 64 KiB
    ones made it two completions; see the README's "Large messages"). So large a
    delivery then moves the transport to direct reads: the receive's cancel adds its
    final completion and the cancel's own."""
    import os

    total = 100 * 1024
    payload = os.urandom(total)

    class Sink(asyncio.Protocol):
        def __init__(self):
            self.chunks = []
            self.done = loop.create_future()

        def data_received(self, data):
            self.chunks.append(data)
            if sum(map(len, self.chunks)) == total:
                self.done.set_result(None)

    async def main():
        lsock = socket.socket()
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        lsock.bind(("127.0.0.1", 0))
        lsock.listen()
        client = socket.create_connection(lsock.getsockname())
        conn, _ = lsock.accept()
        lsock.close()
        client.sendall(payload)  # all of it waits in the socket before reading starts
        before = loop._ringway_stats()
        tr, proto = await loop.connect_accepted_socket(Sink, conn)
        await proto.done
        after = loop._ringway_stats()
        tr.close()
        client.close()
        assert b"".join(proto.chunks) == payload
        completions = after["completions"] - before["completions"]
        print(f"{loop.backend}: {completions} completions, {len(proto.chunks)} "
              f"data_received calls for {total} bytes")
        assert len(proto.chunks) == 1, [len(c) for c in proto.chunks]
        if loop.backend == "uring":
            # The multishot receive's one completion with data, and at most the two of
            # its cancel; nothing else ran.
            assert completions <= 3, completions

    run(loop, main())
