//! The hostile-input conformance suite (reference/http-hostile-inputs.md) over real
//! sockets: every case class, the exact statuses, whether the connection closes, and
//! that nothing after a framing error is served. Each case is sent whole, one byte at a
//! time, and split in two at every byte boundary; every response stream captured from
//! the whole sends is then parsed by h11.

mod common;

use std::time::Duration;

use common::hostile_cases::{cases, chunked, Case, H};
use common::*;
use ringway_http::Config;

fn config() -> Config {
    Config {
        max_body_size: 4096,
        header_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

/// One run of one case; an error names what differed.
fn run(
    server: &TestServer,
    c: &Case,
    parts: &[&[u8]],
    pause: Duration,
    probe: bool,
) -> Result<Exchange, String> {
    let mut s = connect(server.addr);
    write_parts(&mut s, parts, pause);
    let ex = read_exchange(
        &mut s,
        c.statuses.len(),
        &c.heads,
        c.close,
        Duration::from_secs(5),
    );
    if ex.statuses() != c.statuses {
        return Err(format!(
            "statuses {:?}, expected {:?}",
            ex.statuses(),
            c.statuses
        ));
    }
    if c.close && !ex.closed {
        return Err("connection left open".into());
    }
    if !c.close && ex.closed {
        return Err("connection closed".into());
    }
    if probe && !c.close {
        // The connection must be in a clean state: the next request is answered as
        // itself (no leftover bytes were taken as part of it).
        let mut s = s;
        write_parts(
            &mut s,
            &[b"GET /probe HTTP/1.1\r\nHost: a\r\n\r\n"],
            Duration::ZERO,
        );
        let more = read_exchange(&mut s, 1, &[false], false, Duration::from_secs(5));
        let r = more.responses.iter().find(|r| r.status >= 200);
        match r {
            Some(r) if r.status == 200 && r.json()["target"] == "/probe" => {}
            other => return Err(format!("probe after the case got {other:?}")),
        }
    }
    Ok(ex)
}

#[test]
fn hostile_inputs_uring() {
    suite(ringway::Backend::Uring);
}

#[test]
fn hostile_inputs_epoll() {
    suite(ringway::Backend::Epoll);
}

/// The same cases against a request-view handler (`ViewTestHandler`): the strictness
/// is the decoder's, whichever handler API answers.
#[test]
fn hostile_inputs_view_handler() {
    suite_with(
        ringway::Backend::Uring,
        Setup {
            view: true,
            ..Setup::default()
        },
    );
}

fn suite(backend: ringway::Backend) {
    suite_with(backend, Setup::default());
}

fn suite_with(backend: ringway::Backend, mut setup: Setup) {
    setup.backend = Some(backend);
    let server = TestServer::start_setup(config(), setup);
    let cases = cases();
    let mut failures = Vec::new();
    let mut streams = Vec::new();
    // Whole.
    for c in &cases {
        match run(&server, c, &[&c.req], Duration::ZERO, true) {
            Ok(ex) => {
                let methods = c
                    .heads
                    .iter()
                    .map(|h| if *h { "HEAD" } else { "GET" }.to_string())
                    .collect();
                streams.push((methods, ex.raw, ex.closed));
            }
            Err(e) => failures.push(format!("{} (whole): {e}", c.name)),
        }
    }
    // Specific checks on bodies and framing of the valid cases.
    {
        let mut s = connect(server.addr);
        write_parts(
            &mut s,
            &[chunked("5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n").as_bytes()],
            Duration::ZERO,
        );
        let ex = read_exchange(&mut s, 1, &[], false, Duration::from_secs(5));
        assert_eq!(ex.responses[0].json()["body"], "hello world");
        let mut s = connect(server.addr);
        write_parts(
            &mut s,
            &[format!("HEAD / HTTP/1.1\r\n{H}\r\n").as_bytes()],
            Duration::ZERO,
        );
        let ex = read_exchange(&mut s, 1, &[true], false, Duration::from_secs(5));
        let r = &ex.responses[0];
        assert!(
            r.header("content-length").is_some(),
            "HEAD keeps Content-Length"
        );
        assert!(r.header("date").is_some() && r.header("server") == Some(b"ringway"));
        let mut s = connect(server.addr);
        write_parts(
            &mut s,
            &[format!("GET /stream HTTP/1.1\r\n{H}\r\n").as_bytes()],
            Duration::ZERO,
        );
        let ex = read_exchange(&mut s, 1, &[], false, Duration::from_secs(5));
        assert_eq!(ex.responses[0].body, b"part1;part2;part3;");
        assert_eq!(
            ex.responses[0].header("transfer-encoding"),
            Some(&b"chunked"[..])
        );
    }
    // One byte at a time.
    for c in &cases {
        // Large heads go in 61-byte pieces (byte by byte they would take seconds).
        let step = if c.req.len() > 4096 { 61 } else { 1 };
        let bytes: Vec<&[u8]> = c.req.chunks(step).collect();
        match run(&server, c, &bytes, Duration::from_micros(50), false) {
            Ok(ex) => {
                let methods = c
                    .heads
                    .iter()
                    .map(|h| if *h { "HEAD" } else { "GET" }.to_string())
                    .collect();
                streams.push((methods, ex.raw, ex.closed));
            }
            Err(e) => failures.push(format!("{} (bytewise): {e}", c.name)),
        }
    }
    // Split in two at every boundary (long cases: every boundary of the first 300 bytes
    // and of the last 64, which covers every field of the framing), 8 clients at once.
    let jobs: Vec<(usize, usize)> = cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            let n = c.req.len();
            (1..n)
                .filter(move |k| *k < 300 || *k + 64 > n)
                .map(move |k| (i, k))
        })
        .collect();
    let split_failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for t in 0..8 {
            let (jobs, cases, server, sf) = (&jobs, &cases, &server, &split_failures);
            sc.spawn(move || {
                for (i, k) in jobs.iter().skip(t).step_by(8) {
                    let c = &cases[*i];
                    let (a, b) = c.req.split_at(*k);
                    if let Err(e) = run(server, c, &[a, b], Duration::from_millis(1), false) {
                        sf.lock()
                            .unwrap()
                            .push(format!("{} (split at {k}): {e}", c.name));
                    }
                }
            });
        }
    });
    failures.extend(split_failures.into_inner().unwrap());
    let stats = server.stop();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(stats.error(ringway_http::ErrorClass::BadRequest) > 0);
    eprintln!(
        "{backend:?}: {} cases, {} split runs; server: {stats}",
        cases.len(),
        jobs.len()
    );
    check_with_h11(&streams);
}
