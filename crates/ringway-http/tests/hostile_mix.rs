//! Class 31 of the hostile-input list, its correctness half: valid keep-alive load with
//! malformed requests mixed in on other connections. Every valid request gets its own
//! answer (no request lost, none answered twice, none confused with a neighbour's),
//! every malformed one gets its 400 and a close, and the server's counters agree exactly.
//! (The latency half, valid requests' p99 under the mix, is a benchmark: it is not timed
//! here.)

mod common;

use std::io::Write;
use std::time::Duration;

use common::{connect, read_exchange, TestServer};
use ringway_http::{Config, ErrorClass};

const VALID_CONNS: usize = 6;
const VALID_PER_CONN: usize = 150;
const BAD_CONNS: usize = 3;
const BAD_PER_CONN: usize = 40;

/// Malformed requests the server must refuse with 400 (cases of the conformance suite).
const MALFORMED: &[&str] = &[
    "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
    "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\0b\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",
    "GET /\r\nHost: a\r\n\r\n",
];

#[test]
fn valid_load_survives_a_malformed_mix() {
    let server = TestServer::start(Config::default());
    let addr = server.addr;
    let valid: Vec<_> = (0..VALID_CONNS)
        .map(|c| {
            std::thread::spawn(move || {
                let mut s = connect(addr);
                for i in 0..VALID_PER_CONN {
                    let target = format!("/valid/{c}/{i}");
                    write!(s, "GET {target} HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
                    let ex = read_exchange(&mut s, 1, &[false], false, Duration::from_secs(10));
                    assert_eq!(ex.statuses(), vec![200], "{target}: {:?}", ex.raw);
                    let echoed = ex.responses[0].json();
                    assert_eq!(
                        echoed["target"],
                        target.as_str(),
                        "answered with another request"
                    );
                    assert!(
                        !ex.closed,
                        "{target}: a valid keep-alive connection was closed"
                    );
                }
            })
        })
        .collect();
    let bad: Vec<_> = (0..BAD_CONNS)
        .map(|c| {
            std::thread::spawn(move || {
                for i in 0..BAD_PER_CONN {
                    let req = MALFORMED[(c + i) % MALFORMED.len()];
                    let mut s = connect(addr);
                    s.write_all(req.as_bytes()).unwrap();
                    let ex = read_exchange(&mut s, 1, &[false], true, Duration::from_secs(10));
                    assert_eq!(ex.statuses(), vec![400], "{req:?}: {:?}", ex.raw);
                    assert!(
                        ex.closed,
                        "{req:?}: the connection must be closed after the 400"
                    );
                }
            })
        })
        .collect();
    for t in valid.into_iter().chain(bad) {
        t.join().unwrap();
    }
    let stats = server.stop();
    assert_eq!(
        stats.requests,
        (VALID_CONNS * VALID_PER_CONN) as u64,
        "{stats:?}"
    );
    assert_eq!(
        stats.error(ErrorClass::BadRequest),
        (BAD_CONNS * BAD_PER_CONN) as u64,
        "{stats:?}"
    );
    assert_eq!(
        stats.connections,
        (VALID_CONNS + BAD_CONNS * BAD_PER_CONN) as u64
    );
}
