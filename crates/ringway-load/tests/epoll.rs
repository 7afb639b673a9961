//! The same exact counts with client and server on the epoll backend (`--backend
//! epoll` for the client, `RINGWAY_BACKEND=epoll` for the server process), including
//! close-delimited responses, where a lost end of stream would show as timeouts.

mod common;

use common::{load, Server};

fn exact_on_epoll(mode: &str, extra: &[&str], n: u64) {
    let server = Server::start_with(None, Some("epoll"), &["--mode", mode]);
    let url = server.url("/");
    let n_s = n.to_string();
    let mut a = vec![
        "--backend",
        "epoll",
        "-n",
        &n_s,
        "--expect-body",
        "Hello, World!",
    ];
    a.extend_from_slice(extra);
    a.push(&url);
    let (report, _) = load(&a);
    let counts = server.stop();
    assert!(
        report.head.backend.starts_with("epoll"),
        "{}",
        report.head.backend
    );
    assert_eq!(report.error_total(), 0, "{mode}: {:?}", report.errors);
    assert_eq!((report.requests, counts.responses), (n, n), "{mode}");
}

#[test]
fn content_length_and_pipelined_on_epoll() {
    exact_on_epoll("cl", &["-c", "4"], 1000);
    exact_on_epoll("cl", &["-c", "4", "-p", "16"], 2000);
}

#[test]
fn chunked_on_epoll() {
    exact_on_epoll("chunked", &["-c", "3", "-p", "4"], 1000);
}

#[test]
fn close_delimited_on_epoll() {
    exact_on_epoll("close", &["-c", "3"], 300);
}

#[test]
fn new_connection_per_request_on_epoll() {
    exact_on_epoll("cl", &["--new-conn", "-c", "2", "-t", "2"], 200);
}
