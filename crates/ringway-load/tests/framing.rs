//! Framing: responses with Content-Length, chunked (split across writes, with extensions
//! and trailers), close-delimited, and pipelined are all counted exactly: the client's
//! count equals what the counting server sent, and every body is checked.

mod common;

use common::{load, Server};

fn exact(mode: &str, extra: &[&str], n: u64) {
    let server = Server::start(&["--mode", mode]);
    let url = server.url("/");
    let n_s = n.to_string();
    let mut a = vec![
        "-n",
        &n_s,
        "--expect-body",
        "Hello, World!",
        "--timeout",
        "5s",
    ];
    a.extend_from_slice(extra);
    a.push(&url);
    let (report, _) = load(&a);
    let counts = server.stop();
    assert_eq!(report.error_total(), 0, "{mode}: {:?}", report.errors);
    assert_eq!(report.requests, n, "{mode}: client count");
    assert_eq!(counts.responses, n, "{mode}: server sent");
    assert_eq!(counts.requests, n, "{mode}: server received");
    assert_eq!(report.status.get("2xx"), Some(&n));
}

#[test]
fn content_length_counted_exactly() {
    exact("cl", &["-c", "4"], 2000);
}

#[test]
fn chunked_counted_exactly() {
    exact("chunked", &["-c", "4"], 2000);
}

#[test]
fn close_delimited_counted_exactly() {
    // Every response ends the connection: one connection per response.
    let server = Server::start(&["--mode", "close"]);
    let url = server.url("/");
    let (report, _) = load(&[
        "-n",
        "300",
        "-c",
        "3",
        "--expect-body",
        "Hello, World!",
        &url,
    ]);
    let counts = server.stop();
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!((report.requests, counts.responses), (300, 300));
    assert_eq!(counts.connections, 300);
    assert_eq!(report.connections_opened, 300);
}

#[test]
fn pipelined_counted_exactly() {
    exact("cl", &["-c", "4", "-p", "16"], 4000);
    exact("chunked", &["-c", "2", "-p", "8"], 1000);
}

#[test]
fn status_classes_counted() {
    let server = Server::start(&["--mode", "cl"]);
    let url = server.url("/status/404");
    let (report, text) = load(&["-n", "100", "-c", "2", &url]);
    let counts = server.stop();
    assert_eq!(counts.responses, 100);
    assert_eq!(report.requests, 100);
    assert_eq!(report.status.get("4xx"), Some(&100));
    assert_eq!(report.errors["status"], 100);
    assert!(text.contains("Non-2xx or 3xx responses: 100"), "{text}");
}

#[test]
fn wrong_bodies_are_counted() {
    let server = Server::start(&["--mode", "chunked"]);
    let url = server.url("/");
    let (report, _) = load(&[
        "-n",
        "50",
        "-c",
        "1",
        "--expect-body",
        "Hello, World?",
        &url,
    ]);
    server.stop();
    assert_eq!(report.requests, 50);
    assert_eq!(report.errors["body"], 50);
}

#[test]
fn round_robin_urls_and_post_bodies() {
    let server = Server::start(&["--mode", "cl"]);
    let (a, b) = (server.url("/a"), server.url("/status/500"));
    let (report, _) = load(&["-n", "40", "-c", "1", "-m", "POST", "-b", "payload", &a, &b]);
    let counts = server.stop();
    assert_eq!(counts.requests, 40);
    assert_eq!(report.status.get("2xx"), Some(&20));
    assert_eq!(report.status.get("5xx"), Some(&20));
}
