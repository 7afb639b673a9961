//! The examples run: the axum example is started as a process (on a free port) and
//! answers its routes; the hyper hello example answers the benchmark suite's canonical
//! response byte for byte (but the date); the TLS + h2 and WebSocket examples (and their
//! tokio peers) serve `compat_load`, the benchmark's client, which checks every
//! response and echo. Every ringway example runs on both backends, chosen by
//! `RINGWAY_BACKEND` (as a user would) unless `--backend` says otherwise, and each run
//! checks the backend its banner reports. A second server on a port that one holds
//! exits with `AddrInUse`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Each backend as `RINGWAY_BACKEND` names it, and how a ringway example's banner
/// (which prints `Runtime::backend()`) reports it.
const BACKENDS: [(&str, &str); 2] = [("uring", "(io_uring ("), ("epoll", "(epoll (")];

/// target/<profile>/examples/<name>, next to this test's own executable.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    dir.join("examples").join(name)
}

/// A started example: the process, the address it printed, and its first line.
struct Started {
    child: Running,
    addr: String,
    banner: String,
}

/// Starts an example with `RINGWAY_BACKEND` set to `env_backend` (unset if `None`) and
/// reads the address it prints.
fn start_on(name: &str, args: &[&str], env_backend: Option<&str>) -> Started {
    let mut command = Command::new(example(name));
    command.args(args).stdout(Stdio::piped());
    match env_backend {
        Some(b) => command.env("RINGWAY_BACKEND", b),
        None => command.env_remove("RINGWAY_BACKEND"),
    };
    let child = command.spawn().unwrap_or_else(|e| {
        panic!(
            "start example {name}: {e} (cargo test -p ringway-compat builds the examples; \
             a filtered run needs cargo build -p ringway-compat --examples first)"
        )
    });
    let mut child = Running(child);
    let mut banner = String::new();
    BufReader::new(child.0.stdout.as_mut().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let addr = banner
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{name} printed {banner:?}");
    Started {
        child,
        addr,
        banner,
    }
}

/// Starts an example on the backend `RINGWAY_BACKEND` names, and checks that its banner
/// reports that backend.
fn start_env(name: &str, args: &[&str], (env, reported): (&str, &str)) -> (Running, String) {
    let s = start_on(name, args, Some(env));
    assert!(
        s.banner.contains(reported),
        "{name} {args:?} with RINGWAY_BACKEND={env} reported {:?}",
        s.banner
    );
    (s.child, s.addr)
}

/// A started example process, stopped (by its pid) when dropped: at the end of its run,
/// or when an assertion fails first, so that a failing test leaves no server behind.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        // Already gone (it exited on its own) is fine: the kill then fails, the wait reaps.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stop(child: Running) {
    drop(child);
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
    for backend in BACKENDS {
        let (child, addr) = start_env("axum", &["127.0.0.1:0"], backend);
        axum_routes(&addr);
        stop(child);
    }
}

