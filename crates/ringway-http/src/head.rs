//! The request head: [`scan_head`] checks one against RFC 9112 and records what it
//! found as offsets into the bytes ([`RawHead`]): no allocation, no copy and no `http`
//! types, which is what the server runs per request. [`Head`] is the same head as
//! `http` types, built on demand from a [`RawHead`] (only handlers that take
//! `http::Request` pay for it). [`parse_head`] does both at once.
//!
//! The scan is our own (`scanner.rs`: the request line and the field lines in one pass,
//! byte classes from one table, `classes.rs`); the rules it shares with the reference
//! parser are in `rules.rs`. The reference, httparse plus the checks this crate made of
//! its result, is `reference.rs`: built for tests and the fuzz target only (the
//! `differential` feature), which hold the scanner to it on the same inputs.
//!
//! Everything here is pure (bytes in, a head or an [`HttpError`] out), so the property
//! tests and the fuzz target drive it without sockets.

pub(crate) mod classes;
#[cfg(any(test, feature = "differential"))]
pub mod reference;
mod rules;
mod scanner;

use bytes::Bytes;
use http::header::{
    HeaderMap, HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, EXPECT, HOST, TRANSFER_ENCODING,
};
use http::uri::PathAndQuery;
use http::{Method, Uri, Version};

use crate::config::Config;
use crate::error::HttpError;
use crate::framing::BodyKind;
use crate::token::trim_ows;

use rules::is_host;

/// A request head that passed every check, as offsets into the bytes it was scanned
/// from (see [`scan_head`]). Read it through [`crate::RequestView`], or turn it into
/// `http` types with [`RawHead::to_head`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawHead {
    /// Bytes the head takes: request line, field lines and the empty line.
    pub len: usize,
    method_start: u32,
    method_len: u16,
    target_start: u32,
    target_len: u32,
    /// Length of the path in an origin-form target (before `?`); `u32::MAX` for the
    /// other forms.
    path_len: u32,
    fields_start: u32,
    fields: u16,
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// How the body is framed.
    pub body: BodyKind,
    /// Whether the client allows the connection to stay open after this exchange.
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request.
    pub expect_continue: bool,
    /// The method is `HEAD` (the response gets no body).
    pub is_head: bool,
}

/// The outcome of scanning a head from the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scanned {
    /// A whole head.
    Complete(RawHead),
    /// Not enough bytes yet (and none of the limits is exceeded).
    Partial,
}

impl RawHead {
    /// A placeholder for a head still to be scanned into its place (an empty `GET`).
    pub(crate) const EMPTY: RawHead = RawHead {
        len: 0,
        method_start: 0,
        method_len: 0,
        target_start: 0,
        target_len: 0,
        path_len: 0,
        fields_start: 0,
        fields: 0,
        version: Version::HTTP_11,
        body: BodyKind::None,
        keep_alive: false,
        expect_continue: false,
        is_head: false,
    };

