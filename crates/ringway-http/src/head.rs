//! The request head: httparse for the syntax, then our own checks of the target, the
//! version, `Host`, and the fields that decide framing and the connection's fate.
//!
//! Everything here is pure (bytes in, a parsed head or an [`HttpError`] out), so the
//! property tests and the fuzz target drive it without sockets.

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri, Version};

use crate::config::{Config, MAX_HEADERS_CAP};
use crate::error::{ErrorClass, HttpError};
use crate::framing::{body_kind, BodyKind};

/// A parsed and checked request head.
#[derive(Debug, Clone)]
pub struct Head {
    /// The method.
    pub method: Method,
    /// The target.
    pub uri: Uri,
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// The fields, in order.
    pub headers: HeaderMap,
    /// How the body is framed.
    pub body: BodyKind,
    /// Whether the client allows the connection to stay open after this exchange.
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request.
    pub expect_continue: bool,
}

/// The outcome of parsing a head from the start of a buffer.
#[derive(Debug)]
pub enum Parsed {
    /// A whole head and how many bytes it took.
    Complete(Box<Head>, usize),
    /// Not enough bytes yet (and none of the limits is exceeded).
    Partial,
}

/// Parses a request head from the start of `buf`.
pub fn parse_head(buf: &[u8], cfg: &Config) -> Result<Parsed, HttpError> {
    // The request line limit first: a long target is 414, whatever else is wrong.
    let line_end = memchr_nl(buf);
    match line_end {
        Some(i) if i > cfg.max_request_line => {
            return Err(HttpError::new(
                ErrorClass::UriTooLong,
                "request line too long",
            ))
        }
        None if buf.len() > cfg.max_request_line => {
            return Err(HttpError::new(
                ErrorClass::UriTooLong,
                "request line too long",
            ))
        }
        _ => {}
    }
    let max = cfg.max_headers.min(MAX_HEADERS_CAP);
    // Uninitialised field slots: initialising 128 of them per request costs more than
    // parsing a small head.
    let mut fields =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_CAP];
    let mut req = httparse::Request::new(&mut []);
    let status = match req.parse_with_uninit_headers(buf, &mut fields[..max]) {
        Ok(s) => s,
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HttpError::new(
                ErrorClass::HeaderTooLarge,
                "too many fields",
            ))
        }
        Err(httparse::Error::Version) => {
            // The line may still be arriving: `HTTP/2` could become `HTTP/2.0` (505).
            if line_end.is_none() && version_may_follow(buf) {
                return Ok(Parsed::Partial);
            }
            return Err(version_error(buf));
        }
        Err(httparse::Error::Token) => return Err(HttpError::bad("invalid token")),
        Err(httparse::Error::HeaderName) => return Err(HttpError::bad("invalid field name")),
        Err(httparse::Error::HeaderValue) => return Err(HttpError::bad("invalid field value")),
        Err(httparse::Error::NewLine) => return Err(HttpError::bad("invalid line ending")),
        Err(_) => return Err(HttpError::bad("malformed head")),
    };
    let len = match status {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => {
            if buf.len() > cfg.max_head_size {
                return Err(HttpError::new(ErrorClass::HeaderTooLarge, "head too large"));
            }
            return Ok(Parsed::Partial);
        }
    };
    if len > cfg.max_head_size {
        return Err(HttpError::new(ErrorClass::HeaderTooLarge, "head too large"));
    }
    let head_bytes = &buf[..len];
    // Belt and braces over httparse: no NUL, no CR without LF, anywhere in the head.
    check_nul_and_bare_cr(head_bytes)?;
    let method = req
        .method
        .ok_or_else(|| HttpError::bad("no method"))
        .and_then(|m| Method::from_bytes(m.as_bytes()).map_err(|_| HttpError::bad("bad method")))?;
    let version = match req.version {
        Some(0) => Version::HTTP_10,
        Some(1) => Version::HTTP_11,
        _ => return Err(HttpError::bad("bad version")),
    };
    let target = req.path.ok_or_else(|| HttpError::bad("no target"))?;
    let uri = parse_target(&method, target)?;

    let mut headers = HeaderMap::with_capacity(req.headers.len());
    let mut hosts = 0;
    let mut lengths: Vec<&[u8]> = Vec::new();
    let mut codings: Option<Vec<u8>> = None;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut expect_continue = false;
    for f in req.headers.iter() {
        if f.name.len() + f.value.len() > cfg.max_field_size {
            return Err(HttpError::new(
                ErrorClass::HeaderTooLarge,
                "field too large",
            ));
        }
        let name = HeaderName::from_bytes(f.name.as_bytes())
            .map_err(|_| HttpError::bad("invalid field name"))?;
        if f.value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(HttpError::bad("control byte in field value"));
        }
        let value =
            HeaderValue::from_bytes(f.value).map_err(|_| HttpError::bad("invalid field value"))?;
        if name == http::header::HOST {
            hosts += 1;
        } else if name == http::header::CONTENT_LENGTH {
            lengths.push(f.value);
        } else if name == http::header::TRANSFER_ENCODING {
            let c = codings.get_or_insert_with(Vec::new);
            if !c.is_empty() {
                c.push(b',');
            }
            c.extend_from_slice(f.value);
        } else if name == http::header::CONNECTION {
            for token in f.value.split(|&b| b == b',') {
                let t = trim_ows(token);
                if t.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive_token = true;
                }
            }
        } else if name == http::header::EXPECT {
            if trim_ows(f.value).eq_ignore_ascii_case(b"100-continue") {
                expect_continue = version == Version::HTTP_11;
            } else {
                return Err(HttpError::new(
                    ErrorClass::ExpectationFailed,
                    "unsupported expectation",
                ));
            }
        }
        headers.append(name, value);
    }
    if version == Version::HTTP_11 && hosts != 1 {
        return Err(HttpError::bad("HTTP/1.1 needs exactly one Host"));
    }
    if hosts > 1 {
        return Err(HttpError::bad("duplicate Host"));
    }
    let body = body_kind(version, &lengths, codings.as_deref())?;
    let keep_alive = match version {
        Version::HTTP_11 => !close,
        _ => keep_alive_token && !close,
    };
    Ok(Parsed::Complete(
        Box::new(Head {
            method,
            uri,
            version,
            headers,
            body,
            keep_alive,
            expect_continue,
        }),
        len,
    ))
}

