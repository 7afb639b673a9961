//! `ringway serve` as a child process: it prints where it listens and on which backend,
//! answers --hello, --json and --echo-request, writes the access log (common format),
//! counts errors by class, and on SIGTERM drains and exits cleanly.
//! The binary is built by `cargo build -p ringway-cli` (the same target directory).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;
use common::ringway_bin;

struct Served {
    child: Child,
    addr: String,
    banner: String,
    stdout: BufReader<std::process::ChildStdout>,
}

fn serve(args: &[&str]) -> Served {
    serve_limited(args, None)
}

/// [`serve`], with at most `nofile` descriptors open in the server (`RLIMIT_NOFILE`).
fn serve_limited(args: &[&str], nofile: Option<u64>) -> Served {
    // Two cores unless the test says otherwise.
    let threads: &[&str] = if args.contains(&"--threads") {
        &[]
    } else {
        &["--threads", "2"]
    };
    let mut cmd = Command::new(ringway_bin());
    cmd.args(["serve", "--bind", "127.0.0.1:0"])
        .args(threads)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(n) = nofile {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // setrlimit, which is async-signal-safe; `lim` lives on its own stack.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("spawn ringway serve");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Served {
        child,
        addr,
        banner: line,
        stdout,
    }
}

impl Drop for Served {
    /// A test that fails halfway must not leave its server running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill has no memory preconditions; the pid is our own child, not
            // yet waited for.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGKILL) };
            let _ = self.child.wait();
        }
    }
}

