//! The scenarios S1–S14 of benchmarks.md as concrete loads.
//!
//! Each scenario has one or more *variants* (S5 at 50 and at 1000 connections, S9 at
//! each offered rate); the default run takes the variant marked `default` of each of
//! S1–S9 (one of each seed's shape), `--full` takes them all. A variant names the
//! service it needs from a peer and the shape of the load `ringway load` puts on it.

use crate::canned::App;
use crate::suite::peers::Service;
use crate::suite::python::PyServer;

/// The shape of the load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Closed loop: `conns` connections, `pipeline` requests in flight on each.
    Closed {
        /// Connections.
        conns: usize,
        /// Pipeline depth (1: one request at a time).
        pipeline: usize,
    },
    /// Batches of `size` concurrent requests, timed per batch; on fresh connections
    /// (one request each) when `fresh`.
    Batch {
        /// Requests per batch (one per connection).
        size: usize,
        /// New connections for every request.
        fresh: bool,
    },
    /// Iterations of `per_iteration` requests over `conns` connections, timed each.
    Iterations {
        /// Connections.
        conns: usize,
        /// Requests per iteration.
        per_iteration: u64,
    },
    /// The Rustlet shape: `per_conn` requests per connection (`-x`), `conns`
    /// connections over `threads` client threads, repeated (`-i`).
    Rustlet {
        /// Requests per connection.
        per_conn: u64,
        /// Connections.
        conns: usize,
        /// Client threads.
        threads: usize,
    },
    /// Connection churn: `per_conn` requests per connection, then the client closes it.
    Churn {
        /// Connections at a time.
        conns: usize,
        /// Requests per connection.
        per_conn: u64,
    },
    /// Open loop at `percent` of the S5 capacity, latency from the intended send time.
    Open {
        /// Connections.
        conns: usize,
        /// Offered rate, in percent of the capacity.
        percent: u32,
    },
    /// Fixed-size echo, every byte verified.
    Echo {
        /// Connections.
        conns: usize,
        /// Message size.
        size: usize,
    },
    /// Framed echo, random 1–100-byte frames, verified.
    EchoFramed {
        /// Connections.
        conns: usize,
    },
    /// `idle` connections held open (each after one request) while `conns` run a
    /// closed loop; reports RSS per connection and the p99 with and without them.
    Idle {
        /// Idle connections.
        idle: usize,
        /// Loaded connections.
        conns: usize,
    },
    /// A closed loop on `conns` connections while malformed requests and slow clients
    /// arrive on other connections.
    Hostile {
        /// Loaded connections.
        conns: usize,
    },
}

impl Shape {
    /// `true` for shapes whose length is a request count derived from the warm-up's
    /// rate rather than a duration.
    pub fn counted(&self) -> bool {
        matches!(
            self,
            Shape::Batch { .. } | Shape::Iterations { .. } | Shape::Rustlet { .. }
        )
    }

    /// The connections the client opens (the largest, for backlogs and limits).
    pub fn connections(&self) -> usize {
        match *self {
            Shape::Closed { conns, .. }
            | Shape::Iterations { conns, .. }
            | Shape::Rustlet { conns, .. }
            | Shape::Churn { conns, .. }
            | Shape::Open { conns, .. }
            | Shape::Echo { conns, .. }
            | Shape::EchoFramed { conns }
            | Shape::Hostile { conns } => conns,
            Shape::Batch { size, .. } => size,
            Shape::Idle { idle, conns } => idle + conns,
        }
    }
}

/// What a variant's chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Requests per second, one bar per peer.
    Throughput,
    /// Latency against percentile, one curve per peer.
    LatencyCurve,
    /// Latency (p50, p99) against offered rate, one curve per peer (S9).
    OpenLoop,
}

/// One variant of one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// `S1` .. `S14`.
    pub scenario: &'static str,
    /// Short name inside the scenario (`c50`, `p16`, `50%`).
    pub name: String,
    /// One line for the report.
    pub title: String,
    /// What the server must be.
    pub service: Service,
    /// What the client does.
    pub shape: Shape,
    /// In the default (short) run.
    pub default: bool,
    /// How the report draws it.
    pub chart: Chart,
}

