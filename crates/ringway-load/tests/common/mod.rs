//! Shared by the integration tests: the counting test server as a child process (bound
//! to 127.0.0.1 on a free port, stopped by its pid), and short-hand for running the
//! load generator in-process.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use ringway_load::cli::LoadArgs;
use ringway_load::Report;

/// What the server counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub requests: u64,
    pub responses: u64,
    pub connections: u64,
    /// With `--hold N`: the most requests held at once.
    pub held_max: u64,
    /// With `--hold N`: requests the barrier let go by its timeout.
    pub hold_timeouts: u64,
}

/// A running test server; stopped (by its pid) when dropped.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub addr: SocketAddr,
}

impl Server {
    /// Starts `ringway-load-testserver` with `args`, pinned with `taskset -c CPU` if
    /// `cpu` is given (and taskset exists).
    pub(crate) fn start_on(cpu: Option<usize>, args: &[&str]) -> Server {
        Server::start_with(cpu, None, args)
    }

    /// As [`start_on`](Self::start_on), with `RINGWAY_BACKEND=backend` for the server.
    pub(crate) fn start_with(cpu: Option<usize>, backend: Option<&str>, args: &[&str]) -> Server {
        let exe = env!("CARGO_BIN_EXE_ringway-load-testserver");
        let mut cmd = match cpu {
            Some(c) if Command::new("taskset").arg("-V").output().is_ok() => {
                let mut c2 = Command::new("taskset");
                c2.args(["-c", &c.to_string(), exe]);
                c2
            }
            _ => Command::new(exe),
        };
        if let Some(b) = backend {
            cmd.env("RINGWAY_BACKEND", b);
        }
        let mut child = cmd
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the test server");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("server's first line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected server output {line:?}"))
            .parse()
            .expect("address");
        Server {
            child,
            stdin,
            stdout,
            addr,
        }
    }

    pub(crate) fn start(args: &[&str]) -> Server {
        Server::start_on(None, args)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Closes its stdin, reads its counts, and waits for it to exit (killing it by pid
    /// after 5 s).
    pub(crate) fn stop(mut self) -> Counts {
        drop(self.stdin.take());
        let mut rest = String::new();
        let _ = self.stdout.read_to_string(&mut rest);
        self.reap();
        let mut c = Counts {
            requests: 0,
            responses: 0,
            connections: 0,
            held_max: 0,
            hold_timeouts: 0,
        };
        for part in rest.split_whitespace() {
            let (k, v) = part.split_once('=').expect("key=value");
            let v: u64 = v.parse().expect("a count");
            match k {
                "requests" => c.requests = v,
                "responses" => c.responses = v,
                "connections" => c.connections = v,
                "held_max" => c.held_max = v,
                "hold_timeouts" => c.hold_timeouts = v,
                _ => {}
            }
        }
        c
    }

    fn reap(&mut self) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        kill(self.child.id());
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            kill(self.child.id());
            let _ = self.child.wait();
        }
    }
}

/// Sends SIGKILL to `pid`.
pub(crate) fn kill(pid: u32) {
    // SAFETY: kill() takes no pointers; the pid is our own child's.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

/// Parses `ringway load` arguments (without the program name).
pub(crate) fn args(a: &[&str]) -> LoadArgs {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        load: LoadArgs,
    }
    let mut all = vec!["ringway-load", "--no-progress"];
    all.extend_from_slice(a);
    Cli::try_parse_from(all).expect("valid arguments").load
}

/// Runs `ringway load` in-process; returns the report and the printed text.
pub(crate) fn load(a: &[&str]) -> (Report, String) {
    let mut out = Vec::new();
    let report = ringway_load::cli::execute(&args(a), &mut out).expect("the run works");
    (report, String::from_utf8(out).expect("text output"))
}

/// Runs and returns the error message.
pub(crate) fn load_err(a: &[&str]) -> String {
    let mut out = Vec::new();
    match ringway_load::cli::execute(&args(a), &mut out) {
        Ok(r) => panic!("expected an error, got {} requests", r.requests),
        Err(e) => e.to_string(),
    }
}
