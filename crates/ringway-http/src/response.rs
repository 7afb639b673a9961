//! Writing responses into the connection's output buffer: [`Responder`] (status line,
//! `Server`, `Date`, the handler's fields, then framing fields decided here, never
//! trusted from the handler, then the body). Several responses are appended to one
//! buffer and leave in one send.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::pin::Pin;

use http::header::{HeaderName, HeaderValue};
use http::{Response, StatusCode, Version};

use crate::body::{Body, BodyStream, Contents};
use crate::date::{generation, with_date};
use crate::prepared::PreparedResponse;
use crate::wire::{has_no_body, is_servers_field, push_u64, put_dec};

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
    /// More of the client's input follows this request (the next request, or its
    /// start): if the server is stopping, this response still keeps the connection
    /// open, so that the requests it has read are all answered.
    pub more: bool,
}

impl ReqInfo {
    /// Whether the connection closes after this response: asked for, or the server is
    /// stopping and no request follows this one.
    #[inline]
    pub(crate) fn closes(&self, context: &ResponseContext) -> bool {
        self.close || (context.down.get() && !self.more)
    }
}

/// What every response of one server on one core shares.
#[derive(Debug)]
pub(crate) struct ResponseContext {
    /// What goes between the status line and the date value: `server: NAME\r\ndate: `,
    /// or `date: `.
    pub prefix: Box<[u8]>,
    /// Set when the server began shutting down: responses then close their connection.
    pub down: Cell<bool>,
    /// `HTTP/1.1 200 OK`, the prefix and the date, formatted once per second.
    ok_head: RefCell<(u64, Vec<u8>)>,
    /// The last two prepared responses written, formatted once per second each.
    prepared: RefCell<[PreparedEntry; 2]>,
}

impl ResponseContext {
    /// The context of a server that names itself `server` (or not at all).
    pub(crate) fn new(server: Option<&str>) -> ResponseContext {
        let prefix = match server {
            Some(name) => format!("server: {name}\r\ndate: ").into_bytes(),
            None => b"date: ".to_vec(),
        };
        ResponseContext {
            prefix: prefix.into_boxed_slice(),
            down: Cell::new(false),
            ok_head: RefCell::new((u64::MAX, Vec::new())),
            prepared: RefCell::new([PreparedEntry::EMPTY, PreparedEntry::EMPTY]),
        }
    }

    /// Appends the status line and the fields every response has (`Server`, `Date`).
    #[inline]
    fn put_head(&self, out: &mut Vec<u8>, status: StatusCode) {
        if status == StatusCode::OK {
            let ok = self.ok_head.borrow();
            if ok.0 == generation() {
                out.extend_from_slice(&ok.1);
                return;
            }
        }
        self.put_head_slow(out, status);
    }

    /// Appends the head of `p` but its framing (status line, `Server`, `Date`, the
    /// rendered fields) in one copy from a per-core cache of the last two; if `whole`,
    /// the empty line and the body too (the common answer: kept alive on HTTP/1.1, not
    /// to `HEAD`), so that the whole response is one copy.
    #[inline]
    fn put_prepared(&self, out: &mut Vec<u8>, p: &PreparedResponse, whole: bool) {
        let now = generation();
        let cache = self.prepared.borrow();
        let Some(hit) = cache.iter().find(|c| c.generation == now && c.id == p.id) else {
            drop(cache);
            return self.put_prepared_slow(out, p, whole, now);
        };
        let end = if whole { hit.bytes.len() } else { hit.head };
        out.extend_from_slice(&hit.bytes[..end]);
    }

