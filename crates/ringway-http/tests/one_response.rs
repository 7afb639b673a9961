//! One response per request, whatever the handler did before the body went bad
//! (issue 27, item 1).
//!
//! A handler may answer before its request's body has arrived (one that ignores the
//! body, one that reads half of it, a static file). If the rest of that body then
//! breaks the framing (a bad chunk size, chunk data without its CRLF, a bare LF, a
//! trailer flood, a body over the limit), the request must still get exactly one
//! response, the error's, and the connection must close with nothing after it: a 200
//! followed by a 400 is read by a pooling client or proxy as the answer to its *next*
//! request (a response desync).
//!
//! Every case goes to both handler APIs (the `http` types and the request view), each
//! with a handler that reads the body, one that ignores it and one that reads half of
//! it, and to static files (both APIs), on both backends; sent whole, one byte at a
//! time, and split in two at every boundary. Every response stream is counted by h11,
//! which refuses a byte after the last response a request asked for.

mod common;

use std::time::Duration;

use common::*;
use ringway::Backend;
use ringway_http::Config;

/// A request that must get one response with this status, then a close.
struct Case {
    name: String,
    req: Vec<u8>,
    status: u16,
}

/// Chunked bodies that break the framing somewhere, and the status each must get.
fn bad_chunked_bodies() -> Vec<(&'static str, String, u16)> {
    let long_ext = format!("5;{}\r\nhello\r\n0\r\n\r\n", "e".repeat(2000));
    let trailer_flood = format!("0\r\n{}\r\n", "X-T: aaaaaaaaaaaaaaaa\r\n".repeat(600));
    let over_limit = format!("2000\r\n{}\r\n0\r\n\r\n", "y".repeat(8192));
    vec![
        ("size -5", "-5\r\nhello\r\n0\r\n\r\n".into(), 400),
        ("size 0x5", "0x5\r\nhello\r\n0\r\n\r\n".into(), 400),
        ("size +5", "+5\r\nhello\r\n0\r\n\r\n".into(), 400),
        (
            "size overflows",
            "fffffffffffffffff\r\nhello\r\n0\r\n\r\n".into(),
            400,
        ),
        (
            "size 17 digits",
            "00000000000000005\r\nhello\r\n0\r\n\r\n".into(),
            400,
        ),
        ("size 5_0", "5_0\r\nhello\r\n0\r\n\r\n".into(), 400),
        ("size empty", "\r\nhello\r\n0\r\n\r\n".into(), 400),
        ("size junk", "5 junk\r\nhello\r\n0\r\n\r\n".into(), 400),
        ("data without CRLF", "5\r\nhelloXX\r\n0\r\n\r\n".into(), 400),
        ("data then CR junk", "5\r\nhello\rX0\r\n\r\n".into(), 400),
        ("bare LF in chunk line", "5\nhello\r\n0\r\n\r\n".into(), 400),
        ("bare LF after data", "5\r\nhello\n0\r\n\r\n".into(), 400),
        (
            "extension unbalanced",
            "5;a=\"b\r\nhello\r\n0\r\n\r\n".into(),
            400,
        ),
        ("extension too long", long_ext, 400),
        ("trailer flood", trailer_flood, 431),
        (
            "trailer is a request line",
            "0\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            400,
        ),
        (
            "smuggle after a bad chunk",
            "Z\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            400,
        ),
        ("over the body limit", over_limit, 413),
    ]
}

