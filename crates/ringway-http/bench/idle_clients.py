#!/usr/bin/env python3
"""Opens N keep-alive connections to a server, makes one request on each, reads its whole
response, and keeps every connection open (idle) until told to stop on stdin.

Usage: idle_clients.py HOST PORT N      prints 'ready N' once all N are idle, then waits
for a line on stdin, then closes them all and prints 'closed'.
"""
import selectors
import socket
import sys

REQ = b"GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n"


def response_complete(buf: bytes) -> bool:
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return False
    length = 0
    for line in buf[:head_end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return len(buf) >= head_end + 4 + length


def main() -> None:
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sel = selectors.DefaultSelector()
    socks = []
    pending = {}
    # Connect and send in waves, so the accept backlog never overflows.
    wave = 500
    for start in range(0, n, wave):
        for _ in range(min(wave, n - start)):
            s = socket.create_connection((host, port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(REQ)
            s.setblocking(False)
            socks.append(s)
            pending[s.fileno()] = b""
            sel.register(s, selectors.EVENT_READ)
        while pending:
            for key, _ in sel.select(timeout=30):
                s = key.fileobj
                data = s.recv(65536)
                if not data:
                    sys.exit(f"connection closed before its response ({len(pending)} pending)")
                buf = pending[s.fileno()] + data
                if response_complete(buf):
                    if not buf.startswith(b"HTTP/1.1 200"):
                        sys.exit(f"unexpected response: {buf[:60]!r}")
                    del pending[s.fileno()]
                    sel.unregister(s)
                else:
                    pending[s.fileno()] = buf
    print(f"ready {len(socks)}", flush=True)
    sys.stdin.readline()
    for s in socks:
        s.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
