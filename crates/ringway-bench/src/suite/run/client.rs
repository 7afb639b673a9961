//! The client: `ringway load` in its own process, pinned to the client's cores, its
//! `--json` report read back.
//!
//! The command line is derived from the variant's [`Shape`]. Shapes measured per
//! iteration (S3, S6) are sized from the warm-up's rate so that a round lasts about the
//! round's duration on any peer. The client's own CPU time comes from `wait4` (its whole
//! life, all threads), which is what the clean-round rule needs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::measure::process::{Event, Stream, WaitError, Watched};
use crate::suite::registry::Service;
use crate::suite::scenarios::Shape;

/// Latency percentiles of a `ringway load` report, in microseconds.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Latency {
    /// Median.
    #[serde(default)]
    pub p50: f64,
    /// 90th percentile.
    #[serde(default)]
    pub p90: f64,
    /// 99th percentile.
    #[serde(default)]
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(default)]
    pub p999: f64,
    /// Largest.
    #[serde(default)]
    pub max: f64,
    /// Mean.
    #[serde(default)]
    pub mean: f64,
}

/// One iteration of a counted shape.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Iteration {
    /// Requests per second in it.
    pub qps: f64,
    /// Its length.
    pub duration_s: f64,
}

/// What the suite reads from `ringway load --json`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct LoadReport {
    /// Completed requests.
    pub requests: u64,
    /// Measured seconds.
    pub duration_s: f64,
    /// Completed requests per second.
    pub rps: f64,
    /// Latency (corrected for coordinated omission in open loop).
    pub latency_us: Latency,
    /// Errors by class.
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    /// Time per batch (batch shape).
    #[serde(default)]
    pub batch_us: Option<Latency>,
    /// Per-iteration figures (counted shapes).
    #[serde(default)]
    pub iterations: Vec<Iteration>,
    /// What the client wants the reader to know (e.g. it could not keep the rate).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// `[value_us, count]` for every recorded latency.
    #[serde(default)]
    pub histogram: Vec<(f64, u64)>,
}

impl LoadReport {
    /// Errors of every class.
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// A finished client run.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// Its report.
    pub report: LoadReport,
    /// Its CPU time (user + system, all threads).
    pub cpu: Duration,
    /// Wall time from spawn to exit.
    pub wall: Duration,
}

/// How long a round lasts and at what rate (open loop).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sizing {
    /// Seconds of load.
    pub seconds: f64,
    /// Requests per second the peer managed in its warm-up (sizes counted shapes).
    pub warmup_rps: Option<f64>,
    /// Offered rate for open-loop shapes.
    pub rate: Option<f64>,
}

fn url(service: Service, port: u16) -> String {
    match service {
        Service::Http(app) => format!("http://127.0.0.1:{port}{}", app.path()),
        Service::Tls => format!(
            "https://127.0.0.1:{port}{}",
            crate::peers::canned::HELLO_PATH
        ),
        Service::Echo => format!("tcp://127.0.0.1:{port}"),
        Service::Asgi(endpoint) => format!("http://127.0.0.1:{port}{}", endpoint.path()),
        Service::Python(p) if p.is_http() => {
            format!(
                "http://127.0.0.1:{port}{}",
                crate::peers::canned::HELLO_PATH
            )
        }
        Service::Python(_) => format!("tcp://127.0.0.1:{port}"),
    }
}

/// Iterations that make a counted round last about `seconds` at `rps`.
fn iterations(seconds: f64, rps: Option<f64>, per_iteration: f64) -> u64 {
    let rps = rps.unwrap_or(per_iteration * 10.0);
    ((seconds * rps / per_iteration).round() as u64).clamp(3, 2000)
}

/// The `ringway load` arguments (after `ringway load`) for one run. `warmup` runs the
/// shape for `sizing.seconds` whatever it is (counted shapes run as churn or closed
/// loop), so that every warm-up takes the same time and yields a rate.
pub fn load_args(
    service: Service,
    shape: &Shape,
    port: u16,
    sizing: Sizing,
    warmup: bool,
) -> Vec<String> {
    let mut a = shape_args(shape, sizing, warmup);
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
    if service == Service::Tls {
        push(&["--insecure"]);
    }
    push(&[
        "--json",
        "--no-progress",
        "--timeout",
        "2s",
        &url(service, port),
    ]);
    a
}

