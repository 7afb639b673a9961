//! The test server's HTTP: request heads by httparse, request bodies by Content-Length,
//! canned responses framed the way the mode says, and the CPU work each request costs
//! (`--work-us`).

use std::time::{Duration, Instant};

/// How responses are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `Content-Length`.
    ContentLength,
    /// `Transfer-Encoding: chunked` with an extension and a trailer.
    Chunked,
    /// No length: the body ends when the server closes.
    Close,
    /// Raw echo (no HTTP).
    Echo,
}

/// What the start of a buffer holds.
pub(crate) enum Parsed {
    /// A whole request of `len` bytes; `status` to answer with.
    Request { len: usize, status: u16 },
    /// Not all of it yet.
    Partial,
    /// Not HTTP.
    Bad,
}

/// Parses one request from the start of `buf`.
pub(crate) fn parse_request(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    let head = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Bad,
    };
    let mut body = 0usize;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            match std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
            {
                Some(n) => body = n,
                None => return Parsed::Bad,
            }
        }
    }
    let status = req
        .path
        .and_then(|p| p.strip_prefix("/status/"))
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    if buf.len() < head + body {
        return Parsed::Partial;
    }
    Parsed::Request {
        len: head + body,
        status,
    }
}

/// Appends the response to `out`. The body is always `Hello, World!`.
pub(crate) fn respond(mode: Mode, status: u16, out: &mut Vec<u8>) {
    let line = format!("HTTP/1.1 {status} X\r\nServer: t\r\nContent-Type: text/plain\r\n");
    out.extend_from_slice(line.as_bytes());
    match mode {
        Mode::ContentLength | Mode::Echo => {
            out.extend_from_slice(b"Content-Length: 13\r\n\r\nHello, World!")
        }
        Mode::Chunked => out.extend_from_slice(
            b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nHello\r\n8\r\n, World!\r\n0\r\nX-Trailer: 1\r\n\r\n",
        ),
        Mode::Close => out.extend_from_slice(b"\r\nHello, World!"),
    }
}

/// Spins for `d`: CPU work that makes this server the bottleneck.
pub(crate) fn burn(d: Duration) {
    if d.is_zero() {
        return;
    }
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}
