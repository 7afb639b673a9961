"""Parses every response stream the conformance suite captured with h11 (a strict,
independent HTTP/1.1 implementation) acting as the client. Exits non-zero on the first
stream h11 refuses, or that holds more than one response per request."""
import json
import sys

import h11


def check(methods, raw, closed):
    c = h11.Connection(our_role=h11.CLIENT)
    c.receive_data(raw)
    if closed:
        c.receive_data(b"")
    seen = 0
    for method in methods:
        c.send(h11.Request(method=method, target="/", headers=[("Host", "x")]))
        c.send(h11.EndOfMessage())
        while True:
            ev = c.next_event()
            if ev is h11.NEED_DATA:
                raise Exception(f"incomplete response #{seen}")
            if isinstance(ev, h11.ConnectionClosed):
                raise Exception(f"closed before response #{seen}")
            if isinstance(ev, h11.EndOfMessage):
                break
        seen += 1
        if c.our_state is h11.DONE and c.their_state is h11.DONE:
            c.start_next_cycle()
        else:
            break
    if seen != len(methods):
        raise Exception(f"parsed {seen} responses, expected {len(methods)}")
    # Anything after the last expected response is a response to no request (a desync).
    extra, _ = c.trailing_data
    if extra:
        raise Exception(f"{len(extra)} bytes after response #{seen - 1}: {extra[:120]!r}")
    return seen


def main():
    streams = json.load(open(sys.argv[1]))
    total = 0
    for i, s in enumerate(streams):
        raw = bytes.fromhex(s["raw"])
        try:
            total += check(s["methods"], raw, s["closed"])
        except Exception as e:  # noqa: BLE001
            print(f"stream {i}: {type(e).__name__}: {e}\n{raw[:600]!r}")
            sys.exit(1)
    print(f"h11 parsed {total} responses in {len(streams)} streams")


main()
