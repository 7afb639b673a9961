"""TLS through the stdlib's sslproto on ringway's transports: ``ssl=`` on servers and
connections, and ``start_tls`` upgrading a plain connection."""

import asyncio
import ssl
from test.test_asyncio import utils as test_utils

from conftest import run


def contexts():
    return test_utils.simple_server_sslcontext(), test_utils.simple_client_sslcontext()


def test_tls_echo_many_connections(loop):
    server_ctx, client_ctx = contexts()

    async def echo(reader, writer):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    async def one(port, i):
        r, w = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx,
                                             server_hostname="localhost")
        assert w.get_extra_info("sslcontext") is client_ctx
        assert w.get_extra_info("peercert") is not None
        payload = bytes([i % 256]) * (1000 * (i + 1))
        w.write(payload)
        await w.drain()
        got = await r.readexactly(len(payload))
        assert got == payload
        w.close()
        await w.wait_closed()

    async def main():
        server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        await asyncio.gather(*(one(port, i) for i in range(20)))
        server.close()
        await server.wait_closed()

    run(loop, main())


def test_start_tls_upgrades_a_plain_connection(loop):
    server_ctx, client_ctx = contexts()

    async def main():
        upgraded = loop.create_future()

        async def handler(reader, writer):
            assert await reader.readline() == b"STARTTLS\n"
            writer.write(b"GO\n")
            await writer.drain()
            await writer.start_tls(server_ctx)
            line = await reader.readline()
            writer.write(b"secret:" + line)
            await writer.drain()
            upgraded.set_result(writer.get_extra_info("sslcontext") is server_ctx)
            writer.close()

        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"STARTTLS\n")
        assert await r.readline() == b"GO\n"
        await w.start_tls(client_ctx, server_hostname="localhost")
        w.write(b"hello\n")
        assert await r.readline() == b"secret:hello\n"
        assert await upgraded
        w.close()
        server.close()
        await server.wait_closed()

    run(loop, main())


def test_failed_handshake_is_an_ssl_error_and_leaks_nothing(loop):
    server_ctx, _ = contexts()
    strict = ssl.create_default_context()  # does not trust the test certificate

    async def main():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0,
                                            ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        try:
            await asyncio.open_connection("127.0.0.1", port, ssl=strict,
                                          server_hostname="localhost")
        except ssl.SSLError as e:
            assert "CERTIFICATE_VERIFY_FAILED" in str(e)
        else:
            raise AssertionError("the handshake must fail")
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)

    loop.set_exception_handler(lambda loop, ctx: None)  # the server logs the failure
    run(loop, main())
