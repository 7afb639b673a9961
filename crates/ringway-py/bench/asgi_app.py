"""The ASGI app of the Python-framework benchmark (S15): plaintext and JSON, as the
TechEmpower tests answer them, in plain ASGI (no framework, so the server and the loop
are what is measured). Serve it with any ASGI server, e.g.

    uvicorn asgi_app:app --loop ringway:new_event_loop     # or --loop uvloop / asyncio
    granian --interface asgi asgi_app:app

``GET /`` (or ``/plaintext``) answers ``Hello, World!`` as text/plain; ``GET /json``
answers ``{"message":"Hello, World!"}``; anything else 404."""

import json

PLAIN = b"Hello, World!"
PLAIN_HEADERS = [(b"content-type", b"text/plain"), (b"content-length", b"13")]
JSON_HEADERS = [(b"content-type", b"application/json")]
NOT_FOUND = [(b"content-type", b"text/plain"), (b"content-length", b"9")]


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path in ("/", "/plaintext"):
        status, headers, body = 200, PLAIN_HEADERS, PLAIN
    elif path == "/json":
        body = json.dumps({"message": "Hello, World!"}, separators=(",", ":")).encode()
        status = 200
        headers = JSON_HEADERS + [(b"content-length", str(len(body)).encode())]
    else:
        status, headers, body = 404, NOT_FOUND, b"not found"
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