fn get(addr: &str, req: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// SIGTERM, then the exit status must be 0; returns (stderr, the rest of stdout).
fn stop(mut s: Served) -> (String, String) {
    // SAFETY: kill has no memory preconditions; the pid is our own child, not yet
    // waited for, so it cannot have been reused.
    let r = unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    assert_eq!(r, 0);
    let mut rest = String::new();
    s.stdout.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    s.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = s.child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
    (err, rest)
}

#[test]
fn serve_hello_json_echo_and_sigterm() {
    // Access log on (the default) for this one.
    let s = serve(&["--hello"]);
    assert!(s.banner.contains("backend"), "{}", s.banner);
    let r = get(
        &s.addr,
        "GET /plaintext HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.contains("content-type: text/plain\r\n") && r.ends_with("\r\n\r\nHello, World!"));
    let r = get(&s.addr, "GET / HTTP/1.0\r\n\r\n");
    assert!(r.ends_with("Hello, World!"));
    let r = get(
        &s.addr,
        "GET /plaintext HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{r}");
    let (err, log) = stop(s);
    assert!(err.contains("stopped: requests 2"), "{err}");
    assert!(
        err.contains("bad_request 1"),
        "error counters by class: {err}"
    );
    // Common log format: host ident user [date] "request" status bytes. Each core
    // hands its lines over in batches: lines of different cores (two here) may come
    // out of order, so each is looked for.
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "stdout: {log:?} stderr: {err}");
    assert!(
        lines.iter().all(|l| l.starts_with("127.0.0.1 - - [")),
        "{log}"
    );
    for end in [
        " +0000] \"GET /plaintext HTTP/1.1\" 200 13",
        "] \"GET / HTTP/1.0\" 200 13",
        "] \"-\" 400 -",
    ] {
        assert!(lines.iter().any(|l| l.ends_with(end)), "{end} in {log}");
    }

    let s = serve(&["--json", "--backend", "epoll", "--no-access-log"]);
    assert!(s.banner.contains("epoll"), "{}", s.banner);
    let r = get(
        &s.addr,
        "GET /json HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    );
    assert!(r.ends_with("{\"message\":\"Hello, World!\"}"), "{r}");
    stop(s);

    let s = serve(&["--echo-request", "--no-access-log"]);
    let r = get(
        &s.addr,
        "POST /x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    );
    let body = r.split("\r\n\r\n").nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["method"], "POST");
    assert_eq!(v["target"], "/x?y=1");
    assert_eq!(v["version"], "HTTP/1.1");
    assert_eq!(v["body"], "abc");
    assert_eq!(v["headers"][0][0], "host");
    stop(s);
}

/// Runs `ringway ARGS` to its end, killing it (and failing) if it has not ended within
/// `limit`. Returns its exit status and stderr.
fn run_bounded(args: &[&str], limit: Duration) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(ringway_bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ringway");
    let t = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status, err);
        }
        if t.elapsed() > limit {
            // SAFETY: kill has no memory preconditions; the pid is our own child, not
            // yet waited for.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            let _ = child.wait();
            panic!("`ringway {}` still running after {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A second server on a port a running one holds must fail as nginx does (address in
/// use, non-zero exit), not start and take half of the connections; the cores of one
/// server still share their port. Same for `ringway echo`.
#[test]
fn a_second_server_on_a_held_port_is_refused() {
    let first = serve(&["--hello", "--no-access-log"]);
    let addr = first.addr.clone();
    let (status, err) = run_bounded(
        &["serve", "--hello", "--no-access-log", "--bind", &addr],
        Duration::from_secs(20),
    );
    assert!(!status.success(), "the second serve exited with {status:?}");
    assert!(
        err.to_ascii_lowercase().contains("address already in use"),
        "stderr: {err}"
    );
    // Every connection still reaches the first server (its two cores share the port).
    for _ in 0..40 {
        let r = get(
            &addr,
            "GET /plaintext HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        );
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    }
    let (err, _) = stop(first);
    assert!(err.contains("requests 40 "), "{err}");

    // ringway echo: the same bootstrap, the same refusal.
    let mut echo = Command::new(ringway_bin())
        .args(["echo", "--bind", "127.0.0.1:0", "--threads", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ringway echo");
    let mut line = String::new();
    BufReader::new(echo.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let echo_addr = line
        .split("listening on ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let (status, err) = run_bounded(&["echo", "--bind", &echo_addr], Duration::from_secs(20));
    // SAFETY: as above, our own child.
    unsafe { libc::kill(echo.id() as i32, libc::SIGKILL) };
    let _ = echo.wait();
    assert!(!status.success(), "the second echo exited with {status:?}");
    assert!(
        err.to_ascii_lowercase().contains("address already in use"),
        "stderr: {err}"
    );
}

/// With the access log on and nobody reading standard output (a full pipe), requests
/// are still served: lines the log cannot take are dropped and counted, and the server
/// still stops on SIGTERM within its drain deadline.
#[test]
fn a_stalled_stdout_never_stalls_requests() {
    let mut s = serve(&["--hello", "--threads", "1", "--drain-timeout-ms", "500"]);
    // From here on nobody reads the server's standard output: after the pipe's 64 KiB
    // and the log's bounded queue, every line must be dropped, not waited for.
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let batch = "GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n".repeat(50);
    let mut answered = 0;
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    for round in 0..200 {
        c.write_all(batch.as_bytes()).unwrap();
        let mut got = 0;
        while got < 50 {
            let n = match c.read(&mut buf) {
                Ok(0) => panic!("closed in round {round}"),
                Ok(n) => n,
                Err(e) => panic!("round {round}: no response ({e}): the server stalled"),
            };
            pending.extend_from_slice(&buf[..n]);
            let ends = pending
                .windows(13)
                .filter(|w| w == b"Hello, World!")
                .count();
            got += ends;
            if ends > 0 {
                let last = pending
                    .windows(13)
                    .rposition(|w| w == b"Hello, World!")
                    .unwrap();
                pending.drain(..last + 13);
            }
        }
        answered += got;
    }
    assert_eq!(answered, 10_000);
    drop(c);
    // SAFETY: kill has no memory preconditions; our own child, not yet waited for.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) }, 0);
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "ringway serve did not stop with its stdout stalled"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    s.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let dropped: u64 = err
        .split("log_dropped ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no log_dropped count in {err}"));
    assert!(
        dropped > 0 && dropped < 10_000,
        "{dropped} lines dropped: {err}"
    );
    assert!(err.contains("requests 10000"), "{err}");
}

/// The issue-27 reproduction, against the binary: a request whose chunked body is
/// malformed after its head gets one response, the 400, and the close, whichever
/// built-in handler answers it (`--hello` and `--static` answer before reading a body).
#[test]
fn a_bad_chunked_body_gets_one_response_in_every_mode() {
    let dir = std::env::temp_dir().join(format!("ringway-cli-static-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), "<h1>hi</h1>").unwrap();
    let dir_arg = dir.to_str().unwrap().to_string();
    let modes: [&[&str]; 5] = [
        &["--hello"],
        &["--hello", "--http-types"],
        &["--json"],
        &["--echo-request"],
        &["--static", &dir_arg],
    ];
    for mode in modes {
        let mut args = mode.to_vec();
        args.push("--no-access-log");
        let s = serve(&args);
        let r = get(
            &s.addr,
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        );
        assert!(
            r.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{mode:?}: {r}"
        );
        assert_eq!(r.matches("HTTP/1.1 ").count(), 1, "{mode:?}: {r}");
        stop(s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// At the descriptor limit accepting fails (EMFILE): the server backs off, serves on,
/// and says so once per episode of failures, with how many accepts it refused (it said
/// so 7 times in one 15-second flood, each time "once per run").
#[test]
fn emfile_is_reported_once_per_episode_with_its_count() {
    let s = serve_limited(&["--hello", "--threads", "1", "--no-access-log"], Some(48));
    let flood = |addr: &str| {
        // Far more connections than the server has descriptors: the rest wait in the
        // backlog while accepting fails, then are accepted as the first ones close.
        let conns: Vec<TcpStream> = (0..120)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(600));
        drop(conns);
    };
    flood(&s.addr);
    // The episode ends after a quiet second: then its warning.
    std::thread::sleep(Duration::from_millis(2_000));
    // Served on.
    let r = get(
        &s.addr,
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    );
    assert!(r.ends_with("Hello, World!"), "{r}");
    flood(&s.addr);
    std::thread::sleep(Duration::from_millis(2_000));
    let (err, _) = stop(s);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("accept refused"))
        .collect();
    assert_eq!(warnings.len(), 2, "one warning per episode: {err}");
    let mut refused = 0;
    for w in &warnings {
        let n: u64 = w
            .split("accept refused ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count in {w:?}"));
        assert!(n >= 5, "a 600 ms flood refuses accepts every 20 ms: {w}");
        assert!(w.contains("Too many open files"), "{w}");
        refused += n;
    }
    let accept_errors: u64 = err
        .split("accept_errors ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no accept_errors in {err}"));
    assert_eq!(refused, accept_errors, "{err}");
}

/// `--max-connections`: a connection beyond it is closed at once and counted.
#[test]
fn max_connections_flag() {
    let s = serve(&[
        "--hello",
        "--threads",
        "1",
        "--no-access-log",
        "--max-connections",
        "2",
    ]);
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(&s.addr).unwrap())
        .collect();
    for c in &mut held {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let mut buf = [0u8; 512];
        let n = c.read(&mut buf).unwrap();
        assert!(buf[..n].ends_with(b"Hello, World!"));
    }
    let mut third = TcpStream::connect(&s.addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = third.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let mut buf = [0u8; 512];
    match third.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the third connection got {other:?}"),
    }
    drop(held);
    let (err, _) = stop(s);
    assert!(err.contains("over_limit 1"), "{err}");
    let bad = run_bounded(
        &["serve", "--max-connections", "many"],
        Duration::from_secs(20),
    );
    assert!(
        !bad.0.success() && bad.1.contains("--max-connections"),
        "{}",
        bad.1
    );
}