/// Heads whose `Content-Length` is refused: one 4xx before any handler runs.
fn bad_length_fields() -> Vec<(&'static str, &'static str, &'static str, u16)> {
    vec![
        (
            "CL and TE",
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "0\r\n\r\n",
            400,
        ),
        (
            "duplicate CL",
            "Content-Length: 3\r\nContent-Length: 3\r\n",
            "abc",
            400,
        ),
        (
            "conflicting CL",
            "Content-Length: 3\r\nContent-Length: 4\r\n",
            "abcd",
            400,
        ),
        ("CL list", "Content-Length: 3, 3\r\n", "abc", 400),
        ("CL +3", "Content-Length: +3\r\n", "abc", 400),
        ("CL hex", "Content-Length: 0x3\r\n", "abc", 400),
        ("CL junk", "Content-Length: 1Z\r\n", "a", 400),
        (
            "CL overflow",
            "Content-Length: 99999999999999999999999\r\n",
            "",
            400,
        ),
        (
            "CL over the body limit",
            "Content-Length: 100000\r\n",
            "xxxx",
            413,
        ),
    ]
}

/// Every case against `path` (a handler's behaviour, or a file), as `method`.
fn cases(method: &str, path: &str) -> Vec<Case> {
    let head = |fields: &str| format!("{method} {path} HTTP/1.1\r\nHost: a\r\n{fields}\r\n");
    let mut v = Vec::new();
    for (name, body, status) in bad_chunked_bodies() {
        let chunked = head("Transfer-Encoding: chunked\r\n");
        v.push(Case {
            name: format!("{path}: {name}"),
            req: format!("{chunked}{body}").into_bytes(),
            status,
        });
        // The same error after a good chunk: a handler that reads half the body has
        // read it, and answered, before the error arrives.
        v.push(Case {
            name: format!("{path}: a good chunk, then {name}"),
            req: format!("{chunked}6\r\nhello \r\n{body}").into_bytes(),
            status,
        });
    }
    for (name, fields, body, status) in bad_length_fields() {
        v.push(Case {
            name: format!("{path}: {name}"),
            req: format!("{}{body}", head(fields)).into_bytes(),
            status,
        });
    }
    v
}