    /// The method token.
    pub fn method<'a>(&self, head: &'a [u8]) -> &'a str {
        let s = self.method_start as usize;
        as_str(&head[s..s + self.method_len as usize])
    }

    /// The request target, as sent.
    pub fn target<'a>(&self, head: &'a [u8]) -> &'a str {
        let s = self.target_start as usize;
        as_str(&head[s..s + self.target_len as usize])
    }

    /// The field lines as `(name, value)`, in order, values without surrounding
    /// whitespace.
    pub fn fields<'a>(&self, head: &'a [u8]) -> Fields<'a> {
        Fields(self.raw_fields(head))
    }

    /// The field lines as byte strings (no UTF-8 check of the names).
    pub(crate) fn raw_fields<'a>(&self, head: &'a [u8]) -> RawFields<'a> {
        let end = self.len.min(head.len());
        let start = (self.fields_start as usize).min(end);
        RawFields {
            rest: &head[start..end],
            left: self.fields,
        }
    }

    /// How many field lines the head has.
    pub fn field_count(&self) -> usize {
        self.fields as usize
    }

    /// The same head as `http` types (allocates: the target, the field map).
    pub fn to_head(&self, head: &[u8]) -> Result<Head, HttpError> {
        let method = Method::from_bytes(self.method(head).as_bytes())
            .map_err(|_| HttpError::bad("bad method"))?;
        let uri = Uri::from_maybe_shared(Bytes::copy_from_slice(self.target(head).as_bytes()))
            .map_err(|_| HttpError::bad("bad target"))?;
        Ok(Head {
            method,
            uri,
            version: self.version,
            headers: self.header_map(head)?,
            body: self.body,
            keep_alive: self.keep_alive,
            expect_continue: self.expect_continue,
        })
    }

    /// The method, from the very bytes this head was scanned from.
    ///
    /// # Safety
    ///
    /// `head` must start with the bytes [`scan_head`] returned this head for (which
    /// checked the method to be an ASCII token).
    pub(crate) unsafe fn method_unchecked<'a>(&self, head: &'a [u8]) -> &'a str {
        let s = self.method_start as usize;
        let b = &head[s..s + self.method_len as usize];
        debug_assert!(b.is_ascii());
        // SAFETY: ASCII, as the caller guarantees.
        unsafe { std::str::from_utf8_unchecked(b) }
    }

    /// The target, from the very bytes this head was scanned from.
    ///
    /// # Safety
    ///
    /// As for [`method_unchecked`](Self::method_unchecked) (the target was checked to be
    /// visible ASCII).
    pub(crate) unsafe fn target_unchecked<'a>(&self, head: &'a [u8]) -> &'a str {
        let s = self.target_start as usize;
        let b = &head[s..s + self.target_len as usize];
        debug_assert!(b.is_ascii());
        // SAFETY: ASCII, as the caller guarantees.
        unsafe { std::str::from_utf8_unchecked(b) }
    }

    /// The path of an origin-form target (before any `?`), if it is one, from the very
    /// bytes this head was scanned from.
    ///
    /// # Safety
    ///
    /// As for [`method_unchecked`](Self::method_unchecked) (the target was checked to be
    /// visible ASCII).
    #[inline]
    pub(crate) unsafe fn origin_path_unchecked<'a>(&self, head: &'a [u8]) -> Option<&'a str> {
        if self.path_len == u32::MAX {
            return None;
        }
        let s = self.target_start as usize;
        let b = &head[s..s + self.path_len as usize];
        debug_assert!(b.is_ascii());
        // SAFETY: ASCII, as the caller guarantees.
        Some(unsafe { std::str::from_utf8_unchecked(b) })
    }

    /// The fields as an `http` map.
    pub fn header_map(&self, head: &[u8]) -> Result<HeaderMap, HttpError> {
        let mut map = HeaderMap::with_capacity(self.fields as usize);
        for (name, value) in self.raw_fields(head) {
            let name =
                HeaderName::from_bytes(name).map_err(|_| HttpError::bad("invalid field name"))?;
            let value = HeaderValue::from_bytes(value)
                .map_err(|_| HttpError::bad("invalid field value"))?;
            map.append(name, value);
        }
        Ok(map)
    }

    /// Fills an `http` request's method, target and fields from one copy of the head:
    /// the target and every value are slices of it, not copies of their own. (In place:
    /// the `http` types are large, and moving them around costs.)
    pub(crate) fn fill_http<B>(
        &self,
        head: &[u8],
        req: &mut http::Request<B>,
    ) -> Result<(), HttpError> {
        let method = &head[self.method_start as usize..][..self.method_len as usize];
        // A fresh request's method is GET already.
        if method != b"GET" || *req.method() != Method::GET {
            *req.method_mut() =
                Method::from_bytes(method).map_err(|_| HttpError::bad("bad method"))?;
        }
        *req.version_mut() = self.version;
        let shared = share_head(&head[..self.len]);
        let t = self.target_start as usize;
        let target = shared.slice(t..t + self.target_len as usize);
        // An origin-form target is a path and query and nothing else: made as one
        // straight away (`Uri::from_maybe_shared` would tell the form again first).
        // `/` alone stays with `Uri`, which has it ready-made.
        *req.uri_mut() = if self.path_len != u32::MAX && target.len() > 1 {
            PathAndQuery::from_maybe_shared(target).map(Uri::from)
        } else {
            Uri::from_maybe_shared(target)
        }
        .map_err(|_| HttpError::bad("bad target"))?;
        let map = req.headers_mut();
        map.reserve(self.fields as usize);
        let base = head.as_ptr() as usize;
        for (name, value) in self.raw_fields(head) {
            let name = match scanned_name(name) {
                Some(name) => name,
                None => HeaderName::from_bytes(name)
                    .map_err(|_| HttpError::bad("invalid field name"))?,
            };
            let at = value.as_ptr() as usize - base;
            let value = shared.slice(at..at + value.len());
            // SAFETY: the http crate's contract (not memory safety): the scan admitted
            // exactly the bytes a HeaderValue may hold (HTAB, SP to `~`, 0x80 and up);
            // debug builds check again.
            let value = unsafe { HeaderValue::from_maybe_shared_unchecked(value) };
            map.append(name, value);
        }
        Ok(())
    }
}

