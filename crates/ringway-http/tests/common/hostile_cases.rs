//! The cases of the hostile-input conformance suite (reference/http-hostile-inputs.md):
//! each request as bytes, the statuses it must get, and whether the connection must
//! close. `conformance.rs` sends them to a server; `differential.rs` mutates them for
//! the head scanner and its reference.

pub(crate) struct Case {
    pub name: &'static str,
    pub req: Vec<u8>,
    pub statuses: Vec<u16>,
    pub close: bool,
    pub heads: Vec<bool>,
}

pub(crate) fn case(
    name: &'static str,
    req: impl AsRef<[u8]>,
    statuses: &[u16],
    close: bool,
) -> Case {
    Case {
        name,
        req: req.as_ref().to_vec(),
        statuses: statuses.to_vec(),
        close,
        heads: vec![false; statuses.len()],
    }
}

pub(crate) const H: &str = "Host: a\r\n";

pub(crate) fn get(extra: &str) -> String {
    format!("GET / HTTP/1.1\r\n{H}{extra}\r\n")
}

pub(crate) fn post(fields: &str, body: &str) -> String {
    format!("POST /p HTTP/1.1\r\n{H}{fields}\r\n{body}")
}

pub(crate) fn chunked(body: &str) -> String {
    post("Transfer-Encoding: chunked\r\n", body)
}

pub(crate) fn cases() -> Vec<Case> {
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
