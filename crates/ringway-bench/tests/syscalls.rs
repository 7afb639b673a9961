//! The counted check of the runtime issue, independent of the machine's speed: under an
//! echo load of 50 connections x 64 B,
//! - ringway on io_uring makes far fewer than one `io_uring_enter` per echoed message
//!   (it batches: one enter per loop turn, multishot receive, no per-message syscalls);
//! - ringway on epoll makes no more syscalls per message than tokio's `current_thread`
//!   echo server on the same load: exactly one `recv` and one `send` per message (no
//!   `EAGAIN` probe reads), plus a share of `epoll_wait`.
//!
//! Counts come from the kernel's tracepoints (`perf stat -e raw_syscalls:sys_enter,
//! syscalls:sys_enter_io_uring_enter -p PID`), which do not slow the server down the way
//! strace does. The `ringway` binary is built by this test with the cargo that runs it.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use ringway_bench::perfstat::{counter, parse_perf_csv, SYSCALL_EVENTS};
use ringway_bench::process::{Stream, Watched};

/// Directory of this profile's binaries (the test runs from `target/<profile>/deps`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn ringway_binary() -> PathBuf {
    let dir = profile_dir();
    let release = dir.file_name().is_some_and(|n| n == "release");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "-p", "ringway-cli", "--bin", "ringway"]);
    if release {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("run cargo to build the ringway binary");
    assert!(st.success(), "cargo build -p ringway-cli failed");
    let bin = dir.join("ringway");
    assert!(bin.exists(), "{} missing after the build", bin.display());
    bin
}

/// Messages echoed and syscalls the server made while `echo-client` ran.
struct Count {
    messages: u64,
    syscalls: u64,
    enters: u64,
}

fn count(server_argv: &[String]) -> Count {
    assert!(
        Command::new("perf").arg("--version").output().is_ok(),
        "perf is missing: apt-get install linux-perf (scripts/test installs it on CI)"
    );
    let mut server = Watched::spawn(None, server_argv).expect("start the server");
    let line = server
        .wait_for_line(
            Stream::Stdout,
            |l| l.contains("listening on"),
            Duration::from_secs(20),
        )
        .unwrap_or_else(|e| {
            panic!(
                "{server_argv:?} did not start: {e:?} {}",
                server.stderr_tail()
            )
        });
    let addr = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("listening line names the address")
        .to_string();
    let out = std::env::temp_dir().join(format!(
        "ringway-perf-{}-{}",
        std::process::id(),
        server.pid()
    ));
    let mut perf = Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            SYSCALL_EVENTS,
            "-p",
            &server.pid().to_string(),
            "-o",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start perf");
    // perf says nothing once attached; the server is idle until the client starts.
    std::thread::sleep(Duration::from_millis(500));
    let client = Command::new(env!("CARGO_BIN_EXE_echo-client"))
        .args(["--addr", &addr, "--conns", "50", "--size", "64"])
        .args(["--duration", "2", "--warmup", "0", "--json"])
        .output()
        .expect("run echo-client");
    assert!(
        client.status.success(),
        "echo-client failed: {}",
        String::from_utf8_lossy(&client.stderr)
    );
    ringway_bench::process::send_signal(perf.id(), libc::SIGINT).unwrap();
    perf.wait().unwrap();
    server.stop(Duration::from_secs(2)).unwrap();
    let text = std::fs::read_to_string(&out).expect("perf output");
    let _ = std::fs::remove_file(&out);
    let counters = parse_perf_csv(&text);
    let stdout = String::from_utf8_lossy(&client.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(last).expect("client JSON on its last line");
    let messages = json["messages"].as_u64().expect("messages");
    assert!(
        messages > 1000,
        "too few messages to count anything: {messages}"
    );
    Count {
        messages,
        syscalls: counter(&counters, "raw_syscalls:sys_enter").expect("syscall count"),
        enters: counter(&counters, "syscalls:sys_enter_io_uring_enter").expect("enter count"),
    }
}

#[test]
fn io_uring_enters_per_message_far_below_one_and_epoll_no_more_than_tokio() {
    let ringway = ringway_binary().display().to_string();
    let serve = |backend: &str| {
        vec![
            ringway.clone(),
            "echo".into(),
            "--bind".into(),
            "127.0.0.1:0".into(),
            "--threads".into(),
            "1".into(),
            "--backend".into(),
            backend.into(),
        ]
    };
    let uring = count(&serve("uring"));
    let epoll = count(&serve("epoll"));
    let tokio = count(&[
        env!("CARGO_BIN_EXE_echo-tokio").to_string(),
        "--bind".into(),
        "127.0.0.1:0".into(),
    ]);
    let per = |c: &Count, n: u64| n as f64 / c.messages as f64;
    println!(
        "syscalls per message: ringway-uring {:.3} (io_uring_enter {:.3}), ringway-epoll {:.3}, tokio {:.3}",
        per(&uring, uring.syscalls),
        per(&uring, uring.enters),
        per(&epoll, epoll.syscalls),
        per(&tokio, tokio.syscalls)
    );
    assert!(
        per(&uring, uring.enters) < 0.5,
        "{} io_uring_enter calls for {} messages",
        uring.enters,
        uring.messages
    );
    assert!(
        per(&uring, uring.syscalls) < 0.6,
        "io_uring backend makes other syscalls per message"
    );
    assert_eq!(epoll.enters, 0, "the epoll backend must not touch io_uring");
    // Both make exactly one recv and one send per message; what remains is the share of
    // epoll_wait, which depends on how many events one wait returns. 1% covers that
    // share's drift between two processes measured one after the other.
    assert!(
        per(&epoll, epoll.syscalls) <= per(&tokio, tokio.syscalls) * 1.01,
        "ringway-epoll {:.3} syscalls/msg > tokio {:.3}",
        per(&epoll, epoll.syscalls),
        per(&tokio, tokio.syscalls)
    );
    assert!(
        per(&epoll, epoll.syscalls) >= 2.0,
        "an echo needs a recv and a send per message"
    );
}