/// The `http` name of a field [`scan_head`] reads itself, told the same way (by its
/// length, then its bytes): the constant, without `HeaderName::from_bytes`'s walk of
/// its table. Every HTTP/1.1 request has a `Host`. `None` for the other names.
#[inline]
fn scanned_name(name: &[u8]) -> Option<HeaderName> {
    match name.len() {
        4 if is_host(name) => Some(HOST),
        14 if name.eq_ignore_ascii_case(b"content-length") => Some(CONTENT_LENGTH),
        17 if name.eq_ignore_ascii_case(b"transfer-encoding") => Some(TRANSFER_ENCODING),
        10 if name.eq_ignore_ascii_case(b"connection") => Some(CONNECTION),
        6 if name.eq_ignore_ascii_case(b"expect") => Some(EXPECT),
        _ => None,
    }
}

/// A copy of a head that the target and the field values of an `http` request share.
/// Small heads are copied into the one allocation `Bytes::from_owner` makes (a `Vec`
/// would be one allocation, and the first shared slice of it another, both freed
/// again when the request is dropped).
fn share_head(head: &[u8]) -> Bytes {
    if head.len() <= 128 {
        Bytes::from_owner(InlineHead::<128>::new(head))
    } else if head.len() <= 1024 {
        Bytes::from_owner(InlineHead::<1024>::new(head))
    } else {
        Bytes::copy_from_slice(head)
    }
}

/// Up to `N` bytes, inline.
struct InlineHead<const N: usize> {
    len: usize,
    bytes: [u8; N],
}

impl<const N: usize> InlineHead<N> {
    fn new(head: &[u8]) -> Self {
        let mut bytes = [0; N];
        bytes[..head.len()].copy_from_slice(head);
        InlineHead {
            len: head.len(),
            bytes,
        }
    }
}

impl<const N: usize> AsRef<[u8]> for InlineHead<N> {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The field lines of a scanned head (see [`RawHead::fields`]).
#[derive(Debug, Clone)]
pub struct Fields<'a>(RawFields<'a>);

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(n, v)| (as_str(n), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

/// The field lines as byte strings.
#[derive(Debug, Clone)]
pub(crate) struct RawFields<'a> {
    rest: &'a [u8],
    left: u16,
}

impl<'a> Iterator for RawFields<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The head was checked: every line is `name:value` ending in LF (CR LF or a
        // bare LF), with no obs-fold, so splitting needs no further care.
        let nl = find_byte(self.rest, b'\n')?;
        let line = &self.rest[..nl];
        self.rest = &self.rest[nl + 1..];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = find_byte(line, b':')?;
        Some((&line[..colon], trim_ows(&line[colon + 1..])))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

/// The first `needle` in `hay`, eight bytes per step (a field line is tens of bytes;
/// a byte-per-step search costs five instructions per byte).
fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = LOW * u64::from(needle);
    let mut i = 0;
    while i + 8 <= hay.len() {
        let word = u64::from_le_bytes(hay[i..i + 8].try_into().expect("8 bytes"));
        let x = word ^ pattern;
        // A zero byte of `x` (a match) sets its high bit here; the lowest bit set is
        // exact (a borrow only runs upwards from a zero byte).
        let found = x.wrapping_sub(LOW) & !x & HIGH;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay[i..].iter().position(|&b| b == needle).map(|p| i + p)
}

