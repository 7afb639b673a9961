//! The counted check of the runtime issue, made of counts that do not depend on timing.
//! Under an echo load of 50 connections x 64 B, with the server's syscalls counted by
//! the kernel's tracepoints (`perf stat -e ... -p PID`, which does not slow the server
//! down the way strace does) over the whole client run:
//!
//! - ringway on io_uring makes no `recv`/`send`-family syscall per message (every byte
//!   moves through the ring; a few per connection at most) and far fewer than one
//!   `io_uring_enter` per echoed message;
//! - ringway on epoll makes exactly one receive and one send per message (no `EAGAIN`
//!   probe read), give or take what a connection's set-up and end add (its final EOF
//!   read, the messages in flight when the client stops), at most one `epoll_wait` per
//!   message, and nothing else per message.
//!
//! `M` is the messages the client counted, `C` its connections: every bound below is
//! `M` plus a multiple of `C` (receives at most `M + 3C`: an EOF read and the messages in
//! flight around the client's window per connection; 103 extra over 280,636 messages in
//! one run), whatever the machine's speed. A probe read per message would be `2M`. tokio's `current_thread`
//! echo server is counted beside it as the reference, with the bounds it keeps whatever
//! the timing (at least one receive and one send per message): its extra reads depend on
//! timing (0.2% more reads than messages: 150 over 82,562 in one run), so it is
//! no yardstick for an exact bound, which is why the old comparison "ringway-epoll within
//! 1% of tokio" is gone. The `ringway` binary is built by this test with the cargo that
//! runs it.

mod common;
use common::ringway_binary;
use std::process::{Command, Stdio};
use std::time::Duration;

use ringway_bench::measure::perfstat::{counter, parse_perf_csv};
use ringway_bench::measure::process::{Stream, Watched};

/// Connections of the load.
const CONNS: u64 = 50;

/// The tracepoints counted.
const EVENTS: &[&str] = &[
    "raw_syscalls:sys_enter",
    "syscalls:sys_enter_io_uring_enter",
    "syscalls:sys_enter_recvfrom",
    "syscalls:sys_enter_read",
    "syscalls:sys_enter_recvmsg",
    "syscalls:sys_enter_sendto",
    "syscalls:sys_enter_write",
    "syscalls:sys_enter_sendmsg",
    "syscalls:sys_enter_epoll_wait",
    "syscalls:sys_enter_epoll_pwait",
];

/// Messages echoed and syscalls the server made while `echo-client` ran.
#[derive(Debug)]
struct Count {
    messages: u64,
    syscalls: u64,
    enters: u64,
    /// recvfrom + read + recvmsg.
    receives: u64,
    /// sendto + write + sendmsg.
    sends: u64,
    /// epoll_wait + epoll_pwait.
    waits: u64,
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
            &EVENTS.join(","),
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
        .args([
            "--addr",
            &addr,
            "--conns",
            &CONNS.to_string(),
            "--size",
            "64",
        ])
        .args(["--duration", "2", "--warmup", "0", "--json"])
        .output()
        .expect("run echo-client");
    assert!(
        client.status.success(),
        "echo-client failed: {}",
        String::from_utf8_lossy(&client.stderr)
    );
    ringway_bench::measure::process::send_signal(perf.id(), libc::SIGINT).unwrap();
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
    // `<not counted>`: the event never fired while perf was attached.
    let n = |events: &[&str]| -> u64 {
        events
            .iter()
            .map(|e| counter(&counters, &format!("syscalls:sys_enter_{e}")).unwrap_or(0))
            .sum()
    };
    assert!(
        counters.iter().any(|c| c.event == "raw_syscalls:sys_enter"),
        "perf output without the syscall counter: {text}"
    );
    Count {
        messages,
        syscalls: counter(&counters, "raw_syscalls:sys_enter").expect("syscall count"),
        enters: n(&["io_uring_enter"]),
        receives: n(&["recvfrom", "read", "recvmsg"]),
        sends: n(&["sendto", "write", "sendmsg"]),
        waits: n(&["epoll_wait", "epoll_pwait"]),
    }
}

/// The exact per-message accounting of an epoll server (see the module doc).
fn assert_one_receive_and_one_send_per_message(name: &str, c: &Count) {
    let (m, conns) = (c.messages, CONNS);
    assert_eq!(c.enters, 0, "{name} must not touch io_uring: {c:?}");
    assert!(
        (m..=m + 3 * conns).contains(&c.receives),
        "{name}: {} receives for {m} messages (one per message, plus per connection its EOF \
         read and the messages in flight around the client's window): {c:?}",
        c.receives
    );
    assert!(
        (m..=m + 2 * conns).contains(&c.sends),
        "{name}: {} sends for {m} messages: {c:?}",
        c.sends
    );
    assert!(
        c.waits <= m + conns,
        "{name}: {} epoll waits for {m} messages, more than one per message: {c:?}",
        c.waits
    );
    let other = c.syscalls - c.receives - c.sends - c.waits;
    assert!(
        other <= 10 * conns + 100,
        "{name}: {other} syscalls besides receive, send and wait for {m} messages: \
         something runs per message: {c:?}"
    );
}

#[test]
fn io_uring_echo_makes_no_per_message_syscall_and_epoll_echo_one_receive_and_one_send_each() {
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
    for (name, c) in [
        ("ringway-uring", &uring),
        ("ringway-epoll", &epoll),
        ("tokio", &tokio),
    ] {
        let per = |n: u64| n as f64 / c.messages as f64;
        println!(
            "{name}: {} messages; per message: syscalls {:.3}, io_uring_enter {:.3}, receives {:.3}, sends {:.3}, epoll waits {:.3}",
            c.messages,
            per(c.syscalls),
            per(c.enters),
            per(c.receives),
            per(c.sends),
            per(c.waits)
        );
    }
    // A few writes happen around connections (not per message: 38 for 68,257
    // messages when this was written); a receive or send per message would be ~M.
    assert!(
        uring.receives + uring.sends + uring.waits <= 2 * CONNS,
        "the io_uring backend moves every byte through the ring: {uring:?}"
    );
    assert!(
        uring.enters * 2 < uring.messages,
        "{} io_uring_enter calls for {} messages: the io_uring backend must batch",
        uring.enters,
        uring.messages
    );
    let other = uring.syscalls - uring.enters;
    assert!(
        other <= 10 * CONNS + 100,
        "ringway-uring: {other} syscalls besides io_uring_enter: {uring:?}"
    );
    assert_one_receive_and_one_send_per_message("ringway-epoll", &epoll);
    // The reference counts the same syscalls: otherwise both would read zero.
    assert!(
        tokio.receives >= tokio.messages && tokio.sends >= tokio.messages,
        "tokio's receives and sends are not the syscalls counted here: {tokio:?}"
    );
}
