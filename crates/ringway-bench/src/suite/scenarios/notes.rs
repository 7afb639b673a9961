//! What the report prints beside a scenario: its one-line title and the note a reader
//! needs to read its table right.

/// The one-line titles of the scenarios.
pub const TITLES: &[(&str, &str)] = &[
    ("S1", "1 connection, keep-alive, closed loop: latency"),
    ("S2", "batches of 50 concurrent requests: time per batch"),
    (
        "S3",
        "1000 requests per iteration: req/s and time per iteration",
    ),
    ("S4", "concurrent GETs of an 11,587-byte body (nuclei)"),
    ("S5", "saturation, closed loop"),
    (
        "S6",
        "-x requests per connection x -t threads x -i iterations (Rustlet)",
    ),
    (
        "S7",
        "echo: framed random 1-100 B, fixed 64 B / 1 KiB / 16 KiB",
    ),
    ("S8", "plaintext pipelined x16"),
    (
        "S9",
        "open loop: latency at a share of S5's capacity (CO-corrected)",
    ),
    ("S10", "connection churn, client-side close"),
    ("S11", "TLS: handshakes and keep-alive throughput"),
    ("S12", "idle connections: RSS per connection, p99 impact"),
    (
        "S13",
        "hostile mix: valid load with malformed requests and slow clients",
    ),
    (
        "S14",
        "Python loops: ringway's asyncio loop vs asyncio, uvloop, rloop",
    ),
    (
        "S15",
        "Python frameworks: uvicorn on each loop, aiohttp, granian (one ASGI app)",
    ),
];

/// What a reader must know to read scenario `id` right.
pub fn note(id: &str) -> Option<&'static str> {
    Some(match id {
        "S1" => {
            "Closed-loop latency: one request waits for the previous one, so the tail here is a \
                 capacity figure; S9 is the latency claim."
        }
        "S4" => {
            "ringway serves the file with `ringway serve --static` (kept open per core, \
                 validators built once, re-checked each second, a small file's bytes kept), nginx \
                 from disk with sendfile and open_file_cache (the same 1 s); the other peers send \
                 it from memory. Multishot on/off is the floor's (ringway has no switch for it)."
        }
        "S5" => {
            "Without pipelining one client core saturates near the servers' capacity: req/s here \
                 measures the client as much as the server; server CPU per request separates them."
        }
        "S7" => "Echo servers exist for ringway, tokio, monoio and the floor only.",
        "S9" => {
            "Every peer is offered the same rates (a share of ringway/uring's S5 capacity); \
                 latency is timed from each request's intended send time. A round whose \
                 window held a host stall shows its tail but is not ranked. The capacity \
                 variant steps the rate up and reports the highest rate with p99 under 1 ms \
                 and under 10 ms."
        }
        "S11" => "TLS peers: ringway (rustls) and nginx (OpenSSL).",
        "S12" => {
            "Peers run one after the other here (10,000 idle connections to every peer at once \
                  would be 120,000 sockets); RSS per connection is the process tree's RSS growth \
                  over the idle connections."
        }
        "S14" => {
            "Python servers (crates/ringway-py/bench/servers.py), one process per loop, on the \
                  server core; the native client (`ringway load`) on the client core. req/s is \
                  messages (or requests) per second, CPU µs/req the server's CPU per message; \
                  ratios are to py-ringway. The HTTP server counts request heads and answers \
                  each with two write() calls (headers, body), without a date header. Native \
                  echo servers for the same shapes are in S7."
        }
        "S15" => {
            "One ASGI app (crates/ringway-bench/python/serve.py, no framework between it and \
                  the server) under uvicorn (httptools) on each loop, the same endpoints on \
                  aiohttp's server, and granian (one worker, one runtime thread); one process on \
                  the server core, `ringway load` on the client core; ratios are to \
                  uvicorn-ringway. The environment is made by the suite from PyPI (Python \
                  3.12) with a release build of ringway's loop."
        }
        "S13" => {
            "A peer that does not parse HTTP (the raw loops, the floor) answers malformed \
                  requests with 200: the hostile_* figures say what each did. mix-upload adds \
                  one connection that uploads 200 MB (for the round's length) to \
                  /upload-slow, which ringway serve --hello reads one chunk every 10 ms (the suite sets \
                  RINGWAY_SLOW_UPLOAD_MS=10 for this variant alone; its \
                  receive stops at its share of the pool: the others' p99 beside mix's is \
                  the figure); a peer without that route answers 404 and reads or drops the \
                  body its own way (hostile_upload_* say how much it took)."
        }
        _ => return None,
    })
}

/// The title of scenario `id`.
pub fn title(id: &str) -> &'static str {
    TITLES
        .iter()
        .find(|(s, _)| *s == id)
        .map(|(_, t)| *t)
        .unwrap_or("")
}
