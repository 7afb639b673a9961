"""Real frameworks on ringway's loop, on both backends, each response checked byte for
byte against what the same code answers on stock asyncio's loop (the reference, run
in the same test): uvicorn serving a Starlette app (the CLI with ``--loop
ringway:new_event_loop``, and ``uvicorn.Server`` in code), aiohttp's server and
client, httpx's async client, websockets' server and client.

The packages come from PyPI into the test environments (``scripts/test-python``)."""

import asyncio
import os
import signal
import socket
import subprocess
import sys

import aiohttp
import httpx
import uvicorn
import websockets
from aiohttp import web
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import serve as ws_serve

import asgi_app
from conftest import run

HERE = os.path.dirname(os.path.abspath(__file__))
BLOB = os.urandom(300_000)  # past the write-buffer high-water mark: flow control
HELLO = asgi_app.HELLO


def listening_socket():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(100)
    sock.setblocking(False)
    return sock


def http_requests():
    """Requests over one keep-alive connection, and the body each answer must carry."""
    return [
        (b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", HELLO),
        (b"GET /json HTTP/1.1\r\nHost: t\r\n\r\n", None),
        (b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(BLOB) + BLOB,
         BLOB),
        (b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ]


def split_response(data):
    """(head, body, rest) of the first response in ``data``, or None if incomplete."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = data[:end + 4]
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if len(data) < end + 4 + length:
        return None
    return head, data[end + 4:end + 4 + length], data[end + 4 + length:]


def mask_date(head):
    """aiohttp always sends Date: its value is the one byte range not compared."""
    lines = [b"date: <masked>" if line.lower().startswith(b"date:") else line
             for line in head.split(b"\r\n")]
    return b"\r\n".join(lines)


async def raw_exchange(port, requests):
    """Sends each request on one connection and returns each raw response (head with
    Date masked, body), with asyncio's streams on the running loop."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    out = []
    data = b""
    for request, want_body in requests:
        writer.write(request)
        while (parts := split_response(data)) is None:
            chunk = await reader.read(65536)
            assert chunk, f"connection closed after {len(data)} bytes"
            data += chunk
        head, body, data = parts
        if want_body is not None:
            assert body == want_body
        out.append((mask_date(head), body))
    writer.close()
    await writer.wait_closed()
    return out


def blocking_exchange(port, requests):
    """``raw_exchange`` with a blocking socket (for a server in another process)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    out = []
    data = b""
    try:
        for request, want_body in requests:
            s.sendall(request)
            while (parts := split_response(data)) is None:
                chunk = s.recv(65536)
                assert chunk, f"connection closed after {len(data)} bytes"
                data += chunk
            head, body, data = parts
            if want_body is not None:
                assert body == want_body
            out.append((mask_date(head), body))
    finally:
        s.close()
    return out


def on_reference_loop(coro_fn):
    """Runs ``coro_fn()`` on a fresh stock asyncio loop (the reference answers)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(asyncio.wait_for(coro_fn(), 60))
    finally:
        loop.close()


# -- uvicorn --------------------------------------------------------------------------


def uvicorn_cli(loop_arg, backend):
    """Serves asgi_app with ``python -m uvicorn --loop LOOP_ARG`` on a socket passed by
    fd; returns the raw answers and what /loop said."""
    sock = listening_socket()
    port = sock.getsockname()[1]
    env = dict(os.environ, RINGWAY_BACKEND=backend)
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "asgi_app:app", "--fd", str(sock.fileno()),
         "--loop", loop_arg, "--http", "h11", "--ws", "auto", "--lifespan", "off",
         "--no-server-header", "--no-date-header", "--log-level", "warning"],
        cwd=HERE, env=env, pass_fds=[sock.fileno()])
    sock.close()
    try:
        answers = blocking_exchange(port, http_requests())
        which = blocking_exchange(port, [(b"GET /loop HTTP/1.1\r\nHost: t\r\n\r\n", None)])
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it caught.
        assert proc.wait(30) in (0, -signal.SIGTERM)
    return answers, which[0][1]


def test_uvicorn_cli_with_ringways_loop_factory(backend):
    reference, ref_loop = uvicorn_cli("asyncio", "auto")
    answers, which = uvicorn_cli("ringway:new_event_loop", backend)
    assert ref_loop.startswith(b"asyncio.")
    assert which == f"ringway._loop.Loop {backend}".encode()
    assert answers == reference
    assert answers[0] == (b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\n"
                          b"content-type: text/plain; charset=utf-8\r\n\r\n", HELLO)


async def uvicorn_in_code():
    """uvicorn.Server on the running loop; raw answers, httpx's, a WebSocket echo."""
    sock = listening_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(asgi_app.app, http="h11", ws="auto", lifespan="off",
                            server_header=False, date_header=False, log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.005)
    try:
        raw = await raw_exchange(port, http_requests())
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            r1 = await client.get("/json")
            r2 = await client.post("/echo", content=BLOB)
            via_httpx = [(r.status_code, r.headers.raw, r.content) for r in (r1, r2)]
        assert r2.content == BLOB
        async with ws_connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
            echoed = []
            for msg in ("text", BLOB[:70_000], "é" * 1000, b""):
                await ws.send(msg)
                echoed.append(await ws.recv())
    finally:
        server.should_exit = True
        await serving
        sock.close()
    return raw, via_httpx, echoed


