//! Serialising responses into the connection's output buffer: status line, `Server`,
//! `Date`, framing fields decided here (never trusted from the handler), then the body.
//! Several responses are appended to one buffer and leave in one send.

use std::pin::Pin;

use http::{Response, StatusCode, Version};

use crate::body::{Body, BodyStream, Inner};
use crate::date::with_date;

/// How a streamed body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamFraming {
    /// Exactly this many bytes (`Content-Length`).
    Length(u64),
    /// Chunked coding.
    Chunked,
    /// Until the connection closes (HTTP/1.0 peers).
    Close,
}

/// A body still to send after the head (and everything before it) has been flushed.
pub(crate) struct PendingBody {
    pub stream: Pin<Box<dyn BodyStream>>,
    pub framing: StreamFraming,
}

/// What the request asked that shapes the response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReqInfo {
    pub head: bool,
    pub version: Version,
    /// The connection closes after this response.
    pub close: bool,
}

/// Appends `resp` to `out`. Returns the body still to stream, if any, and whether the
/// connection must close after it (close-delimited bodies).
pub(crate) fn encode(
    out: &mut Vec<u8>,
    resp: Response<Body>,
    req: ReqInfo,
    server: Option<&str>,
) -> (Option<PendingBody>, bool, u64) {
    let (parts, body) = resp.into_parts();
    let status = parts.status;
    let no_body = status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || status.is_informational();
    let mut close = req.close;
    let mut pending = None;
    let mut sent_len = 0;
    // Decide framing first: a close-delimited body forces `Connection: close`.
    let framing = match (&body.inner, no_body) {
        (_, true) => None,
        (Inner::Empty, _) => Some(StreamFraming::Length(0)),
        (Inner::Full(b), _) => Some(StreamFraming::Length(b.len() as u64)),
        (Inner::Stream { len: Some(n), .. }, _) => Some(StreamFraming::Length(*n)),
        (Inner::Stream { len: None, .. }, _) if req.head => None,
        (Inner::Stream { len: None, .. }, _) if req.version == Version::HTTP_11 => {
            Some(StreamFraming::Chunked)
        }
        (Inner::Stream { len: None, .. }, _) => {
            close = true;
            Some(StreamFraming::Close)
        }
    };
    status_line(out, status);
    if let Some(s) = server {
        put(out, b"server: ", s.as_bytes());
    }
    with_date(|d| put(out, b"date: ", d));
    for (name, value) in parts.headers.iter() {
        if name == http::header::CONTENT_LENGTH
            || name == http::header::TRANSFER_ENCODING
            || name == http::header::CONNECTION
            || name == http::header::DATE
            || (server.is_some() && name == http::header::SERVER)
        {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match framing {
        Some(StreamFraming::Length(n)) => {
            out.extend_from_slice(b"content-length: ");
            push_u64(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Some(StreamFraming::Chunked) => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        Some(StreamFraming::Close) | None => {}
    }
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    } else if req.version == Version::HTTP_10 {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !no_body && !req.head {
        match body.inner {
            Inner::Empty => {}
            Inner::Full(b) => {
                sent_len = b.len() as u64;
                out.extend_from_slice(&b);
            }
            Inner::Stream { stream, .. } => {
                pending = framing.map(|framing| PendingBody { stream, framing });
            }
        }
    }
    (pending, close, sent_len)
}

/// Appends a minimal error response (which always closes the connection).
pub(crate) fn encode_error(out: &mut Vec<u8>, status: u16, server: Option<&str>) {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let reason = status.canonical_reason().unwrap_or("Error");
    status_line(out, status);
    if let Some(s) = server {
        put(out, b"server: ", s.as_bytes());
    }
    with_date(|d| put(out, b"date: ", d));
    out.extend_from_slice(b"content-type: text/plain; charset=utf-8\r\ncontent-length: ");
    push_u64(out, reason.len() as u64 + 1);
    out.extend_from_slice(b"\r\nconnection: close\r\n\r\n");
    out.extend_from_slice(reason.as_bytes());
    out.push(b'\n');
}

/// The interim `100 Continue`.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

fn status_line(out: &mut Vec<u8>, status: StatusCode) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn put(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `n` in hex (chunk sizes).
pub(crate) fn push_hex(out: &mut Vec<u8>, n: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = HEX[(n & 15) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}