    /// [`put_prepared`](Self::put_prepared) for a response not in the cache (at most
    /// once per second each): formats it into the older entry. Out of line, so that
    /// the common path is small enough to be inlined where a handler answers.
    #[cold]
    #[inline(never)]
    fn put_prepared_slow(&self, out: &mut Vec<u8>, p: &PreparedResponse, whole: bool, now: u64) {
        let mut cache = self.prepared.borrow_mut();
        // The older entry (or a stale one) makes room: keep the other one first.
        if cache[0].generation == now {
            cache.swap(0, 1);
        }
        let entry = &mut cache[0];
        let bytes = &mut entry.bytes;
        bytes.clear();
        self.put_head(bytes, p.status);
        let fields = match &p.fields_unnamed {
            Some(unnamed) if self.prefix.starts_with(b"server") => unnamed,
            _ => &p.fields,
        };
        bytes.extend_from_slice(fields);
        entry.head = bytes.len();
        bytes.extend_from_slice(b"\r\n");
        bytes.extend_from_slice(&p.body);
        entry.generation = now;
        entry.id = p.id;
        let end = if whole { bytes.len() } else { entry.head };
        out.extend_from_slice(&bytes[..end]);
    }

    /// [`put_head`](Self::put_head) for other statuses, and for `200` when the date
    /// changed.
    #[cold]
    fn put_head_slow(&self, out: &mut Vec<u8>, status: StatusCode) {
        if status != StatusCode::OK {
            status_line(out, status);
            out.extend_from_slice(&self.prefix);
            with_date(|d| out.extend_from_slice(d));
            out.extend_from_slice(b"\r\n");
            return;
        }
        let now = generation();
        let mut ok = self.ok_head.borrow_mut();
        if ok.0 != now {
            ok.1.clear();
            status_line(&mut ok.1, status);
            ok.1.extend_from_slice(&self.prefix);
            with_date(|d| ok.1.extend_from_slice(d));
            ok.1.extend_from_slice(b"\r\n");
            ok.0 = now;
        }
        out.extend_from_slice(&ok.1);
    }
}

/// A prepared response as the core last formatted it (see
/// [`ResponseContext::put_prepared`]).
#[derive(Debug)]
struct PreparedEntry {
    /// The date generation it was formatted in (`u64::MAX`: none).
    generation: u64,
    /// The [`PreparedResponse::id`] it is of.
    id: u64,
    /// Its head but the connection's framing, then CR LF and its body.
    bytes: Vec<u8>,
    /// Where the head ends in `bytes`.
    head: usize,
}

impl PreparedEntry {
    const EMPTY: PreparedEntry = PreparedEntry {
        generation: u64::MAX,
        id: 0,
        bytes: Vec::new(),
        head: 0,
    };
}

/// Writes the response to one request (given to a [`ViewHandler`](crate::ViewHandler)
/// with the request). Pick a status ([`ok`](Self::ok), [`status`](Self::status)), add
/// fields, end with a body; or hand over a whole `http::Response` ([`send`](Self::send)).
///
/// The response is written straight into the connection's output buffer: no field map,
/// no allocation. `Content-Length`, `Transfer-Encoding`, `Connection`, `Date` (and
/// `Server`, when the server names itself) are the server's to write: fields of those
/// names given by the handler are dropped. A response dropped before its body is
/// written leaves nothing behind.
pub struct Responder<'a> {
    slot: Slot<'a>,
}

/// A response whose status line is written: add fields, then end with a body.
pub struct ResponseHead<'a> {
    slot: Slot<'a>,
}

/// Proof that a response was written completely (only [`ResponseHead`] and
/// [`Responder::send`] make one).
pub struct Written {
    pub(crate) status: u16,
    /// Body bytes written (for streamed bodies: announced, if known).
    pub(crate) body_len: u64,
    pub(crate) close: bool,
    /// Boxed: a streamed body is the rare case, and a `Written` is moved from the
    /// handler to the connection at every request (24 bytes instead of 48).
    pub(crate) pending: Option<Box<PendingBody>>,
}

/// The part of the output buffer one response owns (small: it moves with every
/// builder call).
struct Slot<'a> {
    out: &'a mut Vec<u8>,
    context: &'a ResponseContext,
    start: u32,
    status: u16,
    info: ReqInfo,
    done: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.out.truncate(self.start as usize);
        }
    }
}

