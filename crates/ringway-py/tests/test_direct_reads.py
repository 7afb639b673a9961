"""Large messages: a ``data_received`` protocol that gets 64 KiB or more in one turn
moves from the pool's multishot receive to direct reads (a readiness poll, then one
``read`` into a new ``bytes`` object), and back after a read under 16 KiB. Counted with
``_ringway_stats()["direct_reads"]``; every byte is checked, in order, across both
moves, on both backends."""

import asyncio
import os
import random
import socket
import struct
import threading

from conftest import run


class Echo(asyncio.Protocol):
    def connection_made(self, tr):
        self.tr = tr

    def data_received(self, data):
        self.tr.write(data)


def _echo_client(port, messages, out):
    """Sends each message, reads its echo whole, and records it."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(20)
    try:
        for m in messages:
            s.sendall(m)
            got = bytearray()
            while len(got) < len(m):
                chunk = s.recv(1 << 20)
                assert chunk, "server closed early"
                got += chunk
            out.append(bytes(got))
    finally:
        s.close()


async def _serve_and_run(loop, protocol, messages):
    server = await loop.create_server(protocol, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    out = []
    t = threading.Thread(target=_echo_client, args=(port, messages, out))
    t.start()
    while t.is_alive():
        await asyncio.sleep(0.005)
    t.join()
    server.close()
    await server.wait_closed()
    return out


async def _accepted(loop, protocol):
    """A connected non-blocking socket pair; `protocol`'s transport on one end. Returns
    (the peer's socket, the transport, the protocol)."""
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    tr, pr = await loop.connect_accepted_socket(protocol, b)
    return a, tr, pr


def test_large_messages_are_read_directly_and_small_ones_from_the_pool(loop):
    big = [os.urandom(100 * 1024) for _ in range(20)]
    small = [os.urandom(1024) for _ in range(200)]

    async def main():
        s0 = loop._ringway_stats()["direct_reads"]
        out = await _serve_and_run(loop, Echo, big)
        s1 = loop._ringway_stats()["direct_reads"]
        out += await _serve_and_run(loop, Echo, big[:2] + small)
        s2 = loop._ringway_stats()["direct_reads"]
        return out, s1 - s0, s2 - s1

    out, big_reads, mixed_reads = run(loop, main())
    assert out == big + big[:2] + small
    print(f"{loop.backend}: {big_reads} direct reads for 20 x 100 KiB, "
          f"{mixed_reads} for 2 x 100 KiB then 200 x 1 KiB")
    # The first message (or its first turn) comes through the pool; the rest are read
    # directly, each in a read or two (a message may be read before all of it is in).
    assert 19 <= big_reads <= 2 * 20, big_reads
    # The first small message is read directly (and sends the transport back to the
    # pool); the other 199 are not.
    assert 1 <= mixed_reads <= 2 * 2 + 1, mixed_reads


def test_every_size_from_1_byte_to_1_mib_keeps_its_order(loop):
    """Sizes drawn so that the transport moves between the pool and direct reads many
    times on one connection; every echo comes back whole and in order."""
    rnd = random.Random(1729)
    sizes = [1, 2, 100, 16 * 1024 - 1, 16 * 1024, 64 * 1024 - 1, 64 * 1024,
             127 * 1024, 127 * 1024 + 1, 1 << 20]
    sizes += [rnd.choice([rnd.randint(1, 4096), rnd.randint(60_000, 300_000)])
              for _ in range(60)]
    messages = [rnd.randbytes(n) for n in sizes]

    async def main():
        s0 = loop._ringway_stats()["direct_reads"]
        out = await _serve_and_run(loop, Echo, messages)
        return out, loop._ringway_stats()["direct_reads"] - s0

    out, reads = run(loop, main(), timeout=60)
    assert [len(o) for o in out] == sizes
    assert out == messages
    assert reads > 0


def test_pause_reading_in_direct_mode_reads_nothing_until_resumed(loop):
    """A protocol that pauses after a large message: the transport reads nothing more
    (the bytes wait in the kernel) until it resumes, then everything arrives in
    order."""
    first = os.urandom(100 * 1024)
    rest = os.urandom(300 * 1024)

    class Pausing(asyncio.Protocol):
        def __init__(self):
            self.got = bytearray()
            self.calls_while_paused = 0
            self.paused = False
            self.first_done = loop.create_future()
            self.all_done = loop.create_future()

        def connection_made(self, tr):
            self.tr = tr

        def data_received(self, data):
            if self.paused:
                self.calls_while_paused += 1
            self.got += data
            if len(self.got) >= len(first) and not self.first_done.done():
                self.paused = True
                self.tr.pause_reading()
                self.first_done.set_result(None)
            if len(self.got) == len(first) + len(rest):
                self.all_done.set_result(None)

    async def main():
        a, tr, pr = await _accepted(loop, Pausing)
        await loop.sock_sendall(a, first)
        await pr.first_done
        reads = loop._ringway_stats()["direct_reads"]
        # More than the socket holds: the send waits for the reader's resume.
        sending = asyncio.ensure_future(loop.sock_sendall(a, rest))
        for _ in range(20):
            await asyncio.sleep(0.005)
        assert loop._ringway_stats()["direct_reads"] == reads, "read while paused"
        pr.paused = False
        tr.resume_reading()
        await pr.all_done
        await sending
        tr.close()
        a.close()
        return pr, loop._ringway_stats()["direct_reads"] - reads

    pr, reads_after_resume = run(loop, main())
    assert pr.calls_while_paused == 0
    assert bytes(pr.got) == first + rest
    assert reads_after_resume > 0, "resumed in direct mode"


def test_end_of_stream_after_a_large_message(loop):
    """The peer's end of stream, met by a direct read, is eof_received after every
    byte, then connection_lost(None)."""
    payload = os.urandom(200 * 1024)

    class Sink(asyncio.Protocol):
        def __init__(self):
            self.events = []
            self.got = bytearray()
            self.lost = loop.create_future()

        def data_received(self, data):
            self.got += data
            self.events.append("data")

        def eof_received(self):
            self.events.append(("eof", len(self.got)))

        def connection_lost(self, exc):
            self.lost.set_result(exc)

    async def main():
        s0 = loop._ringway_stats()["direct_reads"]
        a, tr, pr = await _accepted(loop, Sink)
        await loop.sock_sendall(a, payload)
        while len(pr.got) < 100 * 1024:
            await asyncio.sleep(0.005)
        await loop.sock_sendall(a, payload)
        a.shutdown(socket.SHUT_WR)
        exc = await pr.lost
        a.close()
        return pr, exc, loop._ringway_stats()["direct_reads"] - s0

    pr, exc, reads = run(loop, main())
    assert exc is None
    assert bytes(pr.got) == payload + payload
    assert pr.events[-1] == ("eof", 2 * len(payload))
    assert reads > 0


def test_a_buffered_protocol_set_in_direct_mode_goes_back_to_the_pool(loop):
    """set_protocol() to a BufferedProtocol after large messages: its buffer is filled
    (direct reads are for data_received protocols), nothing lost or reordered."""
    one = os.urandom(150 * 1024)
    two = os.urandom(150 * 1024)

    class Buffered(asyncio.BufferedProtocol):
        def __init__(self, have):
            self.got = bytearray(have)
            self.buf = bytearray(64 * 1024)
            self.done = loop.create_future()

        def get_buffer(self, sizehint):
            return self.buf

        def buffer_updated(self, n):
            self.got += self.buf[:n]
            if len(self.got) == len(one) + len(two):
                self.done.set_result(None)

    class First(asyncio.Protocol):
        def __init__(self):
            self.got = bytearray()
            self.first_part = loop.create_future()
            self.switched = loop.create_future()

        def connection_made(self, tr):
            self.tr = tr

        def data_received(self, data):
            self.got += data
            if len(self.got) == 100 * 1024:
                self.first_part.set_result(None)
            if len(self.got) >= len(one) and not self.switched.done():
                nxt = Buffered(self.got)
                self.tr.set_protocol(nxt)
                self.switched.set_result(nxt)

    async def main():
        s0 = loop._ringway_stats()["direct_reads"]
        a, tr, first = await _accepted(loop, First)
        # 100 KiB through the pool moves the transport to direct reads; the rest of
        # `one` is read directly, and its last read's data_received changes protocol.
        await loop.sock_sendall(a, one[: 100 * 1024])
        await first.first_part
        await loop.sock_sendall(a, one[100 * 1024:])
        nxt = await first.switched
        s1 = loop._ringway_stats()["direct_reads"]
        await loop.sock_sendall(a, two)
        await nxt.done
        tr.close()
        a.close()
        return nxt, s1 - s0, loop._ringway_stats()["direct_reads"] - s1

    nxt, before_switch, after_switch = run(loop, main())
    assert bytes(nxt.got) == one + two
    assert before_switch > 0, "the first protocol was read directly"
    # At most the one readiness report already due when the protocol changed.
    assert after_switch <= 1, after_switch


def test_a_reset_after_large_messages_is_connection_lost_with_the_error(any_loop):
    """The peer resets the connection (SO_LINGER 0) while the transport reads large
    messages directly: what arrived before the reset is delivered in order, then
    connection_lost gets a ConnectionResetError, once, as on stock asyncio."""
    loop = any_loop
    payload = os.urandom(300 * 1024)

    class Sink(asyncio.Protocol):
        def __init__(self):
            self.got = bytearray()
            self.lost = loop.create_future()

        def data_received(self, data):
            assert not self.lost.done(), "data after connection_lost"
            self.got += data

        def eof_received(self):
            raise AssertionError("a reset is not an end of stream")

        def connection_lost(self, exc):
            self.lost.set_result(exc)

    sinks = []

    async def main():
        stats = getattr(loop, "_ringway_stats", None)
        s0 = stats()["direct_reads"] if stats else 0
        server = await loop.create_server(lambda: sinks.append(Sink()) or sinks[-1],
                                          "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        c = socket.create_connection(("127.0.0.1", port))
        c.setblocking(False)
        await loop.sock_sendall(c, payload)
        while not sinks or len(sinks[0].got) < len(payload):
            await asyncio.sleep(0.005)
        # More than a turn's worth, then the reset with some of it maybe still unread.
        await loop.sock_sendall(c, payload)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        exc = await asyncio.wait_for(sinks[0].lost, 10)
        server.close()
        await server.wait_closed()
        reads = stats()["direct_reads"] - s0 if stats else None
        return exc, reads

    exc, reads = run(loop, main())
    assert isinstance(exc, ConnectionResetError), repr(exc)
    pr = sinks[0]
    sent = payload + payload
    assert len(pr.got) >= len(payload)
    assert bytes(pr.got) == sent[:len(pr.got)], "bytes lost or reordered before the reset"
    if reads is not None:
        assert reads > 0, "the large messages were read directly"


def test_close_or_abort_from_data_received_in_direct_mode(loop):
    """close() and abort() from data_received while the transport reads directly (its
    readiness poll armed again before the callback): connection_lost once, nothing
    delivered after it, and the loop's teardown finds no operation left behind."""
    payload = os.urandom(200 * 1024)

    class Closer(asyncio.Protocol):
        how = None

        def __init__(self):
            self.got = 0
            self.calls_after = 0
            self.reads_at_start = loop._ringway_stats()["direct_reads"]
            self.lost = loop.create_future()

        def connection_made(self, tr):
            self.tr = tr

        def data_received(self, data):
            if self.tr.is_closing():
                self.calls_after += 1
            self.got += len(data)
            # Once a direct read has delivered: the poll is armed again by then.
            direct = loop._ringway_stats()["direct_reads"] > self.reads_at_start
            if direct and not self.tr.is_closing():
                getattr(self.tr, self.how)()

        def connection_lost(self, exc):
            self.lost.set_result(exc)

    async def one(how):
        Closer.how = how
        made = []
        server = await loop.create_server(lambda: made.append(Closer()) or made[-1],
                                          "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        c = socket.create_connection(("127.0.0.1", port))
        c.setblocking(False)
        s0 = loop._ringway_stats()["direct_reads"]
        try:
            for _ in range(20):
                await loop.sock_sendall(c, payload)
                if made and made[0].lost.done():
                    break
        except (ConnectionResetError, BrokenPipeError):
            pass  # the server went first: what abort() does
        exc = await asyncio.wait_for(made[0].lost, 10)
        c.close()
        server.close()
        await server.wait_closed()
        return exc, made[0], loop._ringway_stats()["direct_reads"] - s0

    for how in ("close", "abort"):
        exc, pr, reads = run(loop, one(how))
        assert exc is None, (how, exc)
        assert pr.calls_after == 0, (how, pr.calls_after)
        assert reads > 0, how
