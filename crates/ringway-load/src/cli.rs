//! The `ringway load` command line: clap arguments turned into a [`LoadConfig`], and the
//! printing of the result (wrk-like text, or JSON).

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;

use crate::config::{Limit, LoadConfig, Payload, Shape, TlsOptions};
use crate::error::LoadError;
use crate::report::Report;
use crate::request::{parse_header, RequestSpec};

/// Load an HTTP (or echo) server and report what it did: closed or open loop, batches,
/// connection churn, pipelining, TLS.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  ringway load -c 50 -d 10s http://127.0.0.1:8080/
  ringway load -R 20000 -c 50 -d 30s --json http://127.0.0.1:8080/    (open loop)
  ringway load --batch 50 -n 5000 http://127.0.0.1:8080/
  ringway load -x 100 -c 10 -t 2 -i 5 http://127.0.0.1:8080/         (Rustlet shape)
  ringway load --new-conn -c 10 -d 5s http://127.0.0.1:8080/
  ringway load -p 16 -c 50 -d 10s http://127.0.0.1:8080/
  ringway load --insecure -c 10 -d 5s https://127.0.0.1:8443/
  ringway load --echo 64 -c 10 -d 5s tcp://127.0.0.1:7000
  ringway load --echo-framed -c 10 -n 100000 tcp://127.0.0.1:7000")]
pub struct LoadArgs {
    /// URLs, used round-robin (http://, https://, or tcp://host:port for echo).
    #[arg(required = true)]
    pub urls: Vec<String>,
    /// Connections (over all threads).
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// Client threads, one runtime core each.
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: usize,
    /// Duration (e.g. 10s, 500ms, 2m). Default 10s when no -n.
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Total requests (attempts) per iteration.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Open loop: constant rate in requests per second over all connections.
    #[arg(short = 'R', long, conflicts_with = "batch")]
    pub rate: Option<f64>,
    /// Batches: N concurrent requests (one per connection), wait for all, repeat.
    #[arg(long, value_name = "N")]
    pub batch: Option<usize>,
    /// Requests per connection, then the client closes it.
    #[arg(short = 'x', long = "per-conn", value_name = "N")]
    pub per_conn: Option<u64>,
    /// A new connection for every request (same as -x 1).
    #[arg(long, conflicts_with = "per_conn")]
    pub new_conn: bool,
    /// Iterations: repeat the run, reporting QPS, average and max of each.
    #[arg(short = 'i', long, default_value_t = 1)]
    pub iterations: u32,
    /// Pipeline depth: requests written back to back before reading their responses.
    #[arg(short = 'p', long, default_value_t = 1)]
    pub pipeline: usize,
    /// Request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Request body.
    #[arg(short = 'b', long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Every response body must be exactly this (else a "body" error).
    #[arg(long, conflicts_with = "expect_body_file")]
    pub expect_body: Option<String>,
    /// Every response body must equal this file's bytes.
    #[arg(long)]
    pub expect_body_file: Option<PathBuf>,
    /// Echo mode: messages of SIZE bytes, each verified.
    #[arg(long, value_name = "SIZE", conflicts_with = "echo_framed")]
    pub echo: Option<usize>,
    /// Framed echo: 2-byte length + random 1-100 bytes, verified byte by byte.
    #[arg(long)]
    pub echo_framed: bool,
    /// Seed of the framed echo's generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A request taking longer fails with a timeout error.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Warm up this long before measuring.
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// TLS: accept any server certificate (self-signed test servers).
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// TLS: trusted root certificates (PEM); default: the system bundle.
    #[arg(long)]
    pub cacert: Option<PathBuf>,
    /// Print the report as JSON (with the full histogram).
    #[arg(long)]
    pub json: bool,
    /// Never show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// The client's I/O backend (default: RINGWAY_BACKEND, else auto).
    #[arg(long, value_parser = backend_parser())]
    pub backend: Option<ringway::Backend>,
}

/// The `--backend` parser of every `ringway` command: clap offers (in `--help`) and
/// suggests (after a typo) the values `auto`, `uring` and `epoll`; [`ringway::Backend`]'s
/// `FromStr` makes the value.
pub fn backend_parser() -> impl TypedValueParser<Value = ringway::Backend> {
    PossibleValuesParser::new([
        PossibleValue::new("auto").help("io_uring if the kernel allows, else epoll"),
        PossibleValue::new("uring").help("io_uring or fail"),
        PossibleValue::new("epoll").help("epoll"),
    ])
    .try_map(|name| name.parse::<ringway::Backend>())
}

/// Parses `10s`, `500ms`, `2m`, `1h`, `250us` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (try 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "" | "s" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "{s:?}: unknown unit {unit:?} (use us, ms, s, m, h)"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{s:?} is not a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl LoadArgs {
    /// The library configuration these arguments describe.
    pub fn to_config(&self) -> Result<LoadConfig, LoadError> {
        let read = |p: &PathBuf| {
            std::fs::read(p)
                .map_err(|e| LoadError::Config(format!("cannot read {}: {e}", p.display())))
        };
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => Some(b.clone().into_bytes()),
            (None, Some(f)) => Some(read(f)?),
            (None, None) => None,
        };
        let expect_body = match (&self.expect_body, &self.expect_body_file) {
            (Some(b), _) => Some(b.clone().into_bytes()),
            (None, Some(f)) => Some(read(f)?),
            (None, None) => None,
        };
        let payload = if let Some(size) = self.echo {
            Payload::Echo { size }
        } else if self.echo_framed {
            Payload::FramedEcho { seed: self.seed }
        } else {
            Payload::Http {
                request: RequestSpec {
                    method: self.method.clone(),
                    headers: self.headers.clone(),
                    body,
                },
                expect_body,
            }
        };
        let shape = match (self.rate, self.batch) {
            (Some(rate), _) => Shape::Open { rate },
            (None, Some(size)) => Shape::Batch { size },
            (None, None) => Shape::Closed,
        };
        let per_connection = if self.new_conn {
            Some(1)
        } else {
            self.per_conn
        };
        let limit = match (self.duration, self.requests, per_connection) {
            (None, None, Some(x)) if self.iterations > 1 => Limit {
                // The Rustlet shape: each connection carries -x requests per iteration.
                duration: None,
                requests: Some(x * self.connections as u64),
            },
            (None, None, _) => Limit {
                duration: Some(Duration::from_secs(10)),
                requests: None,
            },
            (duration, requests, _) => Limit { duration, requests },
        };
        Ok(LoadConfig {
            urls: self.urls.clone(),
            payload,
            shape,
            connections: self.connections,
            threads: self.threads,
            limit,
            per_connection,
            iterations: self.iterations,
            pipeline: self.pipeline,
            timeout: self.timeout,
            tls: TlsOptions {
                insecure: self.insecure,
                ca_file: self.cacert.clone(),
            },
            warmup: self.warmup,
            progress: !self.no_progress,
            backend: self.backend,
        })
    }
}

/// Runs the command and writes its report to `out`.
pub fn execute(args: &LoadArgs, out: &mut dyn Write) -> Result<Report, LoadError> {
    let cfg = args.to_config()?;
    let report = crate::run(&cfg)?;
    if args.json {
        writeln!(out, "{}", report.to_json())?;
    } else {
        write!(out, "{}", report.to_text())?;
    }
    out.flush()?;
    Ok(report)
}

/// `ringway load`: runs and prints to stdout.
pub fn run(args: LoadArgs) -> io::Result<()> {
    let stdout = io::stdout();
    execute(&args, &mut stdout.lock())
        .map(|_| ())
        .map_err(|e| io::Error::other(format!("load: {e}")))
}