/// The arguments that give `ringway load` the shape of the load, its length and rate.
fn shape_args(shape: &Shape, sizing: Sizing, warmup: bool) -> Vec<String> {
    let d = format!("{}s", sizing.seconds);
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
    match *shape {
        Shape::Closed { conns, pipeline } => push(&[
            "-c",
            &conns.to_string(),
            "-p",
            &pipeline.to_string(),
            "-d",
            &d,
        ]),
        Shape::Batch { size, fresh } => {
            push(&["--batch", &size.to_string(), "-d", &d]);
            if fresh {
                push(&["-x", "1"]);
            }
        }
        Shape::Iterations { .. } | Shape::Rustlet { .. } => {
            a.extend(counted_args(shape, sizing, warmup));
        }
        Shape::Churn { conns, per_conn } => push(&[
            "-c",
            &conns.to_string(),
            "-x",
            &per_conn.to_string(),
            "-d",
            &d,
        ]),
        Shape::Open { conns, .. } | Shape::Rate { conns, .. } | Shape::Capacity { conns } => {
            push(&["-c", &conns.to_string(), "-d", &d]);
            if !warmup {
                let rate = sizing.rate.unwrap_or(1000.0).max(1.0);
                push(&["-R", &format!("{rate:.0}")]);
            }
        }
        Shape::Echo { conns, size } => push(&[
            "--echo",
            &size.to_string(),
            "-c",
            &conns.to_string(),
            "-d",
            &d,
        ]),
        Shape::EchoFramed { conns } => push(&["--echo-framed", "-c", &conns.to_string(), "-d", &d]),
        Shape::Idle { conns, .. } | Shape::Hostile { conns, .. } => {
            push(&["-c", &conns.to_string(), "-d", &d])
        }
    }
    a
}

/// The arguments of the counted shapes (S3, S6): iterations sized from the warm-up's
/// rate, or, in a warm-up, the shape for the warm-up's seconds.
fn counted_args(shape: &Shape, sizing: Sizing, warmup: bool) -> Vec<String> {
    let d = format!("{}s", sizing.seconds);
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
    match *shape {
        Shape::Iterations {
            conns,
            per_iteration,
        } => {
            if warmup {
                push(&["-c", &conns.to_string(), "-d", &d]);
            } else {
                let i = iterations(sizing.seconds, sizing.warmup_rps, per_iteration as f64);
                push(&[
                    "-c",
                    &conns.to_string(),
                    "-n",
                    &per_iteration.to_string(),
                    "-i",
                    &i.to_string(),
                ]);
            }
        }
        Shape::Rustlet {
            per_conn,
            conns,
            threads,
        } => {
            push(&[
                "-x",
                &per_conn.to_string(),
                "-c",
                &conns.to_string(),
                "-t",
                &threads.to_string(),
            ]);
            if warmup {
                push(&["-d", &d]);
            } else {
                let per_iteration = (per_conn * conns as u64) as f64;
                let i = iterations(sizing.seconds, sizing.warmup_rps, per_iteration);
                push(&["-i", &i.to_string()]);
            }
        }
        _ => {}
    }
    a
}

