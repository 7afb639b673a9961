//! Every variant of S1–S15, in scenario order: the concrete loads of the scenarios of
//! `docs/benchmarks.md`.

use crate::peers::canned::App;
use crate::suite::registry::spec::{Endpoint, PyServer, Service};
use crate::suite::scenarios::shape::Shape;
use crate::suite::scenarios::variant::{Chart, Variant};

/// The offered rates of S9, in percent of the capacity.
pub const OPEN_LOOP_PERCENTS: &[u32] = &[25, 50, 75, 90, 100, 110];
/// The S9 rates of the default run.
pub const OPEN_LOOP_DEFAULT: &[u32] = &[50, 90];

fn v(
    scenario: &'static str,
    name: &str,
    title: &str,
    service: Service,
    shape: Shape,
    default: bool,
) -> Variant {
    let chart = match shape {
        Shape::Open { .. } | Shape::Capacity { .. } => Chart::OpenLoop,
        Shape::Rate { .. } => Chart::LatencyCurve,
        _ if scenario == "S1" => Chart::LatencyCurve,
        _ => Chart::Throughput,
    };
    Variant {
        scenario,
        name: name.to_string(),
        title: title.to_string(),
        service,
        shape,
        default,
        chart,
    }
}

/// Every variant, in scenario order.
pub fn catalogue() -> Vec<Variant> {
    let mut all = seed_shapes();
    all.extend(saturation());
    all.extend(echo_and_pipelined());
    all.extend(open_loop());
    all.extend(beyond_the_seeds());
    all.extend(python_variants());
    all.extend(python_frameworks());
    all
}

/// S1–S4: the first write-ups' shapes (one request, batches, iterations, the nuclei body).
fn seed_shapes() -> Vec<Variant> {
    let hello = Service::Http(App::Hello);
    let body = Service::Http(App::Body);
    let mut all = vec![
        v(
            "S1",
            "c1",
            "1 connection, one request at a time",
            hello,
            Shape::Closed {
                conns: 1,
                pipeline: 1,
            },
            true,
        ),
        v(
            "S2",
            "b50",
            "batches of 50, persistent connections",
            hello,
            Shape::Batch {
                size: 50,
                fresh: false,
            },
            true,
        ),
        v(
            "S2",
            "b50-fresh",
            "batches of 50, a fresh connection per request",
            hello,
            Shape::Batch {
                size: 50,
                fresh: true,
            },
            false,
        ),
        v(
            "S3",
            "n1000",
            "1000 requests per iteration over 50 connections",
            hello,
            Shape::Iterations {
                conns: 50,
                per_iteration: 1000,
            },
            true,
        ),
    ];
    for conns in [1, 10, 25] {
        all.push(v(
            "S4",
            &format!("c{conns}"),
            &format!("{conns} concurrent GETs of the body, keep-alive"),
            body,
            Shape::Closed { conns, pipeline: 1 },
            conns == 10,
        ));
        all.push(v(
            "S4",
            &format!("c{conns}-newconn"),
            &format!("{conns} concurrent GETs of the body, a new connection per GET"),
            body,
            Shape::Churn { conns, per_conn: 1 },
            false,
        ));
    }
    all
}

/// S5 and S6: saturation at 50 and 1000 connections, and the Rustlet shape.
fn saturation() -> Vec<Variant> {
    let hello = Service::Http(App::Hello);
    vec![
        v(
            "S5",
            "c50",
            "50 connections",
            hello,
            Shape::Closed {
                conns: 50,
                pipeline: 1,
            },
            true,
        ),
        v(
            "S5",
            "c1000",
            "1000 connections",
            hello,
            Shape::Closed {
                conns: 1000,
                pipeline: 1,
            },
            false,
        ),
        v(
            "S6",
            "x100-c10-t2",
            "-x 100 -c 10 -t 2, iterations of 1000",
            hello,
            Shape::Rustlet {
                per_conn: 100,
                conns: 10,
                threads: 2,
            },
            true,
        ),
    ]
}

