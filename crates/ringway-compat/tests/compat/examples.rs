//! The examples run: the axum example is started as a process (on a free port) and
//! answers its routes; the hyper hello example answers the benchmark suite's canonical
//! response byte for byte (but the date); the TLS + h2 and WebSocket examples (and their
//! tokio peers) serve `compat_load`, the benchmark's client, which checks every
//! response and echo.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// target/<profile>/examples/<name>, next to this test's own executable.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    dir.join("examples").join(name)
}

/// Starts an example and reads the address it prints.
fn start(name: &str, args: &[&str]) -> (Child, String) {
    let mut child = Command::new(example(name))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "start example {name}: {e} (cargo test -p ringway-compat builds the examples; \
                 a filtered run needs cargo build -p ringway-compat --examples first)"
            )
        });
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{name} printed {line:?}");
    (child, addr)
}

fn stop(mut child: Child) {
    // By its pid, as every test that starts a server does.
    child.kill().unwrap();
    child.wait().unwrap();
}

fn exchange(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn axum_example_serves_its_routes() {
    let (child, addr) = start("axum", &["127.0.0.1:0"]);
    let r = exchange(
        &addr,
        "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.contains("\r\nx-powered-by: axum\r\n"), "{r}");
    assert!(r.ends_with("Hello from axum on ringway!"), "{r}");
    let body = r#"{"name":"Ada"}"#;
    let r = exchange(
        &addr,
        &format!(
            "POST /users HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(r.starts_with("HTTP/1.1 201 Created\r\n"), "{r}");
    assert!(r.ends_with(r#"{"id":1,"name":"Ada"}"#), "{r}");
    let r = exchange(
        &addr,
        "GET /users/1 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.ends_with(r#"{"id":1,"name":"Ada"}"#), "{r}");
    let r = exchange(
        &addr,
        "GET /users/9 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"), "{r}");
    stop(child);
}

#[test]
fn hello_examples_answer_the_canonical_response_on_both_runtimes() {
    for (name, args) in [
        (
            "hello_hyper",
            vec!["--bind", "127.0.0.1:0", "--backend", "uring"],
        ),
        (
            "hello_hyper",
            vec!["--bind", "127.0.0.1:0", "--backend", "epoll"],
        ),
        (
            "hello_hyper_tokio",
            vec!["--bind", "127.0.0.1:0", "--flavor", "current_thread"],
        ),
        (
            "hello_hyper_tokio",
            vec!["--bind", "127.0.0.1:0", "--flavor", "multi_thread"],
        ),
    ] {
        let (child, addr) = start(name, &args);
        let r = exchange(
            &addr,
            "GET /plaintext HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        );
        // hyper adds `connection: close` when the request asked for it; the rest is
        // the canonical response.
        let date_at = r.find("date: ").expect("a date header") + 6;
        let canonical = format!(
            "HTTP/1.1 200 OK\r\nserver: ringway\r\ndate: {}\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n",
            &r[date_at..date_at + 29]
        );
        assert!(r.starts_with(&canonical), "{name} {args:?}: {r}");
        assert!(r.ends_with("\r\n\r\nHello, World!"), "{name} {args:?}: {r}");
        stop(child);
    }
}

/// Runs `compat_load` with `args` for a fraction of a second; its request count.
fn load(args: &[&str]) -> u64 {
    let out = Command::new(example("compat_load"))
        .args(args)
        .args(["--seconds", "0.3"])
        .output()
        .expect("run compat_load");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "compat_load {args:?}: {text} {out:?}");
    assert!(text.contains("errors: 0"), "compat_load {args:?}: {text}");
    text.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("compat_load {args:?}: {text}"))
}

#[test]
fn tls_and_websocket_examples_serve_the_benchmark_client() {
    let dir = std::env::temp_dir().join(format!("ringway-compat-examples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["axum_tls", "axum_tls_tokio"] {
        let cert = dir.join(format!("{name}.pem"));
        let cert = cert.to_str().unwrap();
        let (child, addr) = start(name, &["--bind", "127.0.0.1:0", "--cert-out", cert]);
        let n = load(&[
            "--mode",
            "h2",
            "--addr",
            &addr,
            "--ca",
            cert,
            "--connections",
            "2",
            "--streams",
            "4",
        ]);
        assert!(n > 0, "{name}: no request completed");
        stop(child);
    }
    for name in ["axum_ws", "axum_ws_tokio"] {
        let (child, addr) = start(name, &["--bind", "127.0.0.1:0"]);
        let n = load(&[
            "--mode",
            "ws",
            "--addr",
            &addr,
            "--connections",
            "4",
            "--depth",
            "2",
        ]);
        assert!(n > 0, "{name}: no message echoed");
        stop(child);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
