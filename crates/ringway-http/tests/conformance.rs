//! The hostile-input conformance suite (reference/http-hostile-inputs.md) over real
//! sockets: every case class, the exact statuses, whether the connection closes, and
//! that nothing after a framing error is served. Each case is sent whole, one byte at a
//! time, and split in two at every byte boundary; every response stream captured from
//! the whole sends is then parsed by h11.

mod common;

use std::time::Duration;

use common::*;
use ringway_http::Config;

struct Case {
    name: &'static str,
    req: Vec<u8>,
    statuses: Vec<u16>,
    close: bool,
    heads: Vec<bool>,
}

fn case(name: &'static str, req: impl AsRef<[u8]>, statuses: &[u16], close: bool) -> Case {
    Case {
        name,
        req: req.as_ref().to_vec(),
        statuses: statuses.to_vec(),
        close,
        heads: vec![false; statuses.len()],
    }
}

const H: &str = "Host: a\r\n";

fn get(extra: &str) -> String {
    format!("GET / HTTP/1.1\r\n{H}{extra}\r\n")
}

fn post(fields: &str, body: &str) -> String {
    format!("POST /p HTTP/1.1\r\n{H}{fields}\r\n{body}")
}

fn chunked(body: &str) -> String {
    post("Transfer-Encoding: chunked\r\n", body)
}

