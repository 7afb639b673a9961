//! One connection's share of the core's receive buffer pool, through ringway-http: a
//! client uploads 8 MiB to a handler that reads its body slowly (a pause after each
//! chunk), while other connections on the same core are served. The handler reports
//! from the server's core what the pool held at most (`PoolStats::peak_pinned`), the
//! share, and the times the driver stopped the slow connection's receive
//! (`DriverStats::recv_backlogged`: for its share, or for its backlog of completions,
//! whichever came first); the client checks the byte count and checksum
//! the handler computed over the body, in order. Counted, not timed; on both backends.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use http::StatusCode;
use ringway::runtime::{driver_stats, pool_stats};
use ringway::Backend;
use ringway_http::{Config, RequestView, Responder, Server, ViewBody, ViewHandler, Written};

const UPLOAD: usize = 8 << 20;

/// FNV-1a over `bytes`, continued from `h`.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// `/upload`: reads the body one chunk at a time with a pause after each, then answers
/// `LEN CHECKSUM PEAK SHARE STOPS`. Anything else: `ok`.
struct SlowReader;

impl ViewHandler for SlowReader {
    async fn call<'a>(&'a self, req: RequestView<'a>, res: Responder<'a>) -> Written {
        if req.path() != "/upload" {
            return res.ok().bytes(b"ok");
        }
        let stops_before = driver_stats().recv_backlogged;
        let (mut len, mut sum) = (0usize, FNV_START);
        match req.into_body() {
            ViewBody::Whole(b) => {
                len = b.len();
                sum = fnv(sum, b);
            }
            ViewBody::Streamed(mut body) => {
                while let Some(chunk) = body.chunk().await {
                    let Ok(chunk) = chunk else {
                        return res.status(StatusCode::BAD_REQUEST).empty();
                    };
                    len += chunk.len();
                    sum = fnv(sum, &chunk);
                    ringway::time::sleep(Duration::from_millis(2)).await;
                }
            }
        }
        let pool = pool_stats();
        let stops = driver_stats().recv_backlogged - stops_before;
        let answer = format!(
            "{len} {sum:016x} {} {} {stops}",
            pool.peak_pinned, pool.share
        );
        res.ok().bytes(answer.as_bytes())
    }
}

/// The body of the one response on a `Connection: close` exchange.
fn body_of(raw: &[u8]) -> &[u8] {
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    assert!(
        raw.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(raw)
    );
    &raw[at + 4..]
}

fn upload(addr: SocketAddr, data: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /upload HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        data.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(data).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    String::from_utf8(body_of(&raw).to_vec()).unwrap()
}

fn small_requests(addr: SocketAddr, n: usize) -> usize {
    (0..n)
        .filter(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut raw = Vec::new();
            s.read_to_end(&mut raw).unwrap();
            body_of(&raw) == b"ok"
        })
        .count()
}

fn a_slow_handler_pins_at_most_its_share(backend: Backend) {
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let mut b = ringway::Runtime::builder();
        b.worker_threads(1).backend(backend);
        let rt = b.build().expect("runtime");
        assert_eq!(rt.backend().kind, backend);
        let running = Server::new(Config::default())
            .start_view(&rt, "127.0.0.1:0", || SlowReader)
            .expect("server start");
        tx.send((running.local_addr(), running.shutdown_handle()))
            .unwrap();
        running.wait(&rt)
    });
    let (addr, shutdown) = rx.recv().unwrap();

    let mut data = vec![0u8; UPLOAD];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let want = format!("{UPLOAD} {:016x}", fnv(FNV_START, &data));
    let uploader = std::thread::spawn(move || upload(addr, &data));
    // Others on the same core are served meanwhile.
    assert_eq!(small_requests(addr, 100), 100);
    let answer = uploader.join().unwrap();
    shutdown.shutdown();
    server.join().unwrap();

    let fields: Vec<&str> = answer.split(' ').collect();
    assert_eq!(fields.len(), 5, "{answer}");
    assert_eq!(
        format!("{} {}", fields[0], fields[1]),
        want,
        "every byte, in order"
    );
    let (peak, share, stops): (usize, usize, u64) = (
        fields[2].parse().unwrap(),
        fields[3].parse().unwrap(),
        fields[4].parse().unwrap(),
    );
    // The slow connection's share, and the one piece a small request holds while its
    // head is parsed.
    assert!(
        peak <= share + 1,
        "the pool had {peak} buffers pinned at once; the share is {share}"
    );
    assert!(stops > 0, "the slow connection's receive never stopped");
}

#[test]
fn a_slow_handler_pins_at_most_its_share_uring() {
    a_slow_handler_pins_at_most_its_share(Backend::Uring)
}

#[test]
fn a_slow_handler_pins_at_most_its_share_epoll() {
    a_slow_handler_pins_at_most_its_share(Backend::Epoll)
}