fn config() -> Config {
    Config {
        max_body_size: 4096,
        header_timeout: Duration::from_secs(5),
        body_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

/// Sends `parts` on a new connection; the response stream must be one response with
/// the case's status, then the close. Returns the raw stream.
fn exchange(
    server: &TestServer,
    c: &Case,
    parts: &[&[u8]],
    pause: Duration,
) -> Result<Vec<u8>, String> {
    let mut s = connect(server.addr);
    write_parts(&mut s, parts, pause);
    // Read to the close (not to the first response): a second response must be seen.
    let ex = read_exchange(&mut s, 1, &[], true, Duration::from_secs(5));
    if !ex.closed {
        return Err("connection left open".into());
    }
    if ex.statuses() != [c.status] {
        return Err(format!(
            "statuses {:?}, expected [{}]; stream {:?}",
            ex.statuses(),
            c.status,
            String::from_utf8_lossy(&ex.raw[..ex.raw.len().min(400)])
        ));
    }
    Ok(ex.raw)
}

/// Every case whole, byte by byte and split at every boundary (long ones: the first 300
/// and last 64); every stream then counted by h11.
fn check(server: &TestServer, cases: &[Case]) {
    let failures = std::sync::Mutex::new(Vec::new());
    let streams = std::sync::Mutex::new(Vec::new());
    let mut jobs: Vec<(usize, Option<usize>)> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        jobs.push((i, None));
        let n = c.req.len();
        jobs.extend(
            (1..n)
                .filter(|k| *k < 300 || *k + 64 > n)
                .map(|k| (i, Some(k))),
        );
    }
    std::thread::scope(|sc| {
        for t in 0..8 {
            let (jobs, failures, streams) = (&jobs, &failures, &streams);
            sc.spawn(move || {
                for (i, split) in jobs.iter().skip(t).step_by(8) {
                    let c = &cases[*i];
                    let (how, r) = match split {
                        None => (
                            "whole".to_string(),
                            exchange(server, c, &[&c.req], Duration::ZERO),
                        ),
                        Some(k) => {
                            let (a, b) = c.req.split_at(*k);
                            let r = exchange(server, c, &[a, b], Duration::from_millis(1));
                            (format!("split at {k}"), r)
                        }
                    };
                    match r {
                        Ok(raw) => streams
                            .lock()
                            .unwrap()
                            .push((vec!["POST".into()], raw, true)),
                        Err(e) => failures
                            .lock()
                            .unwrap()
                            .push(format!("{} ({how}): {e}", c.name)),
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    let mut streams = streams.into_inner().unwrap();
    // One byte at a time (long requests in 61-byte pieces), one case after another.
    for c in cases {
        let step = if c.req.len() > 4096 { 61 } else { 1 };
        let bytes: Vec<&[u8]> = c.req.chunks(step).collect();
        match exchange(server, c, &bytes, Duration::from_micros(50)) {
            Ok(raw) => streams.push((vec!["POST".into()], raw, true)),
            Err(e) => failures.push(format!("{} (bytewise): {e}", c.name)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    check_with_h11(&streams);
}

/// The three handler behaviours of the test handlers: reads the whole body (`/`),
/// answers without reading it (`/ignore-body`), reads one piece then answers (`/half`).
fn handler_cases() -> Vec<Case> {
    ["/", "/ignore-body", "/half"]
        .iter()
        .flat_map(|p| cases("POST", p))
        .collect()
}

fn handlers(backend: Backend, view: bool) {
    let server = TestServer::start_setup(
        config(),
        Setup {
            backend: Some(backend),
            view,
            ..Setup::default()
        },
    );
    check(&server, &handler_cases());
    let stats = server.stop();
    // Each refused request is counted once, as the error it was.
    assert!(stats.error(ringway_http::ErrorClass::BadRequest) > 0);
}

#[test]
fn http_types_handlers_uring() {
    handlers(Backend::Uring, false);
}

#[test]
fn http_types_handlers_epoll() {
    handlers(Backend::Epoll, false);
}

#[test]
fn view_handlers_uring() {
    handlers(Backend::Uring, true);
}

#[test]
fn view_handlers_epoll() {
    handlers(Backend::Epoll, true);
}

/// A file answers a GET whatever its body holds: the body's framing still decides.
fn files(backend: Backend) {
    let root = std::env::temp_dir().join(format!(
        "ringway-one-response-{}-{backend:?}",
        std::process::id()
    ));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("f.txt"), "a file\n").unwrap();
    for view in [false, true] {
        let files = ringway_http::files::StaticFiles::new(&root).unwrap();
        let server = TestServer::start_files(files, config(), Some(backend), view);
        check(&server, &cases("GET", "/f.txt"));
        server.stop();
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn static_files_uring() {
    files(Backend::Uring);
}

#[test]
fn static_files_epoll() {
    files(Backend::Epoll);
}

/// The control: the same handlers with good bodies answer once each and keep the
/// connection, so the cases above fail for the error, not for the handler.
#[test]
fn good_bodies_are_answered_and_kept() {
    for view in [false, true] {
        let server = TestServer::start_setup(
            config(),
            Setup {
                view,
                ..Setup::default()
            },
        );
        for path in ["/", "/ignore-body", "/half"] {
            let req = format!(
                "POST {path} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
                 6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\nGET /probe HTTP/1.1\r\nHost: a\r\n\r\n"
            );
            for parts in [vec![req.as_bytes()], req.as_bytes().chunks(7).collect()] {
                let mut s = connect(server.addr);
                write_parts(&mut s, &parts, Duration::from_millis(1));
                let ex = read_exchange(&mut s, 2, &[], false, Duration::from_secs(5));
                assert_eq!(ex.statuses(), [200, 200], "{path} (view: {view})");
                assert!(!ex.closed, "{path} (view: {view})");
                assert_eq!(ex.responses[1].json()["target"], "/probe");
                check_with_h11(&[(vec!["POST".into(), "GET".into()], ex.raw, false)]);
            }
        }
        server.stop();
    }
}
