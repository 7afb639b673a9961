//! Slow clients (slowloris): 200 connections trickle a header byte every 100 ms; normal
//! requests on other connections are still answered, and every slow connection gets
//! 408 and is closed at the (absolute) header timeout, not kept alive by its trickle.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;
use ringway_http::Config;

#[test]
fn trickling_clients_are_cut_at_the_header_timeout() {
    let timeout = Duration::from_millis(1000);
    let server = TestServer::start(Config {
        header_timeout: timeout,
        ..Config::default()
    });
    let start = Instant::now();
    let mut slow: Vec<_> = (0..200).map(|_| connect(server.addr)).collect();
    let line = b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let addr = server.addr;
    let normal = std::thread::spawn(move || {
        let mut ok = 0;
        for _ in 0..20 {
            let t = Instant::now();
            let mut s = connect(addr);
            s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                .unwrap();
            let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(5));
            if ex.statuses() == vec![200] && t.elapsed() < timeout {
                ok += 1;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        ok
    });
    // Trickle for 1.5 header timeouts: a byte every 100 ms on every slow connection.
    let mut i = 0;
    while start.elapsed() < timeout * 3 / 2 {
        for s in slow.iter_mut() {
            let _ = s.write_all(&line[i % line.len()..i % line.len() + 1]);
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        normal.join().unwrap(),
        20,
        "normal requests answered while trickled"
    );
    for s in slow.iter_mut() {
        let ex = read_exchange(s, 1, &[], true, Duration::from_secs(5));
        assert_eq!(ex.statuses(), vec![408]);
        assert!(ex.closed);
    }
    let stats = server.stop();
    assert_eq!(
        stats.error(ringway_http::ErrorClass::HeaderTimeout),
        200,
        "{stats}"
    );
}