/// S7 and S8: echo of every size, and plaintext pipelined ×16.
fn echo_and_pipelined() -> Vec<Variant> {
    let hello = Service::Http(App::Hello);
    vec![
        v(
            "S7",
            "64B",
            "fixed 64 B echo, 50 connections",
            Service::Echo,
            Shape::Echo {
                conns: 50,
                size: 64,
            },
            true,
        ),
        v(
            "S7",
            "1KiB",
            "fixed 1 KiB echo, 10 connections",
            Service::Echo,
            Shape::Echo {
                conns: 10,
                size: 1024,
            },
            false,
        ),
        v(
            "S7",
            "16KiB",
            "fixed 16 KiB echo, 10 connections",
            Service::Echo,
            Shape::Echo {
                conns: 10,
                size: 16384,
            },
            true,
        ),
        v(
            "S7",
            "framed",
            "framed random 1-100 B echo, 50 connections",
            Service::Echo,
            Shape::EchoFramed { conns: 50 },
            false,
        ),
        v(
            "S8",
            "p16",
            "pipelined x16, 50 connections",
            hello,
            Shape::Closed {
                conns: 50,
                pipeline: 16,
            },
            true,
        ),
    ]
}

/// S9: the open loop at each offered rate.
fn open_loop() -> Vec<Variant> {
    let hello = Service::Http(App::Hello);
    let capacity = v(
        "S9",
        "capacity",
        "capacity at p99 under 1 ms and under 10 ms: the open-loop rate stepped up, 50 connections",
        hello,
        Shape::Capacity { conns: 50 },
        true,
    );
    let mut rates: Vec<Variant> = OPEN_LOOP_PERCENTS
        .iter()
        .map(|&p| {
            v(
                "S9",
                &format!("{p}%"),
                &format!("open loop at {p}% of capacity, 50 connections"),
                hello,
                Shape::Open {
                    conns: 50,
                    percent: p,
                },
                OPEN_LOOP_DEFAULT.contains(&p),
            )
        })
        .collect();
    rates.push(capacity);
    rates
}

/// S10–S13: what the seeds missed (churn, TLS, idle connections, a hostile mix).
fn beyond_the_seeds() -> Vec<Variant> {
    let hello = Service::Http(App::Hello);
    vec![
        v(
            "S10",
            "x1",
            "1 request per connection, 10 at a time",
            hello,
            Shape::Churn {
                conns: 10,
                per_conn: 1,
            },
            true,
        ),
        v(
            "S10",
            "x10",
            "10 requests per connection, 10 at a time",
            hello,
            Shape::Churn {
                conns: 10,
                per_conn: 10,
            },
            false,
        ),
        v(
            "S11",
            "handshakes",
            "TLS, a new connection (full handshake) per request, 10 at a time",
            Service::Tls,
            Shape::Churn {
                conns: 10,
                per_conn: 1,
            },
            false,
        ),
        v(
            "S11",
            "keepalive",
            "TLS keep-alive, 50 connections",
            Service::Tls,
            Shape::Closed {
                conns: 50,
                pipeline: 1,
            },
            false,
        ),
        v(
            "S12",
            "10k-idle",
            "10,000 idle keep-alive connections + closed loop on 50",
            hello,
            Shape::Idle {
                idle: 10_000,
                conns: 50,
            },
            false,
        ),
        v(
            "S13",
            "mix",
            "closed loop on 50 + malformed requests + slow clients",
            hello,
            Shape::Hostile {
                conns: 50,
                upload_mb: 0,
            },
            false,
        ),
        v(
            "S13",
            "mix-upload",
            "S13 mix + one connection uploading 200 MB to a slow reader",
            hello,
            Shape::Hostile {
                conns: 50,
                upload_mb: 200,
            },
            false,
        ),
    ]
}

/// S14: the Python loops. The default four are the (Protocol echo of 64 B and
/// 1 KiB, streams echo, the two-write HTTP server); the others widen them (sizes,
/// connection counts, BufferedProtocol) under `--full` or by name.
fn python_variants() -> Vec<Variant> {
    let mut all = python_defaults();
    all.extend(python_wider());
    all
}

