//! The result of a run: a [`Report`] that serialises to the JSON other tools read, and
//! prints as a wrk-like summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::error::RequestFailure;
use crate::stats::Stats;

/// Latency figures in microseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stdev: f64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

impl Latency {
    /// From a nanosecond histogram.
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean: h.mean() / 1000.0,
            stdev: h.stdev() / 1000.0,
            min: us(h.min()),
            p50: us(h.value_at_quantile(0.50)),
            p75: us(h.value_at_quantile(0.75)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }
}

/// One iteration of an `-i` run (the Rustlet shape).
#[derive(Debug, Clone, Serialize)]
pub struct Iteration {
    /// 1-based.
    pub index: u32,
    /// Completed requests.
    pub requests: u64,
    /// Failed requests.
    pub errors: u64,
    /// Wall-clock seconds.
    pub duration_s: f64,
    /// Completed requests per second.
    pub qps: f64,
    /// Mean latency, µs.
    pub avg_us: f64,
    /// Largest latency, µs.
    pub max_us: f64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
}

/// Everything a run measured. The keys `requests`, `duration_s`, `rps`, `latency_us`
/// (`p50`, `p90`, `p99`, `p999`, `max`) and `errors` are a contract with other tools.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What was run: mode, backend, URLs, connections, threads, pipeline, `-x`, `-R`
    /// (flattened: the JSON keys are the fields' own).
    #[serde(flatten)]
    pub head: ReportHead,
    /// Completed requests.
    pub requests: u64,
    /// Wall-clock seconds measured (warm-up excluded).
    pub duration_s: f64,
    /// Completed requests per second.
    pub rps: f64,
    /// Bytes received.
    pub bytes_read: u64,
    /// Bytes sent.
    pub bytes_written: u64,
    /// Received bytes per second.
    pub transfer_per_s: f64,
    /// Latency; in open loop from each request's intended send time.
    pub latency_us: Latency,
    /// Open loop: latency from the actual send time (not corrected).
    pub latency_uncorrected_us: Option<Latency>,
    /// Connect (and TLS handshake) time.
    pub connect_us: Option<Latency>,
    /// Batch mode: time per batch.
    pub batch_us: Option<Latency>,
    /// Failed requests by class (`status`: completed with a status outside 2xx/3xx).
    pub errors: BTreeMap<String, u64>,
    /// Responses by status class (`1xx` .. `5xx`, `other`).
    pub status: BTreeMap<String, u64>,
    /// Connections opened.
    pub connections_opened: u64,
    /// Per-iteration figures (`-i`).
    pub iterations: Vec<Iteration>,
    /// Things the reader must know (closed-loop tail, unreached rate).
    pub warnings: Vec<String>,
    /// The full latency histogram: `[value_us, count]` for every recorded value.
    pub histogram: Vec<(f64, u64)>,
}

/// The warning every closed-loop run prints.
pub const CLOSED_LOOP_WARNING: &str = "closed-loop latency understates the tail \
(coordinated omission): a stalled server also delays the requests that would have \
measured the stall; use -R RATE (open loop) for latency";

