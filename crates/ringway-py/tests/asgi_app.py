"""The Starlette app the framework tests serve through uvicorn: plaintext, JSON, an
echo of the request body, which loop serves it, and a WebSocket echo."""

import asyncio

from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute

HELLO = b"Hello, World!"


async def plaintext(request):
    return PlainTextResponse(HELLO)


async def json_endpoint(request):
    return JSONResponse({"message": "Hello, World!", "n": [1, 2, 3]})


async def echo(request):
    return Response(await request.body(), media_type="application/octet-stream")


async def which_loop(request):
    loop = asyncio.get_running_loop()
    return PlainTextResponse(
        f"{type(loop).__module__}.{type(loop).__name__} {getattr(loop, 'backend', '-')}")


async def ws_echo(websocket):
    await websocket.accept()
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("bytes") is not None:
            await websocket.send_bytes(message["bytes"])
        else:
            await websocket.send_text(message["text"])


app = Starlette(routes=[
    Route("/", plaintext),
    Route("/json", json_endpoint),
    Route("/echo", echo, methods=["POST"]),
    Route("/loop", which_loop),
    WebSocketRoute("/ws", ws_echo),
])
