//! The description of a run, as the library takes it (the command line builds one).

use std::path::PathBuf;
use std::time::Duration;

use crate::request::RequestSpec;

/// What to send and how to check what comes back.
#[derive(Debug, Clone)]
pub enum Payload {
    /// HTTP requests to every URL in turn.
    Http {
        /// Method, headers and body.
        request: RequestSpec,
        /// If set, every response body must equal these bytes (else a `body` error).
        expect_body: Option<Vec<u8>>,
    },
    /// Raw echo: messages of exactly `size` bytes, each verified when it comes back.
    Echo {
        /// Message size.
        size: usize,
    },
    /// Framed echo: a 2-byte big-endian length then 1–100 random bytes, verified byte
    /// by byte.
    FramedEcho {
        /// Seed of the frame generator (each connection derives its own).
        seed: u64,
    },
}

/// The timing model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Each connection sends its next request when the previous answer arrived.
    Closed,
    /// Requests leave at a constant total rate (requests per second); latency is taken
    /// from each request's intended send time.
    Open {
        /// Target rate, requests per second, over all connections.
        rate: f64,
    },
    /// `size` concurrent requests (one per connection), wait for all, repeat.
    Batch {
        /// Requests per batch.
        size: usize,
    },
}

/// When a run (or an iteration) stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many requests (attempts: completed plus failed).
    pub requests: Option<u64>,
}

/// TLS client options.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any server certificate (self-signed test certificates).
    pub insecure: bool,
    /// Trusted roots (PEM); default: the system bundle.
    pub ca_file: Option<PathBuf>,
}

/// A whole run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// URLs, used round-robin (each connection starts at a different one).
    pub urls: Vec<String>,
    /// What to send.
    pub payload: Payload,
    /// Timing model.
    pub shape: Shape,
    /// Concurrent connections over all threads.
    pub connections: usize,
    /// Client threads (one runtime core each).
    pub threads: usize,
    /// When to stop (per iteration when `iterations` > 1).
    pub limit: Limit,
    /// Requests per connection before the client closes it (`Some(1)`: a new connection
    /// per request; `None`: keep it as long as it works).
    pub per_connection: Option<u64>,
    /// Repeat the run this many times, reporting each (at least 1).
    pub iterations: u32,
    /// Requests written back to back on a connection before waiting for their responses.
    pub pipeline: usize,
    /// A request (or connect) that takes longer fails with `timeout`.
    pub timeout: Duration,
    /// TLS options (for https URLs).
    pub tls: TlsOptions,
    /// Run this long first without recording anything (connections warm up too).
    pub warmup: Option<Duration>,
    /// Show a progress bar (only ever on a terminal).
    pub progress: bool,
    /// The client runtime's I/O backend (`None`: `RINGWAY_BACKEND`, else auto).
    pub backend: Option<ringway::Backend>,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            urls: Vec::new(),
            payload: Payload::Http {
                request: RequestSpec::default(),
                expect_body: None,
            },
            shape: Shape::Closed,
            connections: 10,
            threads: 1,
            limit: Limit {
                duration: Some(Duration::from_secs(10)),
                requests: None,
            },
            per_connection: None,
            iterations: 1,
            pipeline: 1,
            timeout: Duration::from_secs(2),
            tls: TlsOptions::default(),
            warmup: None,
            progress: false,
            backend: None,
        }
    }
}