impl Report {
    /// Builds a report from merged measurements.
    pub fn new(
        head: ReportHead,
        stats: &Stats,
        elapsed_s: f64,
        iterations: Vec<Iteration>,
    ) -> Report {
        let open = head.target_rate.is_some();
        let batch = head.mode == "batch";
        let secs = elapsed_s.max(1e-9);
        let mut errors = BTreeMap::new();
        for c in RequestFailure::ALL {
            errors.insert(c.name().to_string(), stats.errors.get(c));
        }
        let names = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];
        let status = names
            .iter()
            .zip(stats.status.iter())
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k.to_string(), n))
            .collect();
        let histogram = stats
            .latency
            .iter_recorded()
            .map(|v| (v.value_iterated_to() as f64 / 1000.0, v.count_at_value()))
            .collect();
        let mut warnings = Vec::new();
        if head.mode == "closed" {
            warnings.push(CLOSED_LOOP_WARNING.to_string());
        }
        let rps = stats.requests as f64 / secs;
        if let Some(rate) = head.target_rate {
            let attempted = (stats.requests + stats.errors.total()
                - stats.errors.get(RequestFailure::Status)
                - stats.errors.get(RequestFailure::Body)) as f64
                / secs;
            if attempted < rate * 0.9 {
                warnings.push(format!(
                    "target rate {rate:.0} req/s was not reached: {attempted:.0} req/s sent; \
the client or the server is saturated, latencies include the queue"
                ));
            }
        }
        Report {
            head,
            requests: stats.requests,
            duration_s: elapsed_s,
            rps,
            bytes_read: stats.bytes_read,
            bytes_written: stats.bytes_written,
            transfer_per_s: stats.bytes_read as f64 / secs,
            latency_us: Latency::from_histogram(&stats.latency),
            latency_uncorrected_us: open.then(|| Latency::from_histogram(&stats.uncorrected)),
            connect_us: (!stats.connect.is_empty())
                .then(|| Latency::from_histogram(&stats.connect)),
            batch_us: batch.then(|| Latency::from_histogram(&stats.batches)),
            errors,
            status,
            connections_opened: stats.connections,
            iterations,
            warnings,
            histogram,
        }
    }

    /// Total failed requests (status errors included).
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The JSON document.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }

    /// The wrk-like summary.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let l = &self.latency_us;
        let _ = writeln!(
            o,
            "{:.2}s test @ {}",
            self.duration_s,
            self.head.urls.join(", ")
        );
        let shape = match self.head.target_rate {
            Some(r) => format!("open loop at {r:.0} req/s"),
            None => format!("{} loop", self.head.mode),
        };
        let _ = writeln!(
            o,
            "  {} threads and {} connections, {shape}, pipeline {}{}; client on {}",
            self.head.threads,
            self.head.connections,
            self.head.pipeline,
            self.head
                .per_connection
                .map(|x| format!(", {x} requests per connection"))
                .unwrap_or_default(),
            self.head.backend
        );
        let title = if self.head.target_rate.is_some() {
            "Latency (from intended send time, corrected)"
        } else {
            "Latency"
        };
        let _ = writeln!(o, "  {title}");
        let _ = writeln!(
            o,
            "    avg {}  stdev {}  max {}",
            us(l.mean),
            us(l.stdev),
            us(l.max)
        );
        let _ = writeln!(o, "  Latency Distribution");
        for (p, v) in [
            ("50%", l.p50),
            ("75%", l.p75),
            ("90%", l.p90),
            ("99%", l.p99),
            ("99.9%", l.p999),
        ] {
            let _ = writeln!(o, "    {p:>6} {}", us(v));
        }
        if let Some(u) = &self.latency_uncorrected_us {
            let _ = writeln!(
                o,
                "  Uncorrected latency (from actual send): p50 {}  p99 {}  max {}",
                us(u.p50),
                us(u.p99),
                us(u.max)
            );
        }
        if let Some(b) = &self.batch_us {
            let _ = writeln!(
                o,
                "  Batches: {}  avg {}  p50 {}  p99 {}  max {}",
                b.count,
                us(b.mean),
                us(b.p50),
                us(b.p99),
                us(b.max)
            );
        }
        if let Some(c) = &self.connect_us {
            let _ = writeln!(
                o,
                "  Connections: {} opened, connect avg {}  p99 {}",
                self.connections_opened,
                us(c.mean),
                us(c.p99)
            );
        }
        for it in &self.iterations {
            let _ = writeln!(
                o,
                "  iteration {}: {} requests in {:.3}s, QPS {:.0}, avg {}, max {}, p50 {}, p99 {}",
                it.index,
                it.requests,
                it.duration_s,
                it.qps,
                us(it.avg_us),
                us(it.max_us),
                us(it.p50_us),
                us(it.p99_us)
            );
        }
        let _ = writeln!(
            o,
            "  {} requests in {:.2}s, {} read",
            self.requests,
            self.duration_s,
            bytes(self.bytes_read as f64)
        );
        if self.error_total() > 0 {
            let parts: Vec<String> = self
                .errors
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(o, "  Errors: {}", parts.join(", "));
        }
        let non_ok: u64 = self
            .status
            .iter()
            .filter(|(k, _)| k.as_str() != "2xx" && k.as_str() != "3xx")
            .map(|(_, n)| n)
            .sum();
        if non_ok > 0 {
            let _ = writeln!(o, "  Non-2xx or 3xx responses: {non_ok}");
        }
        let _ = writeln!(o, "Requests/sec: {:>12.2}", self.rps);
        let _ = writeln!(o, "Transfer/sec: {:>12}", bytes(self.transfer_per_s));
        for w in &self.warnings {
            let _ = writeln!(o, "Warning: {w}");
        }
        o
    }
}

/// The run's description, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct ReportHead {
    /// `closed`, `open` or `batch`.
    pub mode: String,
    /// Client backend.
    pub backend: String,
    /// URLs.
    pub urls: Vec<String>,
    /// Connections.
    pub connections: usize,
    /// Threads.
    pub threads: usize,
    /// Pipeline depth.
    pub pipeline: usize,
    /// `-x`.
    pub per_connection: Option<u64>,
    /// `-R`.
    pub target_rate: Option<f64>,
}

fn us(v: f64) -> String {
    if v >= 1_000_000.0 {
        format!("{:.2}s", v / 1_000_000.0)
    } else if v >= 1000.0 {
        format!("{:.2}ms", v / 1000.0)
    } else {
        format!("{v:.0}us")
    }
}

fn bytes(v: f64) -> String {
    if v >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}GB", v / (1024.0 * 1024.0 * 1024.0))
    } else if v >= 1024.0 * 1024.0 {
        format!("{:.2}MB", v / (1024.0 * 1024.0))
    } else if v >= 1024.0 {
        format!("{:.2}KB", v / 1024.0)
    } else {
        format!("{v:.0}B")
    }
}
