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
    let mut child = Command::new(ringway_bin())
        .args(["serve", "--bind", "127.0.0.1:0", "--threads", "2"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ringway serve");
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
    let out = s.child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit status {:?}", out.status);
    (String::from_utf8_lossy(&out.stderr).into_owned(), rest)
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