fn memchr_nl(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

/// No NUL anywhere in the head, and a CR always followed by LF.
fn check_nul_and_bare_cr(head: &[u8]) -> Result<(), HttpError> {
    for (i, &b) in head.iter().enumerate() {
        if b <= b'\r' {
            if b == 0 {
                return Err(HttpError::bad("NUL in head"));
            }
            if b == b'\r' && head.get(i + 1) != Some(&b'\n') {
                return Err(HttpError::bad("bare CR in head"));
            }
        }
    }
    Ok(())
}

/// Whether the unfinished request line ends in a prefix of `HTTP/d.d`.
fn version_may_follow(buf: &[u8]) -> bool {
    let last = buf.rsplit(|&b| b == b' ').next().unwrap_or(buf);
    let last = last.strip_suffix(b"\r").unwrap_or(last);
    let pattern = b"HTTP/0.0";
    last.len() <= pattern.len()
        && last.iter().zip(pattern).all(|(&b, &p)| match p {
            b'0' => b.is_ascii_digit(),
            _ => b == p,
        })
}

/// Decides whether a head that has not parsed yet is worth parsing again after more
/// bytes came: always while it is short, then only when a blank line may have arrived
/// or the buffer doubled. This keeps a client that trickles a large head one byte at a
/// time from making the server parse it quadratically.
#[derive(Debug, Default, Clone)]
pub struct HeadGate {
    attempted: usize,
    scanned: usize,
}

impl HeadGate {
    /// Whether to run the parser on `buf` now (the limits always get checked).
    pub fn should_parse(&mut self, buf: &[u8], cfg: &Config) -> bool {
        let n = buf.len();
        if self.attempted == 0 {
            // First look at this head: always parse (the common case, a whole head).
            self.attempted = n.max(1);
            self.scanned = n;
            return true;
        }
        let from = self.scanned.saturating_sub(3).min(n);
        let blank = buf[from..].windows(2).any(|w| w == b"\n\n")
            || buf[from..].windows(3).any(|w| w == b"\n\r\n");
        self.scanned = n;
        let go = n <= 1024
            || blank
            || n >= 2 * self.attempted
            || n > cfg.max_head_size
            || (n > cfg.max_request_line && !buf.contains(&b'\n'));
        if go {
            self.attempted = n;
        }
        go
    }

    /// Forgets the head (it parsed, or failed).
    pub fn reset(&mut self) {
        *self = HeadGate::default();
    }
}

/// httparse refused the version: 505 for a well-formed `HTTP/x.y` of another major
/// version, 400 for anything else.
fn version_error(buf: &[u8]) -> HttpError {
    let line = buf.split(|&b| b == b'\n').next().unwrap_or(buf);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let last = line.rsplit(|&b| b == b' ').next().unwrap_or(line);
    let wellformed = last.len() == 8
        && last.starts_with(b"HTTP/")
        && last[5].is_ascii_digit()
        && last[6] == b'.'
        && last[7].is_ascii_digit();
    if wellformed && last[5] != b'1' && line.iter().filter(|&&b| b == b' ').count() == 2 {
        HttpError::new(ErrorClass::VersionNotSupported, "unsupported HTTP version")
    } else {
        HttpError::bad("bad version")
    }
}

/// The four target forms of RFC 9112 §3.2, each only where it belongs.
fn parse_target(method: &Method, target: &str) -> Result<Uri, HttpError> {
    let bytes = target.as_bytes();
    if bytes.is_empty()
        || bytes
            .iter()
            .any(|&b| !(0x21..=0x7e).contains(&b) || b == b'#')
    {
        return Err(HttpError::bad("invalid target bytes"));
    }
    let ok_form = if bytes[0] == b'/' {
        true
    } else if bytes == b"*" {
        method == Method::OPTIONS
    } else if *method == Method::CONNECT {
        true
    } else {
        let lower = bytes.to_ascii_lowercase();
        lower.starts_with(b"http://") || lower.starts_with(b"https://")
    };
    if !ok_form {
        return Err(HttpError::bad("invalid target form"));
    }
    Uri::from_maybe_shared(Bytes::copy_from_slice(bytes)).map_err(|_| HttpError::bad("bad target"))
}

/// Trims optional whitespace (SP and HTAB only: never NBSP or other bytes).
pub(crate) fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}