/// Runs `ringway load ARGS` pinned to `cpus` and returns its report.
pub fn run(
    ringway: &Path,
    cpus: Option<&str>,
    args: &[String],
    limit: Duration,
) -> Result<ClientRun, String> {
    let mut argv = vec![ringway.display().to_string(), "load".to_string()];
    argv.extend(args.iter().cloned());
    let started = Instant::now();
    let mut proc = Watched::spawn_in(cpus, &argv, &[], None)
        .map_err(|e| format!("cannot start the client `{}`: {e}", argv.join(" ")))?;
    let deadline = started + limit;
    let mut stdout = String::new();
    loop {
        match proc.next_event(deadline) {
            Ok(Event::Line(Stream::Stdout, line)) => {
                stdout.push_str(&line);
                stdout.push('\n');
            }
            Ok(_) => {}
            Err(WaitError::Closed) => break,
            Err(WaitError::Timeout) => {
                let _ = proc.stop(Duration::from_secs(2));
                return Err(format!(
                    "the client ran past {}s and was stopped: `{}`",
                    limit.as_secs(),
                    argv.join(" ")
                ));
            }
        }
    }
    let (status, cpu) = proc
        .wait_with_cpu(Duration::from_secs(10))
        .map_err(|e| format!("waiting for the client: {e}"))?
        .ok_or("the client closed its output but did not exit")?;
    let wall = started.elapsed();
    if !status.success() {
        return Err(format!(
            "the client failed ({status}): {}",
            proc.stderr_tail()
        ));
    }
    let report: LoadReport = serde_json::from_str(&stdout).map_err(|e| {
        format!(
            "unreadable client report ({e}): {}",
            stdout.chars().take(300).collect::<String>()
        )
    })?;
    Ok(ClientRun { report, cpu, wall })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::canned::App;

    const HELLO: Service = Service::Http(App::Hello);

    fn sizing(rps: Option<f64>) -> Sizing {
        Sizing {
            seconds: 2.0,
            warmup_rps: rps,
            rate: Some(12345.6),
        }
    }

    #[test]
    fn closed_pipelined_and_open_loop_arguments() {
        let a = load_args(
            HELLO,
            &Shape::Closed {
                conns: 50,
                pipeline: 16,
            },
            8080,
            sizing(None),
            false,
        );
        assert_eq!(
            a.join(" "),
            "-c 50 -p 16 -d 2s --json --no-progress --timeout 2s http://127.0.0.1:8080/plaintext"
        );
        let open = load_args(
            HELLO,
            &Shape::Open {
                conns: 50,
                percent: 90,
            },
            1,
            sizing(None),
            false,
        );
        assert!(open.join(" ").contains("-R 12346"));
        let warm = load_args(
            HELLO,
            &Shape::Open {
                conns: 50,
                percent: 90,
            },
            1,
            sizing(None),
            true,
        );
        assert!(!warm.contains(&"-R".to_string()), "warm-up is closed loop");
        let tls = load_args(
            Service::Tls,
            &Shape::Closed {
                conns: 1,
                pipeline: 1,
            },
            9,
            sizing(None),
            false,
        );
        assert!(tls.contains(&"--insecure".to_string()));
        assert!(tls.last().unwrap().starts_with("https://"));
        let echo = load_args(
            Service::Echo,
            &Shape::Echo {
                conns: 10,
                size: 64,
            },
            7,
            sizing(None),
            false,
        );
        assert_eq!(echo[..2], ["--echo".to_string(), "64".to_string()]);
        assert_eq!(echo.last().unwrap(), "tcp://127.0.0.1:7");
    }

    #[test]
    fn counted_shapes_are_sized_from_the_warmup_rate() {
        let it = Shape::Iterations {
            conns: 50,
            per_iteration: 1000,
        };
        let a = load_args(HELLO, &it, 1, sizing(Some(100_000.0)), false).join(" ");
        assert!(a.starts_with("-c 50 -n 1000 -i 200 "), "{a}");
        let slow = load_args(HELLO, &it, 1, sizing(Some(10.0)), false).join(" ");
        assert!(slow.contains("-i 3 "), "at least 3 iterations: {slow}");
        let r = Shape::Rustlet {
            per_conn: 100,
            conns: 10,
            threads: 2,
        };
        let a = load_args(HELLO, &r, 1, sizing(Some(50_000.0)), false).join(" ");
        assert!(a.starts_with("-x 100 -c 10 -t 2 -i 100 "), "{a}");
        let w = load_args(HELLO, &r, 1, sizing(Some(50_000.0)), true).join(" ");
        assert!(w.starts_with("-x 100 -c 10 -t 2 -d 2s "), "{w}");
    }

    #[test]
    fn reads_a_real_report_shape() {
        let text = r#"{"mode":"closed","requests":10,"duration_s":1.0,"rps":10.0,
            "latency_us":{"count":10,"mean":5.0,"stdev":1.0,"min":1.0,"p50":4.0,"p75":5.0,
            "p90":6.0,"p99":7.0,"p999":8.0,"max":9.0},"errors":{"read":1},"histogram":[[4.0,10]]}"#;
        let r: LoadReport = serde_json::from_str(text).unwrap();
        assert_eq!(r.latency_us.p999, 8.0);
        assert_eq!(r.error_total(), 1);
        assert_eq!(r.histogram, [(4.0, 10)]);
    }
}