fn cases() -> Vec<Case> {
    let long_target = format!("GET /{} HTTP/1.1\r\n{H}\r\n", "a".repeat(9000));
    let long_method = format!("{} / HTTP/1.1\r\n{H}\r\n", "A".repeat(9000));
    let many_fields: String = (0..150).map(|i| format!("X-{i}: v\r\n")).collect();
    let big_field = format!("X-Big: {}\r\n", "b".repeat(9000));
    let big_head: String = (0..40)
        .map(|i| format!("X-{i}: {}\r\n", "c".repeat(1000)))
        .collect();
    let long_ext = format!("5;{}\r\nhello\r\n0\r\n\r\n", "e".repeat(2000));
    let trailer_flood = format!("0\r\n{}\r\n", "X-T: aaaaaaaaaaaaaaaa\r\n".repeat(600));
    let mut v = vec![
        // Valid baselines.
        case("simple get", get(""), &[200], false),
        case("HTTP/1.0 closes", "GET / HTTP/1.0\r\n\r\n", &[200], true),
        case(
            "HTTP/1.0 keep-alive",
            "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            &[200],
            false,
        ),
        case(
            "absolute form",
            format!("GET http://a/x HTTP/1.1\r\n{H}\r\n"),
            &[200],
            false,
        ),
        case(
            "asterisk form",
            format!("OPTIONS * HTTP/1.1\r\n{H}\r\n"),
            &[200],
            false,
        ),
        case(
            "content-length body",
            post("Content-Length: 5\r\n", "hello"),
            &[200],
            false,
        ),
        case(
            "chunked body",
            chunked("5\r\nhello\r\n0\r\n\r\n"),
            &[200],
            false,
        ),
        case(
            "status 204",
            format!("GET /status/204 HTTP/1.1\r\n{H}\r\n"),
            &[204],
            false,
        ),
        case(
            "status 304",
            format!("GET /status/304 HTTP/1.1\r\n{H}\r\n"),
            &[304],
            false,
        ),
        case(
            "streamed chunked response",
            format!("GET /stream HTTP/1.1\r\n{H}\r\n"),
            &[200],
            false,
        ),
        case(
            "streamed to HTTP/1.0",
            "GET /stream HTTP/1.0\r\n\r\n",
            &[200],
            true,
        ),
        case(
            "connection close",
            get("Connection: close\r\n"),
            &[200],
            true,
        ),
        // 1. separators
        case(
            "tab separator",
            format!("GET /\tHTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case(
            "double space",
            format!("GET  / HTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case(
            "bare LF in request line",
            format!("GET /\nHTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        // 2. method tokens
        case(
            "NUL in method",
            format!("G\0T / HTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case(
            "separator in method",
            format!("GE(T / HTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case("absurd method", long_method, &[414], true),
        // 3. versions
        case(
            "HTTP/1.32",
            format!("GET / HTTP/1.32\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case(
            "huge version",
            format!("GET / HTTP/4294967295.255\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case(
            "CR in version",
            format!("GET / HTTP/\r\r1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case("no version", format!("GET /\r\n{H}\r\n"), &[400], true),
        case(
            "HTTP/2.0",
            format!("GET / HTTP/2.0\r\n{H}\r\n"),
            &[505],
            true,
        ),
        case(
            "HTTP/0.9 version",
            format!("GET / HTTP/0.9\r\n{H}\r\n"),
            &[505],
            true,
        ),
        // 4. targets
        case(
            "bang target",
            format!("GET ! HTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case(
            "fragment",
            format!("GET /a#b HTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case(
            "asterisk on GET",
            format!("GET * HTTP/1.1\r\n{H}\r\n"),
            &[400],
            true,
        ),
        case("target too long", long_target, &[414], true),
        // 5-11. fields
        case(
            "space before colon",
            post("Content-Length : 3\r\n", "abc"),
            &[400],
            true,
        ),
        case(
            "whitespace before first field",
            format!("GET / HTTP/1.1\r\n {H}\r\n"),
            &[400],
            true,
        ),
        case("obs-fold", get("X-A: b\r\n c\r\n"), &[400], true),
        case("bare CR in field", get("X-A: b\rX-B: c\r\n"), &[400], true),
        case(
            "CR then junk ending head",
            format!("GET / HTTP/1.1\r\n{H}\rX"),
            &[400],
            true,
        ),
        case("NUL in value", get("X-A: a\0b\r\n"), &[400], true),
        case("LF in value", get("X-A: a\nb\r\n"), &[400], true),
        case("CR in value", get("X-A: a\rb\r\n"), &[400], true),
        case("control in name", get("X\x01Y: a\r\n"), &[400], true),
        case("space in name", get("X Y: a\r\n"), &[400], true),
        case("high byte in name", get("X\u{80}Y: a\r\n"), &[400], true),
        case(
            "NBSP before chunked",
            post("Transfer-Encoding: \u{a0}chunked\r\n", "0\r\n\r\n"),
            &[400],
            true,
        ),
        case("empty field name", get(": a\r\n"), &[400], true),
        case("line without colon", get("NoColon\r\n"), &[400], true),
        // 12. bare LF tolerated in the head only
        case("bare LF head", "GET / HTTP/1.1\nHost: a\n\n", &[200], false),
        case(
            "bare LF in chunked",
            chunked("5\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        // 13. Host
        case("missing Host", "GET / HTTP/1.1\r\n\r\n", &[400], true),
        case("duplicate Host", get("Host: b\r\n"), &[400], true),
        // 14. floods
        case("too many fields", get(&many_fields), &[431], true),
        case("oversized field", get(&big_field), &[431], true),
        case("oversized head", get(&big_head), &[431], true),
        // 15-17. Content-Length
        case(
            "CL and TE",
            post(
                "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                "0\r\n\r\n",
            ),
            &[400],
            true,
        ),
        case(
            "duplicate CL",
            post("Content-Length: 3\r\nContent-Length: 3\r\n", "abc"),
            &[400],
            true,
        ),
        case(
            "conflicting CL",
            post("Content-Length: 3\r\nContent-Length: 4\r\n", "abcd"),
            &[400],
            true,
        ),
        case(
            "CL list",
            post("Content-Length: 3, 3\r\n", "abc"),
            &[400],
            true,
        ),
        case("empty CL", post("Content-Length: \r\n", ""), &[400], true),
        case(
            "CL +10",
            post("Content-Length: +3\r\n", "abc"),
            &[400],
            true,
        ),
        case("CL -1", post("Content-Length: -1\r\n", ""), &[400], true),
        case(
            "CL hex",
            post("Content-Length: 0x3\r\n", "abc"),
            &[400],
            true,
        ),
        case(
            "CL underscore",
            post("Content-Length: 1_0\r\n", "abc"),
            &[400],
            true,
        ),
        case("CL junk", post("Content-Length: 1Z\r\n", "a"), &[400], true),
        case(
            "CL inner space",
            post("Content-Length: 1 2\r\n", "a"),
            &[400],
            true,
        ),
        case(
            "CL overflow",
            post("Content-Length: 99999999999999999999999\r\n", ""),
            &[400],
            true,
        ),
        // 18. Transfer-Encoding
        case(
            "TE unknown",
            post("Transfer-Encoding: gzip\r\n", ""),
            &[501],
            true,
        ),
        case(
            "TE gzip, chunked",
            post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"),
            &[501],
            true,
        ),
        case(
            "TE empty",
            post("Transfer-Encoding: \r\n", "0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "TE leading comma",
            post("Transfer-Encoding: ,chunked\r\n", "0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "TE chunked twice",
            post("Transfer-Encoding: chunked, chunked\r\n", "0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "TE chunked not last",
            post("Transfer-Encoding: chunked, gzip\r\n", "0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "TE on HTTP/1.0",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            &[400],
            true,
        ),
        // 19. chunk sizes
        case(
            "chunk 0x",
            chunked("0x5\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case("chunk +", chunked("+5\r\nhello\r\n0\r\n\r\n"), &[400], true),
        case("chunk -", chunked("-5\r\nhello\r\n0\r\n\r\n"), &[400], true),
        case(
            "chunk _",
            chunked("5_0\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "chunk junk",
            chunked("5 junk\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "chunk empty size",
            chunked("\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "chunk leading space",
            chunked(" 5\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "chunk 17 digits",
            chunked("00000000000000005\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        // 20. chunk line endings
        case(
            "chunk CR junk",
            chunked("5\r\nhello\rX0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "chunk data overrun",
            chunked("5\r\nhelloXX\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        // 21. extensions
        case(
            "chunk ext quoted",
            chunked("5;a=\"b;c\\\"\";d\r\nhello\r\n0;x=y\r\n\r\n"),
            &[200],
            false,
        ),
        case(
            "chunk ext unbalanced",
            chunked("5;a=\"b\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case("chunk ext too long", chunked(&long_ext), &[400], true),
        // RFC 9112 §7.1.1: a name must follow `;`.
        case(
            "chunk ext without a name",
            chunked("5;\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "chunk ext `;=v`",
            chunked("5;=v\r\nhello\r\n0\r\n\r\n"),
            &[400],
            true,
        ),
        case(
            "chunk ext with spaces",
            chunked("5 ; a = b\r\nhello\r\n0\r\n\r\n"),
            &[200],
            false,
        ),
        // 22. trailers
        case(
            "trailer",
            chunked("5\r\nhello\r\n0\r\nX-T: a\r\n\r\n"),
            &[200],
            false,
        ),
        case("trailer flood", chunked(&trailer_flood), &[431], true),
        case(
            "trailer is a request line",
            chunked(&format!("0\r\nGET /x HTTP/1.1\r\n{H}\r\n")),
            &[400],
            true,
        ),
        // 23. invalid chunk, then a valid-looking request: never served
        case(
            "smuggle after bad chunk",
            chunked(&format!("Z\r\n\r\nGET /smuggled HTTP/1.1\r\n{H}\r\n")),
            &[400],
            true,
        ),
        case(
            "smuggle via CL+TE",
            post(
                "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
                &format!("0\r\n\r\nGET /smuggled HTTP/1.1\r\n{H}\r\n"),
            ),
            &[400],
            true,
        ),
        // 24. pipelining
        case(
            "pipelined two",
            format!("{}{}", get(""), get("")),
            &[200, 200],
            false,
        ),
        case(
            "body-less then more",
            format!("GET / HTTP/1.1\r\n{H}Content-Length: 0\r\n\r\n{}", get("")),
            &[200, 200],
            false,
        ),
        case(
            "valid then garbage",
            format!("{}\x01\x02garbage\r\n\r\n", get("")),
            &[200, 400],
            true,
        ),
        case(
            "nothing after close",
            format!("{}{}", get("Connection: close\r\n"), get("")),
            &[200],
            true,
        ),
        // 25. Expect
        case(
            "expect with body",
            post("Content-Length: 5\r\nExpect: 100-continue\r\n", "hello"),
            &[200],
            false,
        ),
        case(
            "expect without body",
            get("Expect: 100-continue\r\n"),
            &[200],
            false,
        ),
        case(
            "expect on 1.0 ignored",
            "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
            &[200],
            true,
        ),
        case(
            "unknown expectation",
            get("Expect: teapot\r\n"),
            &[417],
            true,
        ),
        // 29. garbage, TLS on the plaintext port
        case("binary garbage", b"\x00\xff\x13\x37\r\n\r\n", &[400], true),
        case(
            "TLS ClientHello on plaintext",
            b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\x00\x01\x02\x03\x04\x05\x06\x07",
            &[400],
            true,
        ),
        // 30. over the body limit: 413 without reading it
        case(
            "CL over limit",
            post("Content-Length: 100000\r\n", "x"),
            &[413],
            true,
        ),
        case(
            "chunked over limit",
            chunked(&format!("2000\r\n{}\r\n0\r\n\r\n", "y".repeat(8192))),
            &[413],
            true,
        ),
    ];
    let mut head = case(
        "HEAD keeps length, no body",
        format!("HEAD / HTTP/1.1\r\n{H}\r\n{}", get("")),
        &[200, 200],
        false,
    );
    head.heads = vec![true, false];
    v.push(head);
    v
}

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
