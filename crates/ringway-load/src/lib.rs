//! # ringway-load
//!
//! A load generator whose numbers can be trusted, on the ringway runtime (one runtime
//! core per client thread, so the client costs little CPU per request).
//!
//! - Shapes: closed loop (wrk's model), open loop at a constant rate with latency taken
//!   from each request's *intended* send time (coordinated omission corrected; the
//!   uncorrected histogram is kept too), batches of N concurrent requests timed per
//!   batch, N requests per connection then a client-side close (`-x`, with iterations),
//!   a new connection per request, pipelining, TLS (rustls).
//! - Responses are framed by the HTTP/1.1 rules (Content-Length, chunked,
//!   close-delimited), never by matching a byte suffix; status classes are counted and
//!   bodies can be checked.
//! - Echo modes for echo servers: fixed-size, and framed random 1–100-byte frames
//!   verified byte by byte.
//! - Output: a wrk-like summary, or JSON with the full histogram ([`Report`]).
//!
//! ```
//! use ringway_load::{run, LoadConfig, Limit};
//! # // A keep-alive server that answers every request head with a 2-byte body.
//! # use std::io::{BufRead, BufReader, Write};
//! # let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
//! # let url = format!("http://{}/", server.local_addr().unwrap());
//! # std::thread::spawn(move || {
//! #     for conn in server.incoming() {
//! #         let mut conn = conn.unwrap();
//! #         std::thread::spawn(move || {
//! #             let mut lines = BufReader::new(conn.try_clone().unwrap());
//! #             let mut line = String::new();
//! #             while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
//! #                 let end_of_head = line == "\r\n";
//! #                 line.clear();
//! #                 let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
//! #                 if end_of_head && conn.write_all(ok).is_err() {
//! #                     break;
//! #                 }
//! #             }
//! #         });
//! #     }
//! # });
//!
//! let cfg = LoadConfig {
//!     urls: vec![url], // e.g. "http://127.0.0.1:8080/"
//!     connections: 10,
//!     limit: Limit { duration: None, requests: Some(1_000) },
//!     ..LoadConfig::default()
//! };
//! let report = run(&cfg).unwrap();
//! assert_eq!(report.requests, 1_000);
//! println!("{}", report.to_text());
//! ```

pub mod cli;
pub mod config;
pub mod conn;
mod engine;
pub mod error;
mod limits;
mod progress;
pub mod report;
pub mod request;
pub mod rng;
pub mod stats;
pub mod target;
pub mod tls;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub use config::{Limit, LoadConfig, Payload, Shape, TlsOptions};
pub use error::{LoadError, RequestFailure};
pub use report::{Iteration, Latency, Report};
pub use request::RequestSpec;

use engine::plan::Plan;
use progress::Progress;
use report::ReportHead;
use stats::Stats;

/// Runs the load described by `cfg` and reports what it measured.
///
/// Fails before the run for bad options or URLs, and after the first phase if no
/// connection could be made at all (refused, unreachable).
pub fn run(cfg: &LoadConfig) -> Result<Report, LoadError> {
    let mut plan = Plan::new(cfg)?;
    let mut threads = cfg.threads;
    let mut notes = Vec::new();
    if let Shape::Batch { size } = cfg.shape {
        // A batch is a barrier: spreading one over cores would time cross-core wake-ups.
        if threads > 1 {
            notes.push(format!(
                "--batch runs on one client thread (a batch is a barrier); -t {threads} ignored"
            ));
        }
        threads = 1;
        plan.connections = size;
    }
    let fd_limit = limits::raise_fd_limit();
    // Each connection needs an fd; leave some for the runtime and the process.
    if fd_limit > 0 && plan.connections as u64 + 64 > fd_limit {
        return Err(LoadError::Config(format!(
            "-c {} needs more open files than the limit of {fd_limit} allows \
             (raise it with ulimit -n)",
            plan.connections
        )));
    }
    let plan = Arc::new(plan);
    let mut builder = ringway::Runtime::builder();
    builder.worker_threads(threads);
    if let Some(b) = cfg.backend {
        builder.backend(b);
    }
    let rt = builder.build()?;
    let counters: Vec<Arc<AtomicU64>> = (0..rt.cores())
        .map(|_| Arc::new(AtomicU64::new(0)))
        .collect();

    if let Some(w) = cfg.warmup {
        let r = engine::run_phase(&rt, &plan, None, Some(w), &counters);
        if let Some(f) = r.fatal {
            return Err(LoadError::Connect(f));
        }
        for c in &counters {
            c.store(0, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let iterations = cfg.iterations.max(1);
    let total_requests = cfg.limit.requests.map(|n| n * u64::from(iterations));
    let total_time = cfg.limit.duration.map(|d| d * iterations);
    let bar = Progress::start(cfg.progress, counters.clone(), total_requests, total_time);
    let mut total = Stats::default();
    let mut elapsed = 0.0;
    let mut its = Vec::new();
    for index in 1..=iterations {
        let r = engine::run_phase(
            &rt,
            &plan,
            cfg.limit.requests,
            cfg.limit.duration,
            &counters,
        );
        if let Some(f) = r.fatal {
            bar.finish();
            return Err(LoadError::Connect(f));
        }
        let secs = r.elapsed.as_secs_f64();
        let l = Latency::from_histogram(&r.stats.latency);
        its.push(Iteration {
            index,
            requests: r.stats.requests,
            errors: r.stats.errors.total(),
            duration_s: secs,
            qps: r.stats.requests as f64 / secs.max(1e-9),
            avg_us: l.mean,
            max_us: l.max,
            p50_us: l.p50,
            p99_us: l.p99,
        });
        total.merge(&r.stats);
        elapsed += secs;
    }
    bar.finish();
    let head = ReportHead {
        mode: match cfg.shape {
            Shape::Closed => "closed",
            Shape::Open { .. } => "open",
            Shape::Batch { .. } => "batch",
        }
        .to_string(),
        backend: rt.backend().to_string(),
        urls: cfg.urls.clone(),
        connections: plan.connections,
        threads,
        pipeline: cfg.pipeline,
        per_connection: cfg.per_connection,
        target_rate: match cfg.shape {
            Shape::Open { rate } => Some(rate),
            _ => None,
        },
    };
    if iterations == 1 {
        its.clear();
    }
    let mut report = Report::new(head, &total, elapsed, its);
    report.warnings.extend(notes);
    Ok(report)
}
