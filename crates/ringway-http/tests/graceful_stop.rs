//! A graceful stop answers what it read (issue 27, item 3): under load, every request
//! the server read gets its response (the server's count of requests read equals its
//! count answered, and the clients received every one answered, whole), the last with
//! `Connection: close`; then the connection closes without a reset, even for a client
//! that reads its response late. Both backends; the connection limit
//! (`Config::max_connections`) is here too, since a flood above it must not disturb
//! the connections being served.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ringway::Backend;
use ringway_http::Config;

mod common;
use common::{connect, read_exchange, wait_for, Hold, TestServer};

/// What one closed-loop client saw.
#[derive(Default)]
struct Seen {
    /// Whole responses received.
    responses: u64,
    /// Of them, those that said `Connection: close`.
    closing: u64,
    /// Reads or writes that failed with a reset.
    resets: u64,
    /// Requests written (into the server's socket) before the stop began that got no
    /// response: the server had them, and dropped them.
    dropped: u64,
}

/// One connection in a closed loop (a request, then its whole response) until the
/// server closes it, `stop` is set (then it closes), or it made `most` requests.
fn closed_loop(
    addr: SocketAddr,
    most: u64,
    stop: &AtomicBool,
    stop_at: &OnceLock<Instant>,
) -> Seen {
    let mut seen = Seen::default();
    let mut s = connect(addr);
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 4096];
    for _ in 0..most {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n") {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                seen.resets += 1;
                break;
            }
            // Closed by the server (after its last response): a broken pipe.
            Err(_) => break,
        }
        // On loopback a write that returned has put the request in the server's socket.
        let written_at = Instant::now();
        // The test handler's `/` answers `200` with a short fixed body: read until
        // the head and its Content-Length of body are in.
        let mut raw = Vec::new();
        let whole = loop {
            if let Some(len) = whole_response(&raw) {
                break Some(len);
            }
            match s.read(&mut buf) {
                Ok(0) => break None,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    seen.resets += 1;
                    break None;
                }
                Err(e) => panic!("read: {e}"),
            }
        };
        let Some(len) = whole else {
            if stop_at.get().map_or(true, |&at| written_at < at) {
                seen.dropped += 1;
            }
            break;
        };
        assert_eq!(len, raw.len(), "one response per request");
        seen.responses += 1;
        let head = String::from_utf8_lossy(&raw).to_ascii_lowercase();
        if head.contains("\r\nconnection: close\r\n") {
            seen.closing += 1;
            // The server closes after it: nothing more, and no reset.
            match s.read(&mut buf) {
                Ok(0) => {}
                Ok(n) => panic!("{n} bytes after a closing response"),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => seen.resets += 1,
                Err(e) => panic!("read after the closing response: {e}"),
            }
            break;
        }
    }
    seen
}

/// The length of the response at the start of `raw` once it is whole.
fn whole_response(raw: &[u8]) -> Option<usize> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let len: usize = head
        .split("\r\ncontent-length: ")
        .nth(1)
        .and_then(|r| r.split("\r\n").next())
        .and_then(|v| v.trim().parse().ok())
        .expect("a content-length");
    (raw.len() >= end + len).then_some(end + len)
}

/// 100 connections in a closed loop, at most 60 requests each; the server stops once
/// it has answered 1,500 (in the middle of the load): every request it read was
/// answered, and every answer reached its client whole.
fn stop_under_load_answers_every_request_read(backend: Backend) {
    let server = TestServer::start_with(Config::default(), Some(backend), None);
    let addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let stop_at = Arc::new(OnceLock::new());
    let clients: Vec<_> = (0..100)
        .map(|_| {
            let (stop, stop_at) = (stop.clone(), stop_at.clone());
            std::thread::spawn(move || closed_loop(addr, 60, &stop, &stop_at))
        })
        .collect();
    let stats = server.stats.clone();
    assert!(
        wait_for(Duration::from_secs(30), || stats.snapshot().requests
            >= 1_500),
        "{backend:?}: the load did not get going"
    );
    let at_stop = stats.snapshot().requests;
    stop_at.set(Instant::now()).unwrap();
    server.shutdown.shutdown();
    let snap = server.stop();
    // The clients end by themselves once their connections closed; the flag only ends
    // one whose connection the stop left open (then its count falls short below).
    stop.store(true, Ordering::Relaxed);
    let mut seen = Seen::default();
    for c in clients {
        let s = c.join().expect("client");
        seen.responses += s.responses;
        seen.closing += s.closing;
        seen.resets += s.resets;
        seen.dropped += s.dropped;
    }
    eprintln!(
        "{backend:?}: {} answered ({at_stop} when the stop began), {} read, clients got {} ({} with close), {} resets, {} dropped",
        snap.requests, snap.requests_read, seen.responses, seen.closing, seen.resets, seen.dropped
    );
    assert!(
        snap.requests < 6_000,
        "{backend:?}: stopped before the load ended"
    );
    assert_eq!(
        snap.requests_read, snap.requests,
        "{backend:?}: every request read is answered"
    );
    assert_eq!(
        seen.responses, snap.requests,
        "{backend:?}: every answer reached its client whole"
    );
    assert_eq!(seen.resets, 0, "{backend:?}: no connection was reset");
    assert_eq!(
        seen.dropped, 0,
        "{backend:?}: a request in the socket before the stop is answered"
    );
    assert_eq!(snap.io_errors, 0, "{snap}");
}

#[test]
fn stop_under_load_answers_every_request_read_uring() {
    stop_under_load_answers_every_request_read(Backend::Uring);
}

#[test]
fn stop_under_load_answers_every_request_read_epoll() {
    stop_under_load_answers_every_request_read(Backend::Epoll);
}

