//! Starting a server under measurement and knowing when it is ready.
//!
//! Every server gets a fresh loopback port (see [`crate::measure::ports`]) substituted for
//! `{port}` in its command line, is pinned with `taskset`, and counts as ready when it
//! prints a line containing `listening on` (every program of this workspace does) or,
//! for programs that print nothing (nginx), when the port accepts a connection. A server
//! that exits before it is ready is retried on another port a few times: the port may
//! have been taken between the pick and the bind.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::measure::ports::pick_free_port;
use crate::measure::process::{Stream, WaitError, Watched};

/// How long a server may take to become ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Grace between SIGTERM and SIGKILL when stopping.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// Attempts to start a server that exits at once.
const START_ATTEMPTS: usize = 3;

/// How a server says it is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// A stdout line containing `listening on`.
    ListeningLine,
    /// The port accepts a TCP connection.
    PortOpen,
}

/// How to start one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// Command line; every `{port}` is replaced by the port.
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory, if it matters.
    pub cwd: Option<PathBuf>,
    /// How readiness shows.
    pub ready: Ready,
    /// Files written before each start, with `{port}` replaced in their text (a
    /// generated configuration that names the port, as nginx's does).
    pub files: Vec<(PathBuf, String)>,
    /// A command the server runs under (`ip netns exec NS` puts it in another network
    /// namespace); empty: none.
    pub prefix: Vec<String>,
}

impl LaunchSpec {
    /// A spec that waits for the `listening on` line.
    pub fn new(argv: Vec<String>) -> LaunchSpec {
        LaunchSpec {
            argv,
            env: Vec::new(),
            cwd: None,
            ready: Ready::ListeningLine,
            files: Vec::new(),
            prefix: Vec::new(),
        }
    }

    /// The command line for `port`, under the prefix.
    pub fn command(&self, port: u16) -> Vec<String> {
        let port = port.to_string();
        self.prefix
            .iter()
            .cloned()
            .chain(self.argv.iter().map(|a| a.replace("{port}", &port)))
            .collect()
    }
}

/// A server that is ready.
#[derive(Debug)]
pub struct RunningServer {
    /// The process (pinned; the program's own pid).
    pub proc: Watched,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl RunningServer {
    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `true` while the process has not exited.
    pub fn alive(&mut self) -> bool {
        matches!(self.proc.try_wait(), Ok(None))
    }
}

/// Starts `spec` pinned to `cpus` (a `taskset -c` list such as `0` or `0-1`) with a
/// fresh port chosen by `port_for`, typically [`pick_free_port`]. `port_for` is called
/// again for each retry.
pub fn start(spec: &LaunchSpec, cpus: Option<&str>) -> Result<RunningServer, String> {
    start_with(spec, cpus, || {
        pick_free_port().map_err(|e| format!("no free port: {e}"))
    })
}

/// [`start`] with the port chosen by `port_for`.
pub fn start_with(
    spec: &LaunchSpec,
    cpus: Option<&str>,
    mut port_for: impl FnMut() -> Result<u16, String>,
) -> Result<RunningServer, String> {
    let mut last_err = String::new();
    for _ in 0..START_ATTEMPTS {
        let port = port_for()?;
        let argv = spec.command(port);
        for (path, text) in &spec.files {
            std::fs::write(path, text.replace("{port}", &port.to_string()))
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        let mut proc = Watched::spawn_in(cpus, &argv, &spec.env, spec.cwd.as_deref())
            .map_err(|e| format!("cannot start `{}`: {e}", argv.join(" ")))?;
        let outcome = match spec.ready {
            Ready::ListeningLine => proc
                .wait_for_line(
                    Stream::Stdout,
                    |l| l.contains("listening on"),
                    READY_TIMEOUT,
                )
                .map(|_| ()),
            Ready::PortOpen => wait_port(&mut proc, port),
        };
        match outcome {
            Ok(()) => return Ok(RunningServer { proc, port }),
            Err(WaitError::Timeout) => {
                let tail = proc.stderr_tail();
                let _ = proc.stop(KILL_GRACE);
                return Err(format!(
                    "not ready within {}s: `{}`; stderr: {tail}",
                    READY_TIMEOUT.as_secs(),
                    argv.join(" ")
                ));
            }
            Err(WaitError::Closed) => {
                let status = proc.wait_timeout(KILL_GRACE).ok().flatten();
                // Drain late stderr lines so the message is complete.
                while proc
                    .next_event(Instant::now() + Duration::from_millis(200))
                    .is_ok()
                {}
                last_err = format!(
                    "`{}` exited before it was ready ({}); stderr: {}",
                    argv.join(" "),
                    status
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| "still running".into()),
                    proc.stderr_tail()
                );
                let _ = proc.stop(KILL_GRACE);
            }
        }
    }
    Err(last_err)
}

/// Polls the port until it accepts, the process exits, or the timeout passes.
fn wait_port(proc: &mut Watched, port: u16) -> Result<(), WaitError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if !matches!(proc.try_wait(), Ok(None)) {
            return Err(WaitError::Closed);
        }
        if Instant::now() >= deadline {
            return Err(WaitError::Timeout);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn port_is_substituted_everywhere() {
        let spec = LaunchSpec::new(argv(&["srv", "--bind", "127.0.0.1:{port}", "x{port}"]));
        assert_eq!(
            spec.command(81),
            argv(&["srv", "--bind", "127.0.0.1:81", "x81"])
        );
    }

    #[test]
    fn ready_by_line_and_by_port() {
        let spec = LaunchSpec::new(argv(&[
            "sh",
            "-c",
            "echo 'srv listening on {port}'; sleep 30",
        ]));
        let mut s = start(&spec, None).unwrap();
        assert!(s.alive());
        s.proc.stop(KILL_GRACE).unwrap();

        // A real listener that prints nothing: python is not assumed, so hold a port
        // open ourselves and point a silent sleeper at it.
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let spec = LaunchSpec {
            ready: Ready::PortOpen,
            ..LaunchSpec::new(argv(&["sleep", "30"]))
        };
        let mut s = start_with(&spec, None, || Ok(port)).unwrap();
        assert_eq!(s.port, port);
        s.proc.stop(KILL_GRACE).unwrap();
    }

    #[test]
    fn a_server_that_exits_is_reported_with_its_stderr() {
        let spec = LaunchSpec::new(argv(&["sh", "-c", "echo 'bind: in use' >&2; exit 3"]));
        let err = start(&spec, None).unwrap_err();
        assert!(err.contains("exited before it was ready"), "{err}");
        assert!(err.contains("bind: in use"), "{err}");
    }
}