/// Bytes the scanner checked to be ASCII tokens or target characters.
fn as_str(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("")
}

/// A parsed and checked request head, as `http` types.
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

/// Parses a request head from the start of `buf` into `http` types: [`scan_head`], then
/// [`RawHead::to_head`].
pub fn parse_head(buf: &[u8], cfg: &Config) -> Result<Parsed, HttpError> {
    match scan_head(buf, cfg)? {
        Scanned::Partial => Ok(Parsed::Partial),
        Scanned::Complete(raw) => Ok(Parsed::Complete(Box::new(raw.to_head(buf)?), raw.len)),
    }
}

/// Scans and checks a request head at the start of `buf`, allocating nothing (unless
/// the head has a target in absolute or authority form, which the `http` crate judges).
#[inline]
pub fn scan_head(buf: &[u8], cfg: &Config) -> Result<Scanned, HttpError> {
    scanner::scan_head(buf, cfg)
}

pub(crate) use scanner::scan_head_into;

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

    /// Whether a head was found unfinished since the last [`reset`](Self::reset) (before
    /// that, [`should_parse`](Self::should_parse) always says yes).
    pub(crate) fn is_waiting(&self) -> bool {
        self.attempted != 0
    }

    /// Notes that the head in the first `n` bytes was parsed and found unfinished: what
    /// [`should_parse`](Self::should_parse) notes itself at the first look (a decoder
    /// that parses at the first look without asking calls this instead).
    pub(crate) fn unfinished(&mut self, n: usize) {
        self.attempted = n.max(1);
        self.scanned = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    fn scan(b: &[u8]) -> Result<Scanned, HttpError> {
        scan_head(b, &Config::default())
    }

    /// Found by the fuzz target: the whole input waited for more, its first 8 bytes were
    /// refused. A version field that no byte can complete is refused either way.
    #[test]
    fn a_version_field_that_cannot_complete_is_refused_at_once() {
        for b in [&b"NTz (q \x9a "[..], b"NTz (q \x9a", b"GET / HTTP/1.1 "] {
            assert!(scan(b).is_err(), "{:?}", String::from_utf8_lossy(b));
        }
        // While a later major version may still arrive, the head waits (505 then).
        for b in [&b"GET / HTTP/2"[..], b"GET / HTTP/", b"GET / H", b"GET / "] {
            assert_eq!(
                scan(b),
                Ok(Scanned::Partial),
                "{:?}",
                String::from_utf8_lossy(b)
            );
        }
    }

    #[test]
    fn offsets_and_fields() {
        let b = b"POST /a?b=c HTTP/1.1\r\nHost: x\r\nX-A:  1 \r\nContent-Length: 3\r\n\r\nabc";
        let Ok(Scanned::Complete(h)) = scan(b) else {
            panic!("scans")
        };
        assert_eq!(h.len, b.len() - 3);
        assert_eq!(h.method(b), "POST");
        assert_eq!(h.target(b), "/a?b=c");
        assert_eq!(h.body, BodyKind::Length(3));
        let f: Vec<_> = h.fields(b).collect();
        assert_eq!(
            f,
            vec![
                ("Host", &b"x"[..]),
                ("X-A", &b"1"[..]),
                ("Content-Length", &b"3"[..])
            ]
        );
        let head = h.to_head(b).unwrap();
        assert_eq!(head.uri, "/a?b=c");
        assert_eq!(head.headers.len(), 3);
        // No fields at all (HTTP/1.0), bare LF line endings.
        let b = b"GET / HTTP/1.0\n\n";
        let Ok(Scanned::Complete(h)) = scan(b) else {
            panic!("scans")
        };
        assert_eq!(
            (h.len, h.fields(b).count(), h.keep_alive),
            (b.len(), 0, false)
        );
    }

    #[test]
    fn find_byte_finds_the_first() {
        for len in 0..40 {
            for at in 0..=len {
                let mut hay = vec![b'a'; len];
                if at < len {
                    hay[at] = b'\n';
                }
                // A later one, and bytes next to the needle's value, change nothing.
                if at + 3 < len {
                    hay[at + 3] = b'\n';
                }
                if at > 0 {
                    hay[at - 1] = b'\x0b';
                }
                let want = hay.iter().position(|&b| b == b'\n');
                assert_eq!(find_byte(&hay, b'\n'), want, "{len} {at}");
            }
        }
        for b in 0..=255u8 {
            let hay = [b; 9];
            assert_eq!(find_byte(&hay, b':'), (b == b':').then_some(0), "{b}");
        }
    }

    /// The word compare that finds `Host` agrees with a case-insensitive compare for
    /// every token byte.
    #[test]
    fn host_by_word_is_host_in_any_case() {
        for b in (0..=255u8).filter(|&b| crate::token::is_tchar(b)) {
            for c in *b"host" {
                assert_eq!(b | 0x20 == c, b.to_ascii_lowercase() == c, "{b:#x} {c}");
            }
        }
        for name in ["Host", "HOST", "host", "hOsT"] {
            let b = format!("GET / HTTP/1.1\r\n{name}: a\r\n\r\n");
            assert!(
                matches!(scan(b.as_bytes()), Ok(Scanned::Complete(_))),
                "{name}"
            );
        }
        for name in ["Hosu", "Ho_t", "H0st"] {
            let b = format!("GET / HTTP/1.1\r\nHost: a\r\n{name}: b\r\n\r\n");
            assert!(
                matches!(scan(b.as_bytes()), Ok(Scanned::Complete(_))),
                "{name}"
            );
        }
        let b = b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n";
        assert!(scan(b).is_err(), "two Host fields");
    }

    /// The names the scan tells get the same `HeaderName` as `from_bytes` gives them;
    /// other names of the same lengths, `None` (they go to `from_bytes`).
    #[test]
    fn scanned_names_are_the_http_names() {
        let told = [
            "Host",
            "HOST",
            "hOsT",
            "content-length",
            "Content-Length",
            "TRANSFER-ENCODING",
            "Transfer-Encoding",
            "connection",
            "CONNECTION",
            "Expect",
            "expect",
        ];
        for name in told {
            let want = HeaderName::from_bytes(name.as_bytes()).unwrap();
            assert_eq!(scanned_name(name.as_bytes()), Some(want), "{name}");
        }
        let other = [
            "Hosu",
            "Ho_t",
            "H0st",
            "hos",
            "hosts",
            "content-lengtx",
            "content_length",
            "transfer-encodinh",
            "connectiom",
            "expec!",
            "accept",
            "x-host",
            "",
        ];
        for name in other {
            assert_eq!(scanned_name(name.as_bytes()), None, "{name}");
        }
        // In a request: the map holds the same names either way.
        let b = b"POST /p HTTP/1.1\r\nhost: h\r\nCONTENT-LENGTH: 0\r\nConnection: close\r\nAccept: */*\r\n\r\n";
        let Ok(Scanned::Complete(h)) = scan(b) else {
            panic!("scans")
        };
        let mut req = http::Request::new(());
        h.fill_http(b, &mut req).unwrap();
        let names: Vec<&str> = req.headers().keys().map(|n| n.as_str()).collect();
        assert_eq!(names, ["host", "content-length", "connection", "accept"]);
        assert_eq!(req.headers()[HOST], "h");
        assert_eq!(req.headers()[CONTENT_LENGTH], "0");
    }

    /// A field at the size limit passes and one a byte over it is refused (431),
    /// whatever the limit (heads shorter than it are not looked at field by field).
    #[test]
    fn field_sizes_hold_at_every_limit() {
        for limit in [8, 20, 45, 60, 200] {
            let cfg = Config {
                max_field_size: limit,
                ..Config::default()
            };
            for size in limit - 2..=limit + 1 {
                // `X-A` and its value: `size` bytes.
                let b = format!(
                    "GET / HTTP/1.1\r\nHost: h\r\nX-A: {}\r\n\r\n",
                    "v".repeat(size - 3)
                );
                let got = scan_head(b.as_bytes(), &cfg).map(|s| matches!(s, Scanned::Complete(_)));
                if size <= limit {
                    assert_eq!(got, Ok(true), "{limit} {size}");
                } else {
                    assert_eq!(
                        got.map_err(|e| e.class),
                        Err(ErrorClass::HeaderTooLarge),
                        "{limit} {size}"
                    );
                }
            }
        }
    }

    /// Every target form makes the `Uri` that `Uri::try_from` makes of it.
    #[test]
    fn http_targets_are_the_uris_of_their_bytes() {
        for t in [
            "/",
            "/a",
            "/a/b?c=d",
            "/?",
            "/a?",
            "*",
            "http://h:1/p?q",
            "http://h",
        ] {
            let b = format!("GET {t} HTTP/1.1\r\nHost: h\r\n\r\n");
            let b = if t == "*" {
                b.replacen("GET", "OPTIONS", 1)
            } else {
                b
            };
            let Ok(Scanned::Complete(h)) = scan(b.as_bytes()) else {
                panic!("{t} scans")
            };
            let mut req = http::Request::new(());
            h.fill_http(b.as_bytes(), &mut req).unwrap();
            let want = Uri::try_from(t).unwrap();
            assert_eq!(req.uri(), &want, "{t}");
            assert_eq!(req.uri().path(), want.path(), "{t}");
            assert_eq!(req.uri().query(), want.query(), "{t}");
            assert_eq!(req.uri().authority(), want.authority(), "{t}");
        }
    }

    /// The `http` request shares one copy of the head, whatever its size (inline in
    /// the shared allocation up to 1 KiB, a vector beyond).
    #[test]
    fn http_requests_of_every_head_size() {
        for pad in [0, 100, 900, 3000] {
            let filler = "v".repeat(pad);
            let b = format!("GET /p?q HTTP/1.1\r\nHost: h\r\nX-Pad:  {filler} \r\nX-B: 2\r\n\r\n");
            let Ok(Scanned::Complete(h)) = scan(b.as_bytes()) else {
                panic!("scans")
            };
            let mut req = http::Request::new(());
            h.fill_http(b.as_bytes(), &mut req).unwrap();
            assert_eq!(req.uri(), "/p?q");
            assert_eq!(req.headers()["host"], "h");
            assert_eq!(req.headers()["x-pad"].as_bytes(), filler.as_bytes());
            assert_eq!(req.headers()["x-b"], "2");
            assert_eq!(req.headers().len(), 3);
        }
    }

    /// The method of the `http` request is the one sent (GET is a fresh request's own).
    #[test]
    fn http_requests_get_their_method() {
        for m in ["GET", "POST", "HEAD", "DELETE", "PATCH", "BREW"] {
            let b = format!("{m} /p HTTP/1.1\r\nHost: h\r\n\r\n");
            let Ok(Scanned::Complete(h)) = scan(b.as_bytes()) else {
                panic!("scans")
            };
            let mut req = http::Request::new(());
            h.fill_http(b.as_bytes(), &mut req).unwrap();
            assert_eq!(req.method().as_str(), m);
            // A request that had another method gets GET back.
            let mut req = http::Request::new(());
            *req.method_mut() = Method::PUT;
            let get = b"GET /p HTTP/1.1\r\nHost: h\r\n\r\n";
            let Ok(Scanned::Complete(h)) = scan(get) else {
                panic!("scans")
            };
            h.fill_http(get, &mut req).unwrap();
            assert_eq!(req.method(), Method::GET);
        }
    }

    /// Every byte the scanner lets into an origin-form target, and only those, makes a
    /// `Uri`: building one from a scanned head cannot fail.
    #[test]
    fn target_bytes_agree_with_uri() {
        for b in 0u8..=255 {
            for t in [vec![b'/', b], vec![b'/', b'?', b]] {
                let req = [b"GET ", &t[..], b" HTTP/1.1\r\nHost: a\r\n\r\n"].concat();
                let ours = matches!(scan(&req), Ok(Scanned::Complete(_)));
                if ours {
                    assert!(
                        Uri::try_from(&t[..]).is_ok(),
                        "{t:?} passes the scan but is no Uri"
                    );
                }
                let on_wire = (0x21..=0x7e).contains(&b) && b != b'#';
                if on_wire && Uri::try_from(&t[..]).is_ok() {
                    assert!(ours, "{t:?} is a Uri but the scan refuses it");
                }
            }
        }
    }
}