/// An S14 echo variant.
fn py_echo(
    name: &str,
    title: &str,
    server: PyServer,
    conns: usize,
    size: usize,
    default: bool,
) -> Variant {
    v(
        "S14",
        name,
        title,
        Service::Python(server),
        Shape::Echo { conns, size },
        default,
    )
}

/// An S14 variant of the two-write HTTP server.
fn py_http(name: &str, title: &str, conns: usize, default: bool) -> Variant {
    v(
        "S14",
        name,
        title,
        Service::Python(PyServer::TwoWriteHttp),
        Shape::Closed { conns, pipeline: 1 },
        default,
    )
}

/// The four S14 variants of `--scenario S14`.
fn python_defaults() -> Vec<Variant> {
    vec![
        py_echo(
            "protocol-64B",
            "Protocol echo, 64 B, 10 connections",
            PyServer::Protocol,
            10,
            64,
            true,
        ),
        py_echo(
            "protocol-1KiB",
            "Protocol echo, 1 KiB, 10 connections",
            PyServer::Protocol,
            10,
            1024,
            true,
        ),
        py_echo(
            "streams-1KiB",
            "streams echo (start_server, read/write/drain), 1 KiB, 10 connections",
            PyServer::Streams,
            10,
            1024,
            true,
        ),
        py_http(
            "http-2writes",
            "HTTP answered with two write() calls, 10 connections",
            10,
            true,
        ),
    ]
}

/// The S14 variants of `--full` or by name.
fn python_wider() -> Vec<Variant> {
    vec![
        py_echo(
            "buffered-1KiB",
            "BufferedProtocol echo, 1 KiB, 10 connections",
            PyServer::Buffered,
            10,
            1024,
            false,
        ),
        py_echo(
            "protocol-1KiB-c1",
            "Protocol echo, 1 KiB, 1 connection",
            PyServer::Protocol,
            1,
            1024,
            false,
        ),
        py_echo(
            "protocol-1KiB-c100",
            "Protocol echo, 1 KiB, 100 connections",
            PyServer::Protocol,
            100,
            1024,
            false,
        ),
        py_echo(
            "protocol-100KiB",
            "Protocol echo, 100 KiB, 10 connections",
            PyServer::Protocol,
            10,
            100 * 1024,
            false,
        ),
        // The same message on one connection: no turn holds more than one message, so
        // it shows what the ring's batching costs at ten (docs/measurements.md).
        py_echo(
            "protocol-100KiB-c1",
            "Protocol echo, 100 KiB, 1 connection",
            PyServer::Protocol,
            1,
            100 * 1024,
            false,
        ),
        py_http(
            "http-2writes-c50",
            "HTTP answered with two write() calls, 50 connections",
            50,
            false,
        ),
    ]
}

/// S15's offered rate for the latency figures: one every Python server keeps up with.
pub const S15_RATE: u32 = 4_000;

/// S15: the Python frameworks on one core, closed loop at 50 connections on each
/// endpoint (CPU per request, req/s), and the plaintext endpoint in an open loop at
/// [`S15_RATE`] (p50 and p99).
fn python_frameworks() -> Vec<Variant> {
    let plain = Service::Asgi(Endpoint::Plaintext);
    vec![
        v(
            "S15",
            "plaintext",
            "ASGI plaintext, 50 connections, closed loop",
            plain,
            Shape::Closed {
                conns: 50,
                pipeline: 1,
            },
            true,
        ),
        v(
            "S15",
            "json",
            "ASGI JSON, 50 connections, closed loop",
            Service::Asgi(Endpoint::Json),
            Shape::Closed {
                conns: 50,
                pipeline: 1,
            },
            true,
        ),
        v(
            "S15",
            "plaintext-4k",
            "ASGI plaintext, open loop at 4,000 req/s, 50 connections: latency",
            plain,
            Shape::Rate {
                conns: 50,
                rps: S15_RATE,
            },
            true,
        ),
    ]
}
