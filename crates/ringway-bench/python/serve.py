"""S15's servers: one ASGI app (plaintext and JSON) under uvicorn on a chosen event loop,
the same two endpoints on aiohttp's server, and the same app under granian.

``ringway bench --scenario S15`` starts one of these per peer, pinned to the server core,
in the virtual environment the suite makes from PyPI; the client (``ringway load``)
runs on the other core. Every server answers ``GET /plaintext`` with ``Hello, World!``
(``text/plain``) and ``GET /json`` with ``{"message":"Hello, World!"}``
(``application/json``), and says nothing once it listens: the suite waits for the port.

    python serve.py --server uvicorn --loop ringway --port 8080
    python serve.py --server aiohttp --loop uvloop --port 8080
    python serve.py --server granian --loop uvloop --port 8080
"""

import argparse
import asyncio
import json
import os
import sys

PLAINTEXT = b"Hello, World!"
JSON_BODY = json.dumps({"message": "Hello, World!"}, separators=(",", ":")).encode()


async def app(scope, receive, send):
    """The ASGI app: plaintext and JSON, no framework between the server and it."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["path"] == "/json":
        body, content_type = JSON_BODY, b"application/json"
    else:
        body, content_type = PLAINTEXT, b"text/plain"
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def new_loop(name):
    """An event loop of the kind the peer measures."""
    if name == "ringway":
        import ringway

        return ringway.new_event_loop()
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    if name == "rloop":
        import rloop

        return rloop.new_event_loop()
    if name == "asyncio":
        return asyncio.SelectorEventLoop()
    raise SystemExit(f"unknown loop {name!r} (ringway, uvloop, rloop, asyncio)")


def run_uvicorn(loop_name, port):
    import uvicorn

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        loop="none",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
        backlog=4096,
    )
    server = uvicorn.Server(config)
    loop = new_loop(loop_name)
    asyncio.set_event_loop(loop)
    loop.run_until_complete(server.serve())


def aiohttp_app():
    from aiohttp import web

    async def plaintext(_request):
        return web.Response(body=PLAINTEXT, content_type="text/plain")

    async def as_json(_request):
        return web.Response(body=JSON_BODY, content_type="application/json")

    application = web.Application()
    application.router.add_get("/plaintext", plaintext)
    application.router.add_get("/json", as_json)
    return application


def run_aiohttp(loop_name, port):
    from aiohttp import web

    loop = new_loop(loop_name)
    asyncio.set_event_loop(loop)

    async def main():
        runner = web.AppRunner(aiohttp_app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096)
        await site.start()
        await asyncio.Event().wait()

    loop.run_until_complete(main())


def run_granian(loop_name, port):
    """granian's own CLI in this process (it forks its worker): one worker, one runtime
    thread, the ASGI interface."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from granian.cli import cli

    sys.argv = [
        "granian",
        "--interface",
        "asgi",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--runtime-threads",
        "1",
        "--loop",
        loop_name,
        "--no-ws",
        "--http",
        "1",
        "--log-level",
        "warning",
        "--backlog",
        "4096",
        "serve:app",
    ]
    cli()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", choices=["uvicorn", "aiohttp", "granian"], required=True)
    ap.add_argument("--loop", default="asyncio")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    {"uvicorn": run_uvicorn, "aiohttp": run_aiohttp, "granian": run_granian}[args.server](
        args.loop, args.port
    )


if __name__ == "__main__":
    main()