impl Variant {
    /// `S5 c50`.
    pub fn id(&self) -> String {
        format!("{} {}", self.scenario, self.name)
    }
}

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
                 latency is timed from each request's intended send time."
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
        "S13" => {
            "A peer that does not parse HTTP (the raw loops, the floor) answers malformed \
                  requests with 200: the hostile_* figures say what each did."
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

fn v(
    scenario: &'static str,
    name: &str,
    title: &str,
    service: Service,
    shape: Shape,
    default: bool,
) -> Variant {
    let chart = match shape {
        Shape::Open { .. } => Chart::OpenLoop,
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

/// Scenarios the default run leaves out even though they have default variants: they
/// need what a fresh clone does not have (S14: a Python virtual environment with a
/// release build of ringway's loop). `--scenario S14` runs their default variants,
/// `--full` all of them.
pub const OPT_IN: &[&str] = &["S14"];

/// The offered rates of S9, in percent of the capacity.
pub const OPEN_LOOP_PERCENTS: &[u32] = &[25, 50, 75, 90, 100, 110];
/// The S9 rates of the default run.
pub const OPEN_LOOP_DEFAULT: &[u32] = &[50, 90];

/// Every variant, in scenario order.
pub fn catalogue() -> Vec<Variant> {
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
    all.extend([
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
            false,
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
    ]);
    for &p in OPEN_LOOP_PERCENTS {
        all.push(v(
            "S9",
            &format!("{p}%"),
            &format!("open loop at {p}% of capacity, 50 connections"),
            hello,
            Shape::Open {
                conns: 50,
                percent: p,
            },
            OPEN_LOOP_DEFAULT.contains(&p),
        ));
    }
    all.extend([
        v(
            "S10",
            "x1",
            "1 request per connection, 10 at a time",
            hello,
            Shape::Churn {
                conns: 10,
                per_conn: 1,
            },
            false,
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
            Shape::Hostile { conns: 50 },
            false,
        ),
    ]);
    all.extend(python_variants());
    all
}

/// S14: the Python loops. The default four are the (Protocol echo of 64 B and
/// 1 KiB, streams echo, the two-write HTTP server); the others widen them (sizes,
/// connection counts, BufferedProtocol) under `--full` or by name.
fn python_variants() -> Vec<Variant> {
    let echo = |name: &str, title: &str, server: PyServer, conns: usize, size: usize, default| {
        v(
            "S14",
            name,
            title,
            Service::Python(server),
            Shape::Echo { conns, size },
            default,
        )
    };
    let http = |name: &str, title: &str, conns: usize, default| {
        v(
            "S14",
            name,
            title,
            Service::Python(PyServer::TwoWriteHttp),
            Shape::Closed { conns, pipeline: 1 },
            default,
        )
    };
    vec![
        echo(
            "protocol-64B",
            "Protocol echo, 64 B, 10 connections",
            PyServer::Protocol,
            10,
            64,
            true,
        ),
        echo(
            "protocol-1KiB",
            "Protocol echo, 1 KiB, 10 connections",
            PyServer::Protocol,
            10,
            1024,
            true,
        ),
        echo(
            "streams-1KiB",
            "streams echo (start_server, read/write/drain), 1 KiB, 10 connections",
            PyServer::Streams,
            10,
            1024,
            true,
        ),
        http(
            "http-2writes",
            "HTTP answered with two write() calls, 10 connections",
            10,
            true,
        ),
        echo(
            "buffered-1KiB",
            "BufferedProtocol echo, 1 KiB, 10 connections",
            PyServer::Buffered,
            10,
            1024,
            false,
        ),
        echo(
            "protocol-1KiB-c1",
            "Protocol echo, 1 KiB, 1 connection",
            PyServer::Protocol,
            1,
            1024,
            false,
        ),
        echo(
            "protocol-1KiB-c100",
            "Protocol echo, 1 KiB, 100 connections",
            PyServer::Protocol,
            100,
            1024,
            false,
        ),
        echo(
            "protocol-100KiB",
            "Protocol echo, 100 KiB, 10 connections",
            PyServer::Protocol,
            10,
            100 * 1024,
            false,
        ),
        http(
            "http-2writes-c50",
            "HTTP answered with two write() calls, 50 connections",
            50,
            false,
        ),
    ]
}

/// Picks the variants: `--scenario` names scenarios (`S5`) or variants (`S5:c1000`),
/// comma-separated; without it, the default variants, or all with `full`.
pub fn select(
    all: &[Variant],
    selection: Option<&str>,
    full: bool,
) -> Result<Vec<Variant>, String> {
    let Some(selection) = selection else {
        return Ok(all
            .iter()
            .filter(|v| full || (v.default && !OPT_IN.contains(&v.scenario)))
            .cloned()
            .collect());
    };
    let mut out: Vec<Variant> = Vec::new();
    for item in selection
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let upper = item.to_ascii_uppercase();
        let (scenario, name) = match upper.split_once(':') {
            Some((s, _)) => (s.to_string(), Some(&item[s.len() + 1..])),
            None => (upper.clone(), None),
        };
        let matching: Vec<&Variant> = all
            .iter()
            .filter(|v| v.scenario == scenario)
            .filter(|v| match name {
                Some(n) => v.name.eq_ignore_ascii_case(n),
                None => {
                    full || v.default || !all.iter().any(|o| o.scenario == v.scenario && o.default)
                }
            })
            .collect();
        if matching.is_empty() {
            let known: Vec<String> = all
                .iter()
                .map(|v| format!("{}:{}", v.scenario, v.name))
                .collect();
            return Err(format!(
                "unknown scenario {item:?}; known: S1..S14, or one variant of: {}",
                known.join(", ")
            ));
        }
        for m in matching {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
    }
    // Keep scenario order whatever the order asked.
    out.sort_by_key(|v| all.iter().position(|a| a == v));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_run_has_one_variant_of_each_of_s1_to_s9_and_s9_sweeps() {
        let all = catalogue();
        let def = select(&all, None, false).unwrap();
        for s in ["S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"] {
            assert_eq!(def.iter().filter(|v| v.scenario == s).count(), 1, "{s}");
        }
        let s9: Vec<&Variant> = def.iter().filter(|v| v.scenario == "S9").collect();
        assert_eq!(s9.len(), OPEN_LOOP_DEFAULT.len());
        assert!(def
            .iter()
            .all(|v| !matches!(v.scenario, "S10" | "S11" | "S12" | "S13" | "S14")));
        let full = select(&all, None, true).unwrap();
        assert_eq!(full.len(), all.len());
        for s in ["S10", "S11", "S12", "S13", "S14"] {
            assert!(full.iter().any(|v| v.scenario == s), "{s}");
        }
    }

    #[test]
    fn selection_by_scenario_and_variant() {
        let all = catalogue();
        let one = select(&all, Some("s5:c1000"), false).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].id(), "S5 c1000");
        let s5 = select(&all, Some("S8,S5"), false).unwrap();
        let ids: Vec<String> = s5.iter().map(Variant::id).collect();
        assert_eq!(ids, ["S5 c50", "S8 p16"], "default variant, scenario order");
        let s5_full = select(&all, Some("S5"), true).unwrap();
        assert_eq!(s5_full.len(), 2);
        let s10 = select(&all, Some("S10"), false).unwrap();
        assert_eq!(
            s10.len(),
            2,
            "a scenario with no default variant runs all of them"
        );
        let err = select(&all, Some("S99"), false).unwrap_err();
        assert!(err.contains("unknown scenario"), "{err}");
    }

    #[test]
    fn s14_selects_the_python_variants_outside_the_default_run() {
        let all = catalogue();
        let s14 = select(&all, Some("s14"), false).unwrap();
        let ids: Vec<String> = s14.iter().map(Variant::id).collect();
        assert_eq!(
            ids,
            [
                "S14 protocol-64B",
                "S14 protocol-1KiB",
                "S14 streams-1KiB",
                "S14 http-2writes"
            ]
        );
        let shapes: Vec<(Service, Shape)> = s14.iter().map(|v| (v.service, v.shape)).collect();
        assert_eq!(
            shapes,
            [
                (
                    Service::Python(PyServer::Protocol),
                    Shape::Echo {
                        conns: 10,
                        size: 64
                    }
                ),
                (
                    Service::Python(PyServer::Protocol),
                    Shape::Echo {
                        conns: 10,
                        size: 1024
                    }
                ),
                (
                    Service::Python(PyServer::Streams),
                    Shape::Echo {
                        conns: 10,
                        size: 1024
                    }
                ),
                (
                    Service::Python(PyServer::TwoWriteHttp),
                    Shape::Closed {
                        conns: 10,
                        pipeline: 1
                    }
                ),
            ]
        );
        // Every S14 variant is a Python service, and only S14 asks for one.
        for v in &all {
            assert_eq!(
                v.scenario == "S14",
                matches!(v.service, Service::Python(_)),
                "{}",
                v.id()
            );
        }
        let full = select(&all, Some("S14"), true).unwrap();
        assert_eq!(
            full.len(),
            all.iter().filter(|v| v.scenario == "S14").count()
        );
        assert!(full.len() > s14.len());
        let one = select(&all, Some("S14:buffered-1kib"), false).unwrap();
        assert_eq!(one[0].service, Service::Python(PyServer::Buffered));
        let mixed = select(&all, Some("S14,S5"), false).unwrap();
        assert_eq!(mixed.first().unwrap().id(), "S5 c50", "scenario order");
    }

    #[test]
    fn titles_cover_every_scenario() {
        for v in catalogue() {
            assert!(!title(v.scenario).is_empty(), "{}", v.scenario);
        }
    }
}
