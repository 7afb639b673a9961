//! Slow clients (slowloris): 200 connections trickle a header byte every 100 ms. The
//! header timeout is absolute, counted from the accept: every slow connection gets its
//! 408 and is closed once it has passed, *while its bytes are still trickling in* (a
//! timeout reset by each byte would never fire here), and not before. Normal requests
//! on other connections are answered meanwhile.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use ringway_http::Config;

/// One trickling connection, read without blocking between its bytes.
struct Slow {
    s: TcpStream,
    connected: Instant,
    raw: Vec<u8>,
    /// When its whole response had arrived.
    answered: Option<Instant>,
    closed: bool,
}

impl Slow {
    /// Takes what arrived; true once a whole response is in.
    fn poll(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            match self.s.read(&mut buf) {
                Ok(0) => {
                    self.closed = true;
                    break;
                }
                Ok(n) => self.raw.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    self.closed = true;
                    break;
                }
                Err(e) => panic!("read: {e}"),
            }
        }
        if self.answered.is_none() && !parse_responses(&self.raw, &[], false).0.is_empty() {
            self.answered = Some(Instant::now());
        }
    }
}

#[test]
fn trickling_clients_are_cut_at_the_header_timeout() {
    let timeout = Duration::from_millis(1000);
    let server = TestServer::start(Config {
        header_timeout: timeout,
        ..Config::default()
    });
    let line = b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut slow: Vec<Slow> = (0..200)
        .map(|_| {
            let mut s = connect(server.addr);
            let connected = Instant::now();
            s.write_all(&line[..1]).expect("first byte");
            s.set_nonblocking(true).unwrap();
            Slow {
                s,
                connected,
                raw: Vec::new(),
                answered: None,
                closed: false,
            }
        })
        .collect();
    // Normal requests on connections of their own, while the slow ones trickle.
    let addr = server.addr;
    let normal = std::thread::spawn(move || {
        (0..10)
            .map(|_| {
                let mut s = connect(addr);
                s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                    .unwrap();
                let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(10));
                (ex.statuses(), Instant::now())
            })
            .collect::<Vec<_>>()
    });
    // Trickle a byte every 100 ms to every connection not yet answered, until all are
    // (or 4 timeouts passed: a timeout kept alive by the trickle would never answer).
    let start = Instant::now();
    let mut i = 1;
    while slow.iter().any(|c| c.answered.is_none()) && start.elapsed() < timeout * 4 {
        for (k, c) in slow.iter_mut().enumerate() {
            c.poll();
            if c.answered.is_some() {
                continue;
            }
            let byte = &line[i % line.len()..i % line.len() + 1];
            if let Err(e) = c.s.write_all(byte) {
                panic!("slow connection {k}: write failed before its 408: {e}");
            }
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let unanswered = slow.iter().filter(|c| c.answered.is_none()).count();
    assert_eq!(unanswered, 0, "slow connections never cut while trickling");
    let first_cut = slow.iter().filter_map(|c| c.answered).min().unwrap();
    let last_cut = slow.iter().filter_map(|c| c.answered).max().unwrap();
    for (k, c) in slow.iter_mut().enumerate() {
        let at = c.answered.unwrap() - c.connected;
        // Not before the deadline (the coarse clock may read a tick early).
        assert!(
            at + Duration::from_millis(20) >= timeout,
            "slow connection {k} cut after {at:?}"
        );
        c.s.set_nonblocking(false).unwrap();
        let mut rest = Vec::new();
        let _ = c.s.read_to_end(&mut rest);
        c.raw.extend_from_slice(&rest);
        let (resps, _) = parse_responses(&c.raw, &[], true);
        let statuses: Vec<u16> = resps.iter().map(|r| r.status).collect();
        assert_eq!(statuses, vec![408], "slow connection {k}");
    }
    let normal = normal.join().unwrap();
    let answered = normal.iter().filter(|(st, _)| st == &vec![200]).count();
    assert_eq!(
        answered, 10,
        "normal requests answered while trickled: {normal:?}"
    );
    assert!(
        normal.iter().all(|(_, t)| *t < last_cut),
        "normal requests were answered while slow connections were still open \
         (first cut after {:?})",
        first_cut - start
    );
    let stats = server.stop();
    assert_eq!(
        stats.error(ringway_http::ErrorClass::HeaderTimeout),
        200,
        "{stats}"
    );
}