fn axum_routes(addr: &str) {
    let r = exchange(
        addr,
        "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.contains("\r\nx-powered-by: axum\r\n"), "{r}");
    assert!(r.ends_with("Hello from axum on ringway!"), "{r}");
    let body = r#"{"name":"Ada"}"#;
    let r = exchange(
        addr,
        &format!(
            "POST /users HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(r.starts_with("HTTP/1.1 201 Created\r\n"), "{r}");
    assert!(r.ends_with(r#"{"id":1,"name":"Ada"}"#), "{r}");
    let r = exchange(
        addr,
        "GET /users/1 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.ends_with(r#"{"id":1,"name":"Ada"}"#), "{r}");
    let r = exchange(
        addr,
        "GET /users/9 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"), "{r}");
}

/// Checks the hello examples' answer to `/plaintext`: the canonical response.
fn canonical_hello(addr: &str, what: &str) {
    let r = exchange(
        addr,
        "GET /plaintext HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    // hyper adds `connection: close` when the request asked for it; the rest is the
    // canonical response.
    let date_at = r.find("date: ").expect("a date header") + 6;
    let canonical = format!(
        "HTTP/1.1 200 OK\r\nserver: ringway\r\ndate: {}\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n",
        &r[date_at..date_at + 29]
    );
    assert!(r.starts_with(&canonical), "{what}: {r}");
    assert!(r.ends_with("\r\n\r\nHello, World!"), "{what}: {r}");
}

#[test]
fn hello_examples_answer_the_canonical_response_on_both_runtimes() {
    let bind = ["--bind", "127.0.0.1:0"];
    // hyper on ringway, on the backend RINGWAY_BACKEND names.
    for backend in BACKENDS {
        let (child, addr) = start_env("hello_hyper", &bind, backend);
        canonical_hello(
            &addr,
            &format!("hello_hyper, RINGWAY_BACKEND={}", backend.0),
        );
        stop(child);
    }
    // `--backend` wins over RINGWAY_BACKEND.
    for ((flag, reported), (env, _)) in BACKENDS.into_iter().zip(BACKENDS.into_iter().rev()) {
        let args = ["--bind", "127.0.0.1:0", "--backend", flag];
        let s = start_on("hello_hyper", &args, Some(env));
        assert!(
            s.banner.contains(reported),
            "--backend {flag} with RINGWAY_BACKEND={env}: {:?}",
            s.banner
        );
        canonical_hello(&s.addr, &format!("hello_hyper --backend {flag}"));
        stop(s.child);
    }
    for flavor in ["current_thread", "multi_thread"] {
        let s = start_on(
            "hello_hyper_tokio",
            &["--bind", "127.0.0.1:0", "--flavor", flavor],
            None,
        );
        canonical_hello(&s.addr, &format!("hello_hyper_tokio {flavor}"));
        stop(s.child);
    }
}

/// A second server on a port the first one holds (two processes of one user, both
/// asking for `SO_REUSEPORT`) is refused at start, with a message that says why; the
/// kernel does not split the port's connections between them.
#[test]
fn a_second_server_on_a_held_port_exits_with_addr_in_use() {
    for backend in BACKENDS {
        let (first, addr) = start_env("hello_hyper", &["--bind", "127.0.0.1:0"], backend);
        // Its first line: the banner if it started (the test fails, and the drop stops
        // it), nothing if it exited.
        let mut second = Running(
            Command::new(example("hello_hyper"))
                .args(["--bind", &addr])
                .env("RINGWAY_BACKEND", backend.0)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run hello_hyper"),
        );
        let mut line = String::new();
        BufReader::new(second.0.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.is_empty(), "a second server started on {addr}: {line}");
        let mut stderr = String::new();
        second
            .0
            .stderr
            .as_mut()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = second.0.wait().unwrap();
        assert!(!status.success(), "{status}: {stderr}");
        assert!(
            stderr.contains("AddrInUse") && stderr.contains(&format!("cannot bind {addr}")),
            "{stderr}"
        );
        assert!(stderr.contains("another socket listens on"), "{stderr}");
        // The first still serves every connection.
        for _ in 0..8 {
            canonical_hello(&addr, "the first server");
        }
        stop(first);
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
    // The ringway examples on each backend (by RINGWAY_BACKEND), then the tokio peers.
    let runs = |name: &'static str| -> Vec<(&'static str, Option<(&'static str, &'static str)>)> {
        if name.ends_with("_tokio") {
            vec![(name, None)]
        } else {
            BACKENDS.iter().map(|&b| (name, Some(b))).collect()
        }
    };
    let start = |name: &str, args: &[&str], backend: Option<(&str, &str)>| match backend {
        Some(b) => start_env(name, args, b),
        None => {
            let s = start_on(name, args, None);
            (s.child, s.addr)
        }
    };
    for (name, backend) in ["axum_tls", "axum_tls_tokio"].into_iter().flat_map(runs) {
        let cert = dir.join(format!("{name}.pem"));
        let cert = cert.to_str().unwrap();
        let (child, addr) = start(
            name,
            &["--bind", "127.0.0.1:0", "--cert-out", cert],
            backend,
        );
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
        assert!(n > 0, "{name} {backend:?}: no request completed");
        stop(child);
    }
    for (name, backend) in ["axum_ws", "axum_ws_tokio"].into_iter().flat_map(runs) {
        let (child, addr) = start(name, &["--bind", "127.0.0.1:0"], backend);
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
        assert!(n > 0, "{name} {backend:?}: no message echoed");
        stop(child);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