impl<'a> Responder<'a> {
    /// A response appended to `out` (which must hold less than 4 GiB).
    pub(crate) fn new(out: &'a mut Vec<u8>, info: ReqInfo, context: &'a ResponseContext) -> Self {
        let start = out.len() as u32;
        Responder {
            slot: Slot {
                out,
                context,
                start,
                status: 200,
                info,
                done: false,
            },
        }
    }

    /// `200 OK`.
    #[inline]
    pub fn ok(self) -> ResponseHead<'a> {
        self.status(StatusCode::OK)
    }

    /// The status line for `status`.
    #[inline]
    pub fn status(mut self, status: StatusCode) -> ResponseHead<'a> {
        let s = &mut self.slot;
        s.status = status.as_u16();
        s.context.put_head(s.out, status);
        ResponseHead { slot: self.slot }
    }

    /// Writes a response rendered ahead of time (see [`PreparedResponse`]): its head
    /// (status line, `Server`, `Date`, the rendered fields) in one copy from the core's
    /// cache, the connection's framing, the body.
    #[inline]
    pub fn prepared(mut self, p: &PreparedResponse) -> Written {
        let s = &mut self.slot;
        s.status = p.status.as_u16();
        let close = s.info.closes(s.context);
        // The common answer (kept alive, HTTP/1.1, a body sent): its end is CR LF, so
        // the cache holds all of it.
        let whole = !close && s.info.version == Version::HTTP_11 && !s.info.head;
        s.context.put_prepared(s.out, p, whole);
        if whole {
            return s.finish(false, p.body.len() as u64, None);
        }
        end_bare(s, close);
        let mut sent = 0;
        if !s.info.head && !p.body.is_empty() {
            put_small(s.out, &p.body);
            sent = p.body.len() as u64;
        }
        s.finish(close, sent, None)
    }

    /// Whether the connection closes after this response (the client asked for it,
    /// the server is shutting down, or the connection served its limit of requests).
    pub fn closes(&self) -> bool {
        self.slot.info.closes(self.slot.context)
    }

    /// Writes a whole `http` response. Its field map is kept by the core for the next
    /// request's.
    #[inline]
    pub fn send(self, resp: Response<Body>) -> Written {
        let (parts, body) = resp.into_parts();
        let mut head = self.status(parts.status);
        for (name, value) in parts.headers.iter() {
            head.put_header(name, value);
        }
        crate::header_maps::give(parts.headers);
        head.body(body)
    }
}

impl<'a> ResponseHead<'a> {
    /// Adds a field (dropped if it is one the server writes itself).
    #[inline]
    pub fn header(mut self, name: &HeaderName, value: &HeaderValue) -> Self {
        self.put_header(name, value);
        self
    }

    /// [`header`](Self::header) in place (a loop over a map's fields does not move the
    /// head at every one).
    #[inline]
    fn put_header(&mut self, name: &HeaderName, value: &HeaderValue) {
        let name = name.as_str().as_bytes();
        if !is_servers_field(name, &self.slot.context.prefix) {
            put_field(self.slot.out, name, value.as_bytes());
        }
    }

    /// Ends with `body` as the whole body (`Content-Length`).
    #[inline]
    pub fn bytes(mut self, body: &[u8]) -> Written {
        let s = &mut self.slot;
        let framing = if has_no_body(s.status) {
            None
        } else {
            Some(StreamFraming::Length(body.len() as u64))
        };
        let close = end_head(s, framing);
        let mut sent = 0;
        if framing.is_some() && !s.info.head {
            put_small(s.out, body);
            sent = body.len() as u64;
        }
        s.finish(close, sent, None)
    }

    /// Ends without a body (`Content-Length: 0`, or nothing for 204 and 304).
    pub fn empty(self) -> Written {
        self.bytes(&[])
    }

