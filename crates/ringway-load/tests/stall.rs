//! Coordinated omission: against a server that freezes for 200 ms every second, an open
//! loop at a modest rate reports a p99 that shows the stall (>= 150 ms) while its p50
//! stays low (< 50 ms); a closed loop on the same server says that its latency
//! understates the tail.

mod common;

use common::{load, Server};
use ringway_load::report::CLOSED_LOOP_WARNING;

#[test]
fn open_loop_sees_the_stall_closed_loop_warns() {
    let server = Server::start(&["--mode", "cl", "--stall-ms", "200", "--every-ms", "1000"]);
    let url = server.url("/");
    // 200 req/s over 4 connections for 3 s: 600 requests, about a fifth of them meant
    // to leave during a freeze.
    let (open, text) = load(&["-R", "200", "-c", "4", "-d", "3s", &url]);
    let p50_ms = open.latency_us.p50 / 1000.0;
    let p99_ms = open.latency_us.p99 / 1000.0;
    assert!(
        p99_ms >= 150.0,
        "open-loop p99 {p99_ms:.1} ms hides the stall\n{text}"
    );
    assert!(p50_ms < 50.0, "open-loop p50 {p50_ms:.1} ms\n{text}");
    assert!(!text.contains(CLOSED_LOOP_WARNING), "{text}");
    assert!(text.contains("Uncorrected latency"), "{text}");

    let (closed, text) = load(&["-c", "4", "-d", "2s", &url]);
    server.stop();
    assert!(closed.requests > 0);
    assert!(
        text.contains(&format!("Warning: {CLOSED_LOOP_WARNING}")),
        "{text}"
    );
}
