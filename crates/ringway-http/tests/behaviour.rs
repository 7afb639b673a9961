//! Connection behaviour over real sockets: pipelining coalesced into one send (counted
//! with the driver's submission counter on the server core), `Expect: 100-continue`,
//! requests per connection, body/idle/send timeouts, graceful shutdown and its drain
//! deadline. Waits are on events (a handler that says it started, a counter that moved),
//! never on a sleep assumed long enough.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;
use ringway::Backend;
use ringway_http::Config;

fn submitted(server: &TestServer, s: &mut std::net::TcpStream) -> u64 {
    s.write_all(b"GET /stats HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    let ex = read_exchange(s, 1, &[], false, Duration::from_secs(5));
    let _ = server;
    ex.responses[0].json()["submitted"].as_u64().unwrap()
}

fn pipelined_16_in_one_send(backend: Backend) {
    let server = TestServer::start_with(Config::default(), Some(backend), None);
    let mut s = connect(server.addr);
    let before = submitted(&server, &mut s);
    // GETs, Content-Length and chunked POSTs mixed: all bodies are in the batch.
    let batch: String = (0..16)
        .map(|i| match i % 3 {
            0 => format!("GET /{i} HTTP/1.1\r\nHost: a\r\n\r\n"),
            1 => format!("POST /{i} HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"),
            _ => format!(
                "POST /{i} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
            ),
        })
        .collect();
    s.write_all(batch.as_bytes()).unwrap();
    let ex = read_exchange(&mut s, 16, &[], false, Duration::from_secs(5));
    let targets: Vec<String> = ex
        .responses
        .iter()
        .map(|r| r.json()["target"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = (0..16).map(|i| format!("/{i}")).collect();
    assert_eq!(targets, want, "16 responses in request order");
    let after = submitted(&server, &mut s);
    // Between the two samples: the send of the first /stats response, and the batch.
    assert_eq!(
        after - before,
        2,
        "{backend:?}: the 16 responses must leave in exactly one send operation"
    );
    server.stop();
}

#[test]
fn pipelining_uring_one_send() {
    pipelined_16_in_one_send(Backend::Uring);
}

#[test]
fn pipelining_epoll_one_send() {
    pipelined_16_in_one_send(Backend::Epoll);
}

#[test]
fn expect_continue_then_body() {
    let server = TestServer::start(Config {
        max_body_size: 1000,
        ..Config::default()
    });
    let mut s = connect(server.addr);
    s.write_all(
        b"POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !got.ends_with(b"\r\n\r\n") {
        let n = std::io::Read::read(&mut s, &mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"hello").unwrap();
    let ex = read_exchange(&mut s, 1, &[], false, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![200]);
    assert_eq!(ex.responses[0].json()["body"], "hello");
    // Over the limit: 413 at once, no 100, closed.
    let mut s = connect(server.addr);
    s.write_all(
        b"POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(5));
    assert_eq!(
        ex.responses.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![413]
    );
    assert!(ex.closed);
}

#[test]
fn max_requests_per_connection() {
    let server = TestServer::start(Config {
        max_requests_per_connection: 3,
        ..Config::default()
    });
    let mut s = connect(server.addr);
    let batch = "GET / HTTP/1.1\r\nHost: a\r\n\r\n".repeat(5);
    s.write_all(batch.as_bytes()).unwrap();
    let ex = read_exchange(&mut s, 3, &[], true, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![200, 200, 200]);
    assert!(ex.closed);
    assert_eq!(ex.responses[2].header("connection"), Some(&b"close"[..]));
}

#[test]
fn body_and_idle_timeouts() {
    let server = TestServer::start(Config {
        body_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        ..Config::default()
    });
    // Slow body: 408, closed.
    let mut s = connect(server.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        .unwrap();
    let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![408]);
    assert!(ex.closed);
    // Idle keep-alive: closed without a response.
    let mut s = connect(server.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let t = Instant::now();
    let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![200]);
    assert!(ex.closed, "idle connection closed");
    assert!(t.elapsed() >= Duration::from_millis(250));
    let stats = server.stop();
    assert_eq!(stats.error(ringway_http::ErrorClass::BodyTimeout), 1);
    assert_eq!(stats.idle_closed, 1);
}

#[test]
fn send_timeout_closes_a_reader_that_stalls() {
    let limit = Duration::from_millis(300);
    let server = TestServer::start(Config {
        send_timeout: limit,
        ..Config::default()
    });
    let mut s = connect(server.addr);
    let t = Instant::now();
    s.write_all(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    // Never read: the 32 MiB response cannot be taken, the send times out. Wait for the
    // server to count it (the bound only limits a failure).
    let counted = wait_for(Duration::from_secs(10), || {
        server.stats.snapshot().send_timeouts == 1
    });
    assert!(
        counted,
        "no send timeout counted: {}",
        server.stats.snapshot()
    );
    // Not before the send timeout (the coarse clock may read a tick early).
    assert!(
        t.elapsed() + Duration::from_millis(20) >= limit,
        "{:?}",
        t.elapsed()
    );
    drop(s);
    let stats = server.stop();
    assert_eq!(stats.send_timeouts, 1, "{stats}");
}

#[test]
fn graceful_shutdown() {
    let server = TestServer::start(Config::default());
    // An idle keep-alive connection.
    let mut idle = connect(server.addr);
    idle.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    assert_eq!(
        read_exchange(&mut idle, 1, &[], false, Duration::from_secs(5)).statuses(),
        vec![200]
    );
    // An in-flight request: its handler says when it started and waits to be let go.
    let hold = Hold::new("graceful");
    let mut busy = connect(server.addr);
    busy.write_all(format!("GET {} HTTP/1.1\r\nHost: a\r\n\r\n", hold.path()).as_bytes())
        .unwrap();
    hold.wait_started(Duration::from_secs(10));
    let addr = server.addr;
    server.shutdown.shutdown();
    // Shutdown has reached the core once its listener is gone.
    let refused = wait_for(Duration::from_secs(10), || {
        std::net::TcpStream::connect(addr).is_err()
    });
    assert!(refused, "new connections refused after shutdown");
    hold.release();
    let ex = read_exchange(&mut busy, 1, &[], true, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![200], "in-flight request finished");
    assert_eq!(ex.responses[0].header("connection"), Some(&b"close"[..]));
    assert!(ex.closed);
    let ex = read_exchange(&mut idle, 1, &[], true, Duration::from_secs(5));
    assert!(
        ex.responses.is_empty() && ex.closed,
        "idle connection closed"
    );
    let stats = server.stop();
    assert_eq!(stats.requests, 2);
}

/// A handler that outlives `drain_timeout`: the server stops anyway, at the deadline,
/// and the connection is dropped without a response.
#[test]
fn drain_deadline_ends_a_handler_that_outlives_it() {
    let drain = Duration::from_millis(300);
    let server = TestServer::start(Config {
        drain_timeout: drain,
        ..Config::default()
    });
    let hold = Hold::new("outlives-drain");
    let mut busy = connect(server.addr);
    busy.write_all(format!("GET {} HTTP/1.1\r\nHost: a\r\n\r\n", hold.path()).as_bytes())
        .unwrap();
    hold.wait_started(Duration::from_secs(10));
    // Never released before the server stops: stop must return by itself.
    let t = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.stop());
    });
    let stats = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server stopped at its drain deadline, not with its handler");
    let took = t.elapsed();
    assert!(
        took + Duration::from_millis(20) >= drain,
        "stopped before the deadline: {took:?}"
    );
    assert_eq!(stats.requests, 0, "the held request was never answered");
    let ex = read_exchange(&mut busy, 1, &[], true, Duration::from_secs(5));
    assert!(ex.responses.is_empty() && ex.closed, "{ex:?}");
}

/// Idle keep-alive connections hold no buffer: not the pool's (input) nor one of this
/// crate's (output, input straddling two receives), whatever their one request was.
fn idle_connections_hold_no_buffer(backend: Backend) {
    let server = TestServer::start_with(Config::default(), Some(backend), None);
    let mut conns = Vec::new();
    for i in 0..100 {
        let mut s = connect(server.addr);
        match i % 5 {
            // A plain request.
            0 => s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap(),
            // A head split across two receives (kept in an own buffer meanwhile).
            1 => write_parts(
                &mut s,
                &[b"GET /split HTTP/1.1\r\nHo", b"st: a\r\n\r\n"],
                Duration::from_millis(5),
            ),
            // Pipelined requests.
            2 => s
                .write_all(&b"GET /p HTTP/1.1\r\nHost: a\r\n\r\n".repeat(3))
                .unwrap(),
            // A body that arrives after its head (streamed to the handler).
            3 => write_parts(
                &mut s,
                &[
                    b"POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhe",
                    b"llo",
                ],
                Duration::from_millis(5),
            ),
            // A streamed (chunked) response.
            _ => s
                .write_all(b"GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
                .unwrap(),
        }
        let want = if i % 5 == 2 { 3 } else { 1 };
        let ex = read_exchange(&mut s, want, &[], false, Duration::from_secs(5));
        assert_eq!(ex.statuses(), vec![200; want], "connection {i}");
        conns.push(s);
    }
    // Every response has been read: the connections are idle. What do they hold?
    let (lent, pool) = server.on_core(|| {
        (
            ringway_http::buffers_in_use(),
            ringway::runtime::pool_stats().in_use,
        )
    });
    assert_eq!(
        (lent, pool),
        (0, 0),
        "{backend:?}: buffers held by 100 idle connections (lent, pool)"
    );
    // They are still open and usable.
    for s in conns.iter_mut().take(5) {
        s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let ex = read_exchange(s, 1, &[], false, Duration::from_secs(5));
        assert_eq!(ex.statuses(), vec![200]);
    }
    server.stop();
}

#[test]
fn idle_connections_hold_no_buffer_uring() {
    idle_connections_hold_no_buffer(Backend::Uring);
}

#[test]
fn idle_connections_hold_no_buffer_epoll() {
    idle_connections_hold_no_buffer(Backend::Epoll);
}

#[test]
fn request_bodies_stream_to_the_handler() {
    let server = TestServer::start(Config {
        max_body_size: 64 << 20,
        ..Config::default()
    });
    // 4 MiB in 64 KiB writes: the handler sees it in several pieces, all of it.
    let mut s = connect(server.addr);
    let total = 4 << 20;
    s.write_all(
        format!("POST /chunks HTTP/1.1\r\nHost: a\r\nContent-Length: {total}\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let piece = vec![b'q'; 64 << 10];
    for _ in 0..total / piece.len() {
        s.write_all(&piece).unwrap();
    }
    let ex = read_exchange(&mut s, 1, &[], false, Duration::from_secs(10));
    let v = ex.responses[0].json();
    assert_eq!(v["total"], total);
    assert!(
        v["pieces"].as_u64().unwrap() > 1,
        "streamed, not buffered: {v}"
    );
    // Chunked, and a handler that never reads its body: the body is still framed
    // (and dropped) so the next pipelined request is answered as itself.
    let mut s = connect(server.addr);
    let body: String = (0..100)
        .map(|_| "400\r\n".to_string() + &"x".repeat(1024) + "\r\n")
        .collect();
    s.write_all(
        format!(
            "POST /ignore-body HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n{body}0\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let ex = read_exchange(&mut s, 2, &[], false, Duration::from_secs(10));
    assert_eq!(ex.statuses(), vec![200, 200]);
    assert_eq!(ex.responses[0].body, b"ignored");
    assert_eq!(ex.responses[1].json()["target"], "/after");
    // A framing error in the middle of a streamed body: 400, closed, nothing after.
    let mut s = connect(server.addr);
    s.write_all(
        b"POST /chunks HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(b"zz\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![400]);
    assert!(ex.closed);
}