    /// Ends with `body`: whole bodies as [`bytes`](Self::bytes); a stream with a known
    /// length with `Content-Length`, one without chunked (to an HTTP/1.0 client:
    /// delimited by closing the connection).
    pub fn body(mut self, body: impl Into<Body>) -> Written {
        let body: Body = body.into();
        let (len, stream) = match body.contents {
            Contents::Empty => return self.bytes(&[]),
            Contents::Full(b) => return self.bytes(&b),
            Contents::Stream { len, stream } => (len, stream),
        };
        let s = &mut self.slot;
        let framing = match len {
            _ if has_no_body(s.status) => None,
            Some(n) => Some(StreamFraming::Length(n)),
            None if s.info.head => None,
            None if s.info.version == Version::HTTP_11 => Some(StreamFraming::Chunked),
            None => Some(StreamFraming::Close),
        };
        let close = end_head(s, framing);
        let pending = match framing {
            Some(framing) if !s.info.head => Some(Box::new(PendingBody { stream, framing })),
            _ => None,
        };
        s.finish(close, len.unwrap_or(0), pending)
    }
}

impl Slot<'_> {
    #[inline]
    fn finish(&mut self, close: bool, body_len: u64, pending: Option<Box<PendingBody>>) -> Written {
        self.done = true;
        Written {
            status: self.status,
            body_len,
            close,
            pending,
        }
    }
}

/// Writes the framing fields and the blank line; returns whether the connection closes
/// after this response.
#[inline]
fn end_head(s: &mut Slot<'_>, framing: Option<StreamFraming>) -> bool {
    /// The most this writes: `content-length: ` and 20 digits, CR LF, then
    /// `connection: keep-alive` CR LF CR LF.
    const MOST: usize = 16 + 20 + 2 + 26;
    let out = &mut *s.out;
    let mut close = s.info.closes(s.context);
    if framing == Some(StreamFraming::Close) {
        close = true;
    }
    // One reservation, then stores: appending each piece would check the capacity
    // (and call `memcpy`) for each.
    out.reserve(MOST);
    let len = out.len();
    // SAFETY: `reserve` made room for `MOST` bytes after `len`; what is written below
    // is fewer (counted in the comments), all of it before `set_len` covers it.
    unsafe {
        let start = out.as_mut_ptr().add(len);
        let mut p = start;
        match framing {
            // 16 + at most 20 + 2.
            Some(StreamFraming::Length(n)) => {
                p = put_bytes(p, b"content-length: ");
                p = p.add(write_dec(p, n));
                p = put_bytes(p, b"\r\n");
            }
            // 28.
            Some(StreamFraming::Chunked) => p = put_bytes(p, b"transfer-encoding: chunked\r\n"),
            Some(StreamFraming::Close) | None => {}
        }
        p = end_line(p, close, s.info.version);
        out.set_len(len + p.offset_from(start) as usize);
    }
    close
}

/// [`end_head`] without framing fields (a prepared response has its own): the end of
/// the head only. Appended, not written through [`end_line`]: the common end is two
/// bytes, and reserving `end_line`'s 26 costs the hello path ~5 instructions per
/// request (callgrind, hello-c50).
#[inline]
fn end_bare(s: &mut Slot<'_>, close: bool) {
    let out = &mut *s.out;
    if close {
        out.extend_from_slice(b"connection: close\r\n\r\n");
    } else if s.info.version == Version::HTTP_10 {
        out.extend_from_slice(b"connection: keep-alive\r\n\r\n");
    } else {
        out.extend_from_slice(b"\r\n");
    }
}

/// Writes the end of a head at `p` (`Connection` where needed, then the empty line);
/// returns the end of what it wrote.
///
/// # Safety
///
/// `p` must be valid for writes of 26 bytes.
#[inline(always)]
unsafe fn end_line(p: *mut u8, close: bool, version: Version) -> *mut u8 {
    // SAFETY: at most 26 bytes written at `p` (the caller's promise).
    unsafe {
        if close {
            put_bytes(p, b"connection: close\r\n\r\n")
        } else if version == Version::HTTP_10 {
            put_bytes(p, b"connection: keep-alive\r\n\r\n")
        } else {
            put_bytes(p, b"\r\n")
        }
    }
}