/// A request in flight when the stop begins and a second one pipelined behind it (read
/// with it): both are answered, the second with `Connection: close`. The client reads
/// nothing for a while and sends more meanwhile (bytes the server never reads): the
/// close must still not reset the connection, which would destroy the responses it has
/// not read yet.
fn no_reset_for_a_client_that_reads_late(backend: Backend) {
    let server = TestServer::start_with(Config::default(), Some(backend), None);
    let hold = Hold::new(&format!("late-reader-{backend:?}"));
    let mut c = connect(server.addr);
    let two = format!(
        "GET {} HTTP/1.1\r\nHost: a\r\n\r\nGET /second HTTP/1.1\r\nHost: a\r\n\r\n",
        hold.path()
    );
    c.write_all(two.as_bytes()).unwrap();
    hold.wait_started(Duration::from_secs(10));
    server.shutdown.shutdown();
    let addr = server.addr;
    assert!(
        wait_for(Duration::from_secs(10), || TcpStream::connect(addr)
            .is_err()),
        "the stop reached the core"
    );
    hold.release();
    // The server answers and closes meanwhile; the client goes on sending.
    std::thread::sleep(Duration::from_millis(300));
    let _ = c.write_all(b"GET /after-the-close HTTP/1.1\r\nHost: a\r\n\r\n");
    std::thread::sleep(Duration::from_millis(300));
    let ex = read_exchange(&mut c, 2, &[], true, Duration::from_secs(10));
    assert_eq!(ex.statuses(), vec![200, 200], "{backend:?}: {ex:?}");
    assert_eq!(ex.responses[0].header("connection"), None, "{backend:?}");
    assert_eq!(
        ex.responses[1].header("connection"),
        Some(&b"close"[..]),
        "{backend:?}"
    );
    assert!(ex.closed, "{backend:?}: closed after the last response");
    // `read_exchange` counts a reset as a close: look again, it must be an end of file.
    let mut rest = [0u8; 64];
    match c.read(&mut rest) {
        Ok(0) => {}
        other => panic!("{backend:?}: after the responses: {other:?}, not an end of file"),
    }
    let snap = server.stop();
    assert_eq!((snap.requests, snap.requests_read), (2, 2), "{snap}");
}

#[test]
fn no_reset_for_a_client_that_reads_late_uring() {
    no_reset_for_a_client_that_reads_late(Backend::Uring);
}

#[test]
fn no_reset_for_a_client_that_reads_late_epoll() {
    no_reset_for_a_client_that_reads_late(Backend::Epoll);
}

/// An idle keep-alive connection is closed at once when the stop begins.
fn idle_connections_close_at_once(backend: Backend) {
    let server = TestServer::start_with(Config::default(), Some(backend), None);
    let mut idle = connect(server.addr);
    idle.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    let ex = read_exchange(&mut idle, 1, &[], false, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![200]);
    let t = Instant::now();
    server.shutdown.shutdown();
    let ex = read_exchange(&mut idle, 1, &[], true, Duration::from_secs(5));
    assert!(ex.responses.is_empty() && ex.closed, "{backend:?}: {ex:?}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let snap = server.stop();
    assert_eq!((snap.requests, snap.requests_read), (1, 1), "{snap}");
}

#[test]
fn idle_connections_close_at_once_uring() {
    idle_connections_close_at_once(Backend::Uring);
}

#[test]
fn idle_connections_close_at_once_epoll() {
    idle_connections_close_at_once(Backend::Epoll);
}

/// A flood of connections above `max_connections`: each one beyond the limit is
/// closed at once and counted, and the connections within it are served on.
fn a_flood_above_the_connection_limit(backend: Backend) {
    let cfg = Config {
        max_connections: 10,
        ..Config::default()
    };
    let server = TestServer::start_with(cfg, Some(backend), None);
    let mut served: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut s = connect(server.addr);
            s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
            let ex = read_exchange(&mut s, 1, &[], false, Duration::from_secs(5));
            assert_eq!(ex.statuses(), vec![200], "{backend:?}");
            s
        })
        .collect();
    // 200 more, all at once: each is closed without a response.
    let flood: Vec<TcpStream> = (0..200).map(|_| connect(server.addr)).collect();
    for mut s in flood {
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(5));
        assert!(ex.responses.is_empty() && ex.closed, "{backend:?}: {ex:?}");
    }
    let stats = server.stats.clone();
    assert!(
        wait_for(Duration::from_secs(5), || stats.snapshot().over_limit
            == 200),
        "{backend:?}: {}",
        stats.snapshot()
    );
    // The ten are served on.
    for s in &mut served {
        s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let ex = read_exchange(s, 1, &[], false, Duration::from_secs(5));
        assert_eq!(ex.statuses(), vec![200], "{backend:?}");
    }
    // One leaves: one more is let in.
    drop(served.pop());
    let mut admitted = None;
    assert!(
        wait_for(Duration::from_secs(5), || {
            let mut s = connect(server.addr);
            s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
            let ok = read_exchange(&mut s, 1, &[], false, Duration::from_secs(5)).statuses()
                == vec![200];
            if ok {
                admitted = Some(s);
            }
            ok
        }),
        "{backend:?}: a place freed is taken again"
    );
    drop(admitted);
    drop(served);
    let snap = server.stop();
    assert!(snap.over_limit >= 200, "{snap}");
    assert_eq!(snap.requests, 21, "{snap}");
}

#[test]
fn a_flood_above_the_connection_limit_uring() {
    a_flood_above_the_connection_limit(Backend::Uring);
}

#[test]
fn a_flood_above_the_connection_limit_epoll() {
    a_flood_above_the_connection_limit(Backend::Epoll);
}
