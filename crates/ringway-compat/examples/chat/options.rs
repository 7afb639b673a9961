//! The command line: `--name value` pairs, each checked, with a message that says what
//! was expected.

use std::path::PathBuf;
use std::time::Duration;

pub(crate) const USAGE: &str = "\
usage: chat [--bind ADDR] [--threads N] [--backend auto|uring|epoll]
            [--cert FILE --key FILE | --cert-out FILE] [--worker COMMAND]
            [--data DIR] [--history N] [--request-timeout DURATION] [--drain DURATION]
durations are a number with ms or s: 300ms, 10s";

/// The default worker: a word filter, one message per line in and out, unbuffered
/// (`-u`), run by `sh -c` (`exec`, so the worker is `sed` itself).
pub(crate) const DEFAULT_WORKER: &str = r"exec sed -u -E 's/\b(darn|drat|heck)\b/****/Ig'";

/// What the service is told.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Where to listen (port 0: any free port; the address is printed).
    pub(crate) bind: String,
    /// Cores (threads) of the runtime.
    pub(crate) threads: usize,
    /// `--backend`; without it, `RINGWAY_BACKEND` or the probe chooses.
    pub(crate) backend: Option<ringway::Backend>,
    /// A certificate chain and key (PEM) to serve, instead of a self-signed one.
    pub(crate) cert: Option<(PathBuf, PathBuf)>,
    /// Where to write the self-signed certificate (PEM), for clients to trust.
    pub(crate) cert_out: Option<PathBuf>,
    /// The worker process, run by `sh -c`.
    pub(crate) worker: String,
    /// Where room histories are saved at shutdown and loaded from at start.
    pub(crate) data: Option<PathBuf>,
    /// Messages kept per room.
    pub(crate) history: usize,
    /// Longest a request may take before it is answered `408 Request Timeout`.
    pub(crate) request_timeout: Duration,
    /// At shutdown, how long connections and WebSocket sessions get to finish.
    pub(crate) drain: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bind: "127.0.0.1:8443".to_string(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            backend: None,
            cert: None,
            cert_out: None,
            worker: DEFAULT_WORKER.to_string(),
            data: None,
            history: 100,
            request_timeout: Duration::from_secs(10),
            drain: Duration::from_secs(10),
        }
    }
}

impl Options {
    /// Parses `args` (without the program's name).
    pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut o = Options::default();
        let (mut cert, mut key) = (None, None);
        let mut args = args.into_iter();
        while let Some(name) = args.next() {
            if name == "--help" || name == "-h" {
                return Err(String::new());
            }
            let value = args.next().ok_or_else(|| format!("{name} needs a value"))?;
            match name.as_str() {
                "--bind" => o.bind = value,
                "--threads" => {
                    o.threads =
                        value.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                            format!("--threads takes a number above 0, not {value:?}")
                        })?
                }
                "--backend" => {
                    o.backend = Some(value.parse().map_err(|e| format!("--backend: {e}"))?)
                }
                "--cert" => cert = Some(PathBuf::from(value)),
                "--key" => key = Some(PathBuf::from(value)),
                "--cert-out" => o.cert_out = Some(PathBuf::from(value)),
                "--worker" => o.worker = value,
                "--data" => o.data = Some(PathBuf::from(value)),
                "--history" => {
                    o.history =
                        value.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                            format!("--history takes a number above 0, not {value:?}")
                        })?
                }
                "--request-timeout" => o.request_timeout = duration(&name, &value)?,
                "--drain" => o.drain = duration(&name, &value)?,
                _ => return Err(format!("unknown option {name}")),
            }
        }
        match (cert, key) {
            (Some(c), Some(k)) => o.cert = Some((c, k)),
            (None, None) => {}
            _ => return Err("--cert and --key go together".to_string()),
        }
        if o.cert.is_some() && o.cert_out.is_some() {
            return Err(
                "--cert-out writes the self-signed certificate; with --cert there is none"
                    .to_string(),
            );
        }
        Ok(o)
    }
}

/// `300ms`, `10s`.
fn duration(name: &str, value: &str) -> Result<Duration, String> {
    let bad = || format!("{name} takes a duration such as 300ms or 10s, not {value:?}");
    let (number, unit) = value
        .find(|c: char| !c.is_ascii_digit())
        .map(|at| value.split_at(at))
        .ok_or_else(bad)?;
    let n: u64 = number.parse().map_err(|_| bad())?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        _ => Err(bad()),
    }
}