/// Writes the constant `b` at `p`; returns the end of what it wrote.
///
/// # Safety
///
/// `p` must be valid for writes of `N` bytes.
#[inline(always)]
unsafe fn put_bytes<const N: usize>(p: *mut u8, b: &[u8; N]) -> *mut u8 {
    // SAFETY: the caller's promise.
    unsafe {
        p.cast::<[u8; N]>().write_unaligned(*b);
        p.add(N)
    }
}

/// Writes `n` in decimal at `p`; returns how many bytes it took.
///
/// # Safety
///
/// `p` must be valid for writes of 20 bytes.
#[inline(always)]
unsafe fn write_dec(p: *mut u8, n: u64) -> usize {
    // SAFETY: at most 20 bytes written at `p` (the caller's promise).
    unsafe {
        // The common case, a small body: without the general loop.
        if n < 10 {
            *p = b'0' + n as u8;
            return 1;
        }
        if n < 100 {
            p.cast::<[u8; 2]>()
                .write_unaligned([b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
            return 2;
        }
        let mut buf = [0u8; 20];
        let k = put_dec(&mut buf, n);
        std::ptr::copy_nonoverlapping(buf.as_ptr(), p, k);
        k
    }
}

/// Appends a minimal error response (which always closes the connection).
pub(crate) fn encode_error(out: &mut Vec<u8>, status: u16, prefix: &[u8]) {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let reason = status.canonical_reason().unwrap_or("Error");
    status_line(out, status);
    out.extend_from_slice(prefix);
    with_date(|d| out.extend_from_slice(d));
    out.extend_from_slice(b"\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ");
    push_u64(out, reason.len() as u64 + 1);
    out.extend_from_slice(b"\r\nconnection: close\r\n\r\n");
    out.extend_from_slice(reason.as_bytes());
    out.push(b'\n');
}

/// The interim `100 Continue`.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

fn status_line(out: &mut Vec<u8>, status: StatusCode) {
    if status == StatusCode::OK {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        return;
    }
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends the field line `name: value` CR LF.
#[inline]
fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let (n, v) = (name.len(), value.len());
    out.reserve(n + v + 4);
    let len = out.len();
    // SAFETY: `reserve` made room for the `n + v + 4` bytes written after `len`, all
    // of them initialised before `set_len` covers them.
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        copy_small(dst, name);
        dst.add(n).cast::<[u8; 2]>().write_unaligned(*b": ");
        copy_small(dst.add(n + 2), value);
        dst.add(n + 2 + v)
            .cast::<[u8; 2]>()
            .write_unaligned(*b"\r\n");
        out.set_len(len + n + v + 4);
    }
}

/// Appends `b`. Field names and values are mostly a few bytes long, and a call to
/// `memcpy` (what `extend_from_slice` of a slice of unknown length becomes) costs more
/// than copying them: up to 16 bytes are copied with two overlapping loads and stores.
#[inline]
fn put_small(out: &mut Vec<u8>, b: &[u8]) {
    let n = b.len();
    if n > 16 {
        out.extend_from_slice(b);
        return;
    }
    out.reserve(n);
    let len = out.len();
    // SAFETY: `reserve` made room for `n` more bytes after `len`, initialised before
    // `set_len` covers them.
    unsafe {
        copy_small(out.as_mut_ptr().add(len), b);
        out.set_len(len + n);
    }
}

/// Copies `b` to `dst`: up to 16 bytes with two overlapping loads and stores, more
/// with `memcpy`.
///
/// # Safety
///
/// `dst` must be valid for writes of `b.len()` bytes, and not overlap `b`.
#[inline(always)]
unsafe fn copy_small(dst: *mut u8, b: &[u8]) {
    let n = b.len();
    let src = b.as_ptr();
    // SAFETY: every read is within `b` (the two 8- or 4-byte halves overlap when `n`
    // is not twice their size), every write within the `n` bytes at `dst` (the
    // caller's promise).
    unsafe {
        if n > 16 {
            std::ptr::copy_nonoverlapping(src, dst, n);
        } else if n >= 8 {
            let head = src.cast::<u64>().read_unaligned();
            let tail = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(head);
            dst.add(n - 8).cast::<u64>().write_unaligned(tail);
        } else if n >= 4 {
            let head = src.cast::<u32>().read_unaligned();
            let tail = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(head);
            dst.add(n - 4).cast::<u32>().write_unaligned(tail);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
    }
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

impl fmt::Debug for Responder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responder")
            .field("closes", &self.closes())
            .finish()
    }
}

impl fmt::Debug for ResponseHead<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseHead")
            .field("status", &self.slot.status)
            .finish()
    }
}