def test_uvicorn_server_in_code_with_httpx_and_websockets(loop):
    reference = on_reference_loop(uvicorn_in_code)
    got = run(loop, uvicorn_in_code(), timeout=60)
    assert got == reference
    assert got[2] == ["text", BLOB[:70_000], "é" * 1000, b""]


# -- aiohttp --------------------------------------------------------------------------


async def aiohttp_round_trip():
    """aiohttp's server and its client (HTTP and WebSocket) on the running loop."""
    async def hello(request):
        return web.Response(body=HELLO, content_type="text/plain")

    async def json_endpoint(request):
        return web.json_response({"message": "Hello, World!", "n": [1, 2, 3]})

    async def echo(request):
        return web.Response(body=await request.read(),
                            content_type="application/octet-stream")

    async def ws_echo(request):
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                await ws.send_str(msg.data)
            elif msg.type == aiohttp.WSMsgType.BINARY:
                await ws.send_bytes(msg.data)
        return ws

    app = web.Application(client_max_size=2 * len(BLOB))
    app.add_routes([web.get("/", hello), web.get("/json", json_endpoint),
                    web.post("/echo", echo), web.get("/ws", ws_echo)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = listening_socket()
    port = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    try:
        raw = await raw_exchange(port, http_requests())
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json") as r:
                client_json = (r.status, await r.read())
            async with session.post(f"http://127.0.0.1:{port}/echo", data=BLOB) as r:
                assert await r.read() == BLOB
            async with session.ws_connect(f"http://127.0.0.1:{port}/ws",
                                          max_msg_size=0) as ws:
                await ws.send_str("text")
                await ws.send_bytes(BLOB)
                echoed = [(await ws.receive()).data, (await ws.receive()).data]
        async with httpx.AsyncClient() as client:
            r = await client.post(f"http://127.0.0.1:{port}/echo", content=BLOB)
            via_httpx = (r.status_code, r.content == BLOB)
    finally:
        await runner.cleanup()
    # The Server header names the Python version; the reference runs the same one.
    return raw, client_json, echoed, via_httpx


def test_aiohttp_server_and_client(loop):
    reference = on_reference_loop(aiohttp_round_trip)
    got = run(loop, aiohttp_round_trip(), timeout=60)
    assert got == reference
    assert got[0][0][1] == HELLO and got[2] == ["text", BLOB] and got[3] == (200, True)


# -- websockets -----------------------------------------------------------------------


async def websockets_round_trip():
    async def echo(ws):
        async for message in ws:
            await ws.send(message)

    sock = listening_socket()
    port = sock.getsockname()[1]
    messages = ["hello", b"\x00\x01\x02", BLOB, "x" * 200_000, b""]
    async with ws_serve(echo, sock=sock, max_size=None, compression=None):
        async with ws_connect(f"ws://127.0.0.1:{port}", max_size=None,
                              compression=None) as ws:
            got = []
            for m in messages:
                await ws.send(m)
                got.append(await ws.recv())
            # Many in flight at once: sends queue behind each other.
            for i in range(200):
                await ws.send(b"%d" % i)
            got += [await ws.recv() for _ in range(200)]
    return got


def test_websockets_server_and_client(loop):
    reference = on_reference_loop(websockets_round_trip)
    got = run(loop, websockets_round_trip(), timeout=60)
    assert got == reference
    assert got[:5] == ["hello", b"\x00\x01\x02", BLOB, "x" * 200_000, b""]
    assert got[5:] == [b"%d" % i for i in range(200)]
    assert websockets.__version__


def test_the_benchmarks_asgi_app_under_uvicorn(backend):
    """bench/asgi_app.py (S15's app) answers the same bytes on ringway's loop as on
    asyncio's."""
    sock = listening_socket()
    port = sock.getsockname()[1]
    bench = os.path.join(HERE, "..", "bench")
    requests = [(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", HELLO),
                (b"GET /json HTTP/1.1\r\nHost: t\r\n\r\n", b'{"message":"Hello, World!"}'),
                (b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", b"not found")]
    answers = {}
    for loop_arg in ("asyncio", "ringway:new_event_loop"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "asgi_app:app", "--app-dir", bench,
             "--fd", str(sock.fileno()), "--loop", loop_arg, "--http", "h11",
             "--lifespan", "on", "--no-server-header", "--no-date-header",
             "--log-level", "warning"],
            cwd=bench, env=dict(os.environ, RINGWAY_BACKEND=backend),
            pass_fds=[sock.fileno()])
        try:
            answers[loop_arg] = blocking_exchange(port, requests)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) in (0, -signal.SIGTERM)
    sock.close()
    assert answers["ringway:new_event_loop"] == answers["asyncio"]
