"""asyncpg (its protocol a Cython asyncio.Protocol, as in the fastest database drivers)
against a small PostgreSQL wire-protocol server written here, with no database: the
startup, the simple query and the extended protocol (Parse, Describe, Bind, Execute,
Sync) that ``fetch`` uses, answered with rows the test can predict. Both sides run on
the loop under test; every result is compared with the same run on stock asyncio.

The server answers any prepared statement as "SELECT i * 2 FROM generate_series(1,
$1)": one int4 parameter, one int4 column, $1 rows (5,000 rows make a 75 KB answer
that arrives in many receives)."""

import asyncio
import struct

import asyncpg

from conftest import run

INT4 = 23


def message(kind, payload=b""):
    return kind + struct.pack("!I", len(payload) + 4) + payload


def cstring(b):
    return b + b"\x00"


READY = message(b"Z", b"I")


class FakePostgres(asyncio.Protocol):
    """Just enough of a PostgreSQL server for asyncpg's connect, execute and fetch."""

    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""
        self.started = False
        self.param = 0
        self.binary = True

    def data_received(self, data):
        self.buf += data
        while True:
            if not self.started:
                if len(self.buf) < 4:
                    return
                (n,) = struct.unpack("!I", self.buf[:4])
                if len(self.buf) < n:
                    return
                self.buf = self.buf[n:]
                self.started = True
                self.startup()
                continue
            if len(self.buf) < 5:
                return
            kind = self.buf[:1]
            (n,) = struct.unpack("!I", self.buf[1:5])
            if len(self.buf) < 1 + n:
                return
            body, self.buf = self.buf[5:1 + n], self.buf[1 + n:]
            self.handle(kind, body)

    def startup(self):
        out = [message(b"R", struct.pack("!I", 0))]
        for k, v in [(b"server_version", b"16.0"), (b"client_encoding", b"UTF8"),
                     (b"server_encoding", b"UTF8"), (b"DateStyle", b"ISO, MDY"),
                     (b"integer_datetimes", b"on"), (b"TimeZone", b"UTC"),
                     (b"standard_conforming_strings", b"on")]:
            out.append(message(b"S", cstring(k) + cstring(v)))
        out.append(message(b"K", struct.pack("!II", 4242, 7)))
        out.append(READY)
        self.transport.write(b"".join(out))

    def handle(self, kind, body):
        w = self.transport.write
        if kind == b"Q":  # simple query: no rows
            w(message(b"C", cstring(b"SELECT 1")) + READY)
        elif kind == b"P":
            w(message(b"1"))
        elif kind == b"D":
            if body[:1] == b"S":
                w(message(b"t", struct.pack("!HI", 1, INT4)))
            field = cstring(b"n") + struct.pack("!IhIhih", 0, 0, INT4, 4, -1, 0)
            w(message(b"T", struct.pack("!H", 1) + field))
        elif kind == b"B":
            self.bind(body)
            w(message(b"2"))
        elif kind == b"E":
            rows = []
            for i in range(1, self.param + 1):
                v = struct.pack("!i", i * 2) if self.binary else str(i * 2).encode()
                rows.append(message(b"D", struct.pack("!HI", 1, len(v)) + v))
            rows.append(message(b"C", cstring(b"SELECT %d" % self.param)))
            w(b"".join(rows))
        elif kind == b"S":
            w(READY)
        elif kind == b"C":
            w(message(b"3"))
        elif kind == b"X":
            self.transport.close()

    def bind(self, body):
        _portal, _, rest = body.partition(b"\x00")
        _stmt, _, rest = rest.partition(b"\x00")
        (nfmt,) = struct.unpack("!H", rest[:2])
        fmts = struct.unpack("!%dH" % nfmt, rest[2:2 + 2 * nfmt])
        rest = rest[2 + 2 * nfmt:]
        (nparams,) = struct.unpack("!H", rest[:2])
        (length,) = struct.unpack("!i", rest[2:6])
        value = rest[6:6 + length]
        binary_param = (fmts[0] if fmts else 0) == 1
        self.param = struct.unpack("!i", value)[0] if binary_param else int(value)
        rest = rest[6 + length:]
        (nres,) = struct.unpack("!H", rest[:2])
        res = struct.unpack("!%dH" % nres, rest[2:2 + 2 * nres])
        self.binary = bool(res) and res[0] == 1
        assert nparams == 1


async def session():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(FakePostgres, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        conn = await asyncpg.connect(host="127.0.0.1", port=port, user="u",
                                     database="d", ssl=False)
        try:
            status = await conn.execute("SELECT 1")
            small = [r["n"] for r in await conn.fetch("SELECT n", 3)]
            big = await conn.fetch("SELECT n", 5000)
            one = await conn.fetchval("SELECT n", 1)
            # Several queries in flight on one connection, queued by asyncpg.
            many = await asyncio.gather(*(conn.fetchval("SELECT n", 1) for _ in range(5)),
                                        return_exceptions=True)
        finally:
            await conn.close()
    finally:
        server.close()
        await server.wait_closed()
    return status, small, [r["n"] for r in big], one, [type(m).__name__ for m in many]


def test_asyncpg_against_a_wire_protocol_server(loop):
    reference = asyncio.new_event_loop()
    try:
        want = reference.run_until_complete(asyncio.wait_for(session(), 30))
    finally:
        reference.close()
    got = run(loop, session())
    assert got == want
    assert got[:4] == ("SELECT 1", [2, 4, 6], [2 * i for i in range(1, 5001)], 2)