impl fmt::Debug for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Written")
            .field("status", &self.status)
            .field("body_len", &self.body_len)
            .field("close", &self.close)
            .field("streamed", &self.pending.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(head: bool, version: Version, close: bool) -> ReqInfo {
        ReqInfo {
            head,
            version,
            close,
            more: false,
        }
    }

    fn text(out: &[u8]) -> String {
        let s = String::from_utf8_lossy(out).into_owned();
        // The date changes: replace its value.
        let i = s.find("date: ").expect("a date");
        format!("{}date: D{}", &s[..i], &s[i + 6 + 29..])
    }

    #[test]
    fn framing_is_the_servers() {
        let context = ResponseContext::new(None);
        let mut out = Vec::new();
        let ct = HeaderValue::from_static("text/plain");
        let w = Responder::new(&mut out, info(false, Version::HTTP_11, false), &context)
            .ok()
            .header(&http::header::CONTENT_TYPE, &ct)
            .header(
                &http::header::CONTENT_LENGTH,
                &HeaderValue::from_static("99"),
            )
            .bytes(b"hi");
        assert_eq!((w.status, w.body_len, w.close), (200, 2, false));
        assert_eq!(
            text(&out),
            "HTTP/1.1 200 OK\r\ndate: D\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nhi"
        );
        // HEAD: the length, no body; HTTP/1.0 keep-alive said so.
        let mut out = Vec::new();
        Responder::new(&mut out, info(true, Version::HTTP_10, false), &context)
            .ok()
            .bytes(b"hi");
        assert_eq!(
            text(&out),
            "HTTP/1.1 200 OK\r\ndate: D\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n"
        );
        // 304: neither; closing.
        let mut out = Vec::new();
        Responder::new(&mut out, info(false, Version::HTTP_11, true), &context)
            .status(StatusCode::NOT_MODIFIED)
            .bytes(b"ignored");
        assert_eq!(
            text(&out),
            "HTTP/1.1 304 Not Modified\r\ndate: D\r\nconnection: close\r\n\r\n"
        );
    }

    #[test]
    fn decimals() {
        for n in [
            0,
            7,
            10,
            13,
            99,
            100,
            101,
            4096,
            99_999,
            1_000_000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }

    #[test]
    fn small_copies() {
        let src: Vec<u8> = (0..40u8).collect();
        for n in 0..=src.len() {
            let mut out = b"x".to_vec();
            put_small(&mut out, &src[..n]);
            assert_eq!(&out[1..], &src[..n], "{n} bytes");
            assert_eq!(out.len(), n + 1);
        }
    }

    #[test]
    fn the_servers_fields_are_dropped() {
        for server in [None, Some("ringway")] {
            let context = ResponseContext::new(server);
            let mut out = Vec::new();
            let v = HeaderValue::from_static("v");
            let mut head =
                Responder::new(&mut out, info(false, Version::HTTP_11, false), &context).ok();
            for name in [
                "date",
                "server",
                "connection",
                "content-length",
                "transfer-encoding",
                "x-kept",
                "etag",
            ] {
                head = head.header(&HeaderName::from_static(name), &v);
            }
            head.empty();
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text.matches("date: ").count(), 1, "{text}");
            // The handler's `Server` only when the server does not name itself.
            assert_eq!(text.matches("server: ").count(), 1, "{text}");
            assert_eq!(text.contains("server: v"), server.is_none(), "{text}");
            assert!(
                text.contains("x-kept: v\r\netag: v\r\ncontent-length: 0\r\n\r\n"),
                "{text}"
            );
            assert!(
                !text.contains("connection") && !text.contains("transfer-encoding"),
                "{text}"
            );
        }
    }

    /// A prepared response writes the very bytes the field-by-field builder writes,
    /// for every kind of request, status and server name.
    #[test]
    fn prepared_responses_match_the_builder() {
        let fields = [
            (
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain"),
            ),
            (http::header::SERVER, HeaderValue::from_static("mine")),
            (http::header::CONTENT_LENGTH, HeaderValue::from_static("99")),
            (
                HeaderName::from_static("x-long-field-name"),
                HeaderValue::from_static("a value longer than sixteen bytes"),
            ),
        ];
        let bodies: [&[u8]; 3] = [b"", b"Hello, World!", &[b'x'; 100]];
        for server in [None, Some("ringway")] {
            let context = ResponseContext::new(server);
            for status in [
                StatusCode::OK,
                StatusCode::NOT_FOUND,
                StatusCode::NO_CONTENT,
            ] {
                for body in bodies {
                    let prepared = PreparedResponse::new(status, &fields, body);
                    for (head, version, close) in [
                        (false, Version::HTTP_11, false),
                        (true, Version::HTTP_11, false),
                        (false, Version::HTTP_10, false),
                        (false, Version::HTTP_11, true),
                    ] {
                        let i = info(head, version, close);
                        let mut built = Vec::new();
                        let mut h = Responder::new(&mut built, i, &context).status(status);
                        for (n, v) in &fields {
                            h = h.header(n, v);
                        }
                        let w1 = h.bytes(body);
                        let mut fast = Vec::new();
                        let w2 = Responder::new(&mut fast, i, &context).prepared(&prepared);
                        // (`text` masks the date, which may tick in between.)
                        assert_eq!(
                            text(&fast),
                            text(&built),
                            "{server:?} {status} {} bytes {head} {version:?} {close}",
                            body.len()
                        );
                        assert_eq!(
                            (w1.status, w1.body_len, w1.close),
                            (w2.status, w2.body_len, w2.close)
                        );
                    }
                }
            }
        }
    }

    /// The per-core cache of prepared heads (two entries) gives each response its own
    /// head, however they alternate.
    #[test]
    fn prepared_heads_are_cached_per_response() {
        let context = ResponseContext::new(Some("ringway"));
        let i = info(false, Version::HTTP_11, false);
        let answers = [
            (StatusCode::OK, &b"one"[..]),
            (StatusCode::NOT_FOUND, &b"two!"[..]),
            (StatusCode::OK, &b"three"[..]),
        ];
        let prepared: Vec<_> = answers
            .iter()
            .map(|(status, body)| PreparedResponse::new(*status, &[], body))
            .collect();
        for k in [0, 1, 0, 1, 2, 0, 2, 2, 1, 0] {
            let (status, body) = answers[k];
            let mut built = Vec::new();
            Responder::new(&mut built, i, &context)
                .status(status)
                .bytes(body);
            let mut fast = Vec::new();
            Responder::new(&mut fast, i, &context).prepared(&prepared[k]);
            assert_eq!(text(&fast), text(&built), "answer {k}");
        }
    }

    #[test]
    fn an_unfinished_response_leaves_nothing() {
        let context = ResponseContext::new(None);
        let mut out = b"earlier".to_vec();
        {
            let head = Responder::new(&mut out, info(false, Version::HTTP_11, false), &context)
                .ok()
                .header(&http::header::CONTENT_TYPE, &HeaderValue::from_static("x"));
            drop(head);
        }
        assert_eq!(out, b"earlier");
    }
}
