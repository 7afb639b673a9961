//! The request-head scanner the server serves with: the request line and the field
//! lines in one pass from the first byte to the empty line, every byte looked at once
//! (by its class in one table, or 16 at a time where a class runs long), nothing
//! allocated, nothing copied, no UTF-8 pass (what the grammar lets through is ASCII:
//! the method and field names are tokens, an accepted target is visible ASCII, field
//! values are handed on as bytes).
//!
//! On the way it notes what the server needs from the fields: how many are `Host`,
//! and, where one is named, what `Content-Length`, `Transfer-Encoding`, `Connection`
//! and `Expect` say. A fault that only a whole head can judge (a field over the size
//! limit, an unsupported expectation) is noted and answered once the head is whole,
//! after the checks that come first: a broken line or more bytes needed take
//! precedence, as they did when httparse parsed the syntax first.
//!
//! # The reference
//!
//! What this accepts and refuses is defined by the parser it replaced, httparse plus
//! our checks of its result, kept as [`super::reference`] (tests and the fuzz target
//! only). For every input the two give the same outcome: the same head to the byte
//! (method, target, version, fields, framing, the connection's fate), the same "more
//! bytes needed", or the same error (status and reason). `tests/differential.rs`
//! (generated and mutated heads, every prefix of each, under tight and default limits)
//! and the fuzz target check it. There is no deliberate difference: where httparse's
//! order of judgement is odd, it is kept (a target with bytes that are not UTF-8 is
//! refused at once, one with UTF-8 beyond ASCII only once the head is whole; an empty
//! `Transfer-Encoding` field before the first non-empty one adds no list element),
//! because every one of those inputs ends in an error either way and a second
//! behaviour would have to be argued for case by case.

use http::Version;

use crate::config::{Config, MAX_HEADERS_CAP};
use crate::error::{ErrorClass, HttpError};
use crate::framing::{parse_length, BodyKind};
use crate::origin_form::origin_path_len;
use crate::token::trim_ows;

use super::classes::{is, span, PATH, QUERY, TOKEN, URI, VALUE};
use super::rules::{
    check_hosts, check_other_target, is_host, no_nul_or_bare_cr, stopped, Syntax, MAX_NAME,
    MAX_TARGET,
};
use super::{RawHead, Scanned};

/// Why a scan stopped before a whole head: `None`, the bytes ran out; or the syntax it
/// found broken.
type Stop = Option<Syntax>;

/// The bytes ran out before the head did.
const MORE: Stop = None;

/// Scans and checks a request head at the start of `buf` (see the module doc).
#[inline]
pub(crate) fn scan_head(buf: &[u8], cfg: &Config) -> Result<Scanned, HttpError> {
    let mut head = RawHead::EMPTY;
    Ok(match scan_head_into(buf, cfg, &mut head)? {
        true => Scanned::Complete(head),
        false => Scanned::Partial,
    })
}

/// [`scan_head`] with a whole head written into `head` (where the caller keeps it):
/// `true` then, `false` if more bytes are needed. (The server's path: a head returned
/// through the nested results was copied field by field three times on its way out,
/// ~60 instructions per request.)
#[inline(always)]
pub(crate) fn scan_head_into(
    buf: &[u8],
    cfg: &Config,
    head: &mut RawHead,
) -> Result<bool, HttpError> {
    match scan(buf, cfg, head) {
        Ok(checked) => checked.map(|()| true),
        Err(stop) => stopped(buf, cfg, stop).map(|s| match s {
            Scanned::Complete(whole) => {
                *head = whole;
                true
            }
            Scanned::Partial => false,
        }),
    }
}

/// The whole scan: the syntax (`Err` where it stops short), then the checks of a whole
/// head (the inner `Err`); a whole head is written into `head`.
#[inline(always)]
fn scan(buf: &[u8], cfg: &Config, head: &mut RawHead) -> Result<Result<(), HttpError>, Stop> {
    let mut i = 0;
    if matches!(buf.first(), Some(b'\r' | b'\n')) {
        i = skip_empty_lines(buf)?;
    }
    let method_start = i;
    let method_end = if starts_with(buf, i, *b"GET ") {
        i + 3
    } else {
        method_end(buf, i)?
    };
    let target_start = method_end + 1;
    let (target_end, origin_path) = target(buf, target_start)?;
    let (version, line_len) = version(buf, target_end + 1)?;
    let mut fields = FieldFacts::new(cfg);
    let len = fields.scan(buf, line_len, version, cfg)?;
    let line = RequestLine {
        method_start,
        method_end,
        target_start,
        target_end,
        origin_path,
        version,
        line_len,
    };
    Ok(finish(buf, cfg, len, &line, &fields, head))
}

/// Whether the four bytes at `i` are `word`.
#[inline(always)]
fn starts_with(buf: &[u8], i: usize, word: [u8; 4]) -> bool {
    buf.len() >= i + 4 && buf[i..i + 4] == word
}

/// Empty lines before the request line (RFC 9112 §2.2 lets a server ignore them):
/// where the request line starts.
#[cold]
#[inline(never)]
fn skip_empty_lines(buf: &[u8]) -> Result<usize, Stop> {
    let mut i = 0;
    loop {
        match buf.get(i) {
            Some(b'\r') => match buf.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(_) => return Err(Some(Syntax::NewLine)),
                None => return Err(MORE),
            },
            Some(b'\n') => i += 1,
            Some(_) => return Ok(i),
            None => return Err(MORE),
        }
    }
}

/// The method (a token) from `i`: the index of the space after it.
#[inline(always)]
fn method_end(buf: &[u8], i: usize) -> Result<usize, Stop> {
    let end = span::<TOKEN>(buf, i);
    match buf.get(end) {
        None => Err(MORE),
        Some(b' ') if end > i => Ok(end),
        Some(_) => Err(Some(Syntax::Token)),
    }
}

/// The target from `s`: the index of the space after it, and the length of its path
/// if it was found to be an origin-form target within the origin-form classes (`None`:
/// judged once the head is whole, by [`other_target`]).
#[inline(always)]
fn target(buf: &[u8], s: usize) -> Result<(usize, Option<usize>), Stop> {
    if buf.get(s) == Some(&b'/') {
        let path = span::<PATH>(buf, s);
        match buf.get(path) {
            Some(b' ') => return Ok((path, Some(path - s))),
            Some(b'?') => {
                let end = span::<QUERY>(buf, path + 1);
                if buf.get(end) == Some(&b' ') {
                    return Ok((end, Some(path - s)));
                }
            }
            _ => {}
        }
    }
    Ok((any_target(buf, s)?, None))
}

/// A target of any form, or with bytes outside the origin-form classes, or not yet
/// whole: its end by httparse's rule (visible ASCII and 0x80 and up, then a space; the
/// bytes from 0x80 on must be UTF-8).
#[inline(never)]
fn any_target(buf: &[u8], s: usize) -> Result<usize, Stop> {
    let end = span::<URI>(buf, s);
    match buf.get(end) {
        None => return Err(MORE),
        Some(b' ') if end > s => {}
        Some(_) => return Err(Some(Syntax::Token)),
    }
    let target = &buf[s..end];
    if !target.is_ascii() && std::str::from_utf8(target).is_err() {
        return Err(Some(Syntax::Token));
    }
    Ok(end)
}

/// `HTTP/1.0` or `HTTP/1.1` from `v`, then the line's end: the version, and where the
/// field lines start.
#[inline(always)]
fn version(buf: &[u8], v: usize) -> Result<(Version, usize), Stop> {
    if let Some(&[a, b, c, d, e, f, g, h, cr, lf]) = buf.get(v..v + 10) {
        let word = u64::from_le_bytes([a, b, c, d, e, f, g, h]);
        let version = if word == u64::from_le_bytes(*b"HTTP/1.1") {
            Version::HTTP_11
        } else if word == u64::from_le_bytes(*b"HTTP/1.0") {
            Version::HTTP_10
        } else {
            return Err(Some(Syntax::Version));
        };
        return match (cr, lf) {
            (b'\r', b'\n') => Ok((version, v + 10)),
            (b'\n', _) => Ok((version, v + 9)),
            _ => Err(Some(Syntax::NewLine)),
        };
    }
    version_short(buf, v)
}

/// [`version`] with fewer than ten bytes left.
#[cold]
#[inline(never)]
fn version_short(buf: &[u8], v: usize) -> Result<(Version, usize), Stop> {
    let rest = &buf[v..];
    let version = match rest.get(..8) {
        Some(b"HTTP/1.1") => Version::HTTP_11,
        Some(b"HTTP/1.0") => Version::HTTP_10,
        Some(_) => return Err(Some(Syntax::Version)),
        None => {
            // While it may still become `HTTP/1.x`, wait.
            let prefix = b"HTTP/1.";
            return if rest.iter().zip(prefix).all(|(b, p)| b == p) {
                Err(MORE)
            } else {
                Err(Some(Syntax::Version))
            };
        }
    };
    match (rest.get(8), rest.get(9)) {
        (Some(b'\r'), Some(b'\n')) => Ok((version, v + 10)),
        (Some(b'\n'), _) => Ok((version, v + 9)),
        (None, _) | (Some(b'\r'), None) => Err(MORE),
        _ => Err(Some(Syntax::NewLine)),
    }
}

/// Where the request line's parts are.
struct RequestLine {
    method_start: usize,
    method_end: usize,
    target_start: usize,
    target_end: usize,
    /// The path's length, if the target was found to be origin form within its classes.
    origin_path: Option<usize>,
    version: Version,
    /// Where the field lines start.
    line_len: usize,
}

/// What the field lines say, gathered on the way through them.
struct FieldFacts {
    /// Field lines so far.
    count: usize,
    /// How many of them are `Host`.
    hosts: u32,
    /// Field lines longer than this are looked at for their size: a name and value
    /// over the limit (or a name longer than a `HeaderName` can be) make a longer line.
    long_line: usize,
    /// The first field over the size limit or with an unsupported expectation: answered
    /// once the head is whole (if nothing answered first).
    fault: Option<HttpError>,
    /// The other fields the server reads, if one is named.
    named: Named,
}

impl FieldFacts {
    fn new(cfg: &Config) -> FieldFacts {
        FieldFacts {
            count: 0,
            hosts: 0,
            long_line: cfg.max_field_size.min(MAX_NAME - 1),
            fault: None,
            named: Named::default(),
        }
    }

    /// The field lines from `i` to the empty line: the head's length.
    #[inline(always)]
    fn scan(
        &mut self,
        buf: &[u8],
        mut i: usize,
        version: Version,
        cfg: &Config,
    ) -> Result<usize, Stop> {
        let max = cfg.max_headers.min(MAX_HEADERS_CAP);
        loop {
            // The empty line ends the head.
            match buf.get(i) {
                Some(b'\r') => {
                    return match buf.get(i + 1) {
                        Some(b'\n') => Ok(i + 2),
                        Some(_) => Err(Some(Syntax::NewLine)),
                        None => Err(MORE),
                    }
                }
                Some(b'\n') => return Ok(i + 1),
                Some(_) => {}
                None => return Err(MORE),
            }
            // The name (`Host`, the field every HTTP/1.1 request has, told at once),
            // then `:`.
            let (name_end, host) = if host_colon(buf, i) {
                (i + 4, true)
            } else {
                let end = span::<TOKEN>(buf, i);
                (end, is_host(&buf[i..end]))
            };
            match buf.get(name_end) {
                Some(b':') if name_end > i => {}
                Some(_) => return Err(Some(Syntax::FieldName)),
                None => return Err(MORE),
            }
            // The value with the whitespace around it, then the line's end.
            let value_start = name_end + 1;
            let value_end = span::<VALUE>(buf, value_start);
            let next = match buf.get(value_end) {
                Some(b'\r') => match buf.get(value_end + 1) {
                    Some(b'\n') => value_end + 2,
                    Some(_) => return Err(Some(Syntax::FieldValue)),
                    None => return Err(MORE),
                },
                Some(b'\n') => value_end + 1,
                Some(_) => return Err(Some(Syntax::FieldValue)),
                None => return Err(MORE),
            };
            if self.count == max {
                return Err(Some(Syntax::TooManyFields));
            }
            self.count += 1;
            let name_len = name_end - i;
            if next - i > self.long_line {
                self.check_size(name_len, trim_ows(&buf[value_start..value_end]), cfg);
            }
            if host {
                self.hosts += 1;
            } else if matches!(name_len, 6 | 10 | 14 | 17) {
                let value = trim_ows(&buf[value_start..value_end]);
                let at = value.as_ptr() as usize - buf.as_ptr() as usize;
                self.note(&buf[i..name_end], value, at, version);
            }
            i = next;
        }
    }

    /// Notes a field over the size limit (or longer than a `HeaderName` can be).
    #[cold]
    fn check_size(&mut self, name_len: usize, value: &[u8], cfg: &Config) {
        if self.fault.is_none()
            && (name_len + value.len() > cfg.max_field_size || name_len >= MAX_NAME)
        {
            self.fault = Some(HttpError::new(
                ErrorClass::HeaderTooLarge,
                "field too large",
            ));
        }
    }

    /// A field whose name has the length of one the server reads besides `Host`.
    /// `value` is trimmed; `at` is where it starts in the buffer (`Content-Length` is
    /// read once the head is whole).
    #[inline(never)]
    fn note(&mut self, name: &[u8], value: &[u8], at: usize, version: Version) {
        let named = &mut self.named;
        match name.len() {
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                named.lengths += 1;
                named.length = (at, at + value.len());
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                named
                    .codings
                    .get_or_insert_with(Codings::default)
                    .add(value);
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in value.split(|&b| b == b',') {
                    let t = trim_ows(token);
                    if t.eq_ignore_ascii_case(b"close") {
                        named.close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        named.keep_alive = true;
                    }
                }
            }
            6 if name.eq_ignore_ascii_case(b"expect") => {
                if value.eq_ignore_ascii_case(b"100-continue") {
                    named.expect_continue = version == Version::HTTP_11;
                } else if self.fault.is_none() {
                    self.fault = Some(HttpError::new(
                        ErrorClass::ExpectationFailed,
                        "unsupported expectation",
                    ));
                }
            }
            _ => {}
        }
    }
}

/// Whether the bytes at `i` are `Host:`, in any case (see [`is_host`]).
#[inline(always)]
fn host_colon(buf: &[u8], i: usize) -> bool {
    match buf.get(i..i + 5) {
        Some(&[a, b, c, d, b':']) => is_host(&[a, b, c, d]),
        _ => false,
    }
}

/// `Content-Length`, `Transfer-Encoding`, `Connection` and `Expect`, as far as named.
#[derive(Default)]
struct Named {
    /// How many `Content-Length` fields.
    lengths: u32,
    /// Where the last one's (trimmed) value is in the buffer.
    length: (usize, usize),
    /// The `Transfer-Encoding` list, if one is named.
    codings: Option<Codings>,
    /// `close` among the `Connection` options.
    close: bool,
    /// `keep-alive` among them.
    keep_alive: bool,
    /// `Expect: 100-continue` on HTTP/1.1.
    expect_continue: bool,
}

impl Named {
    /// How the body is framed (RFC 9112 §6), by [`crate::body_kind`]'s rules.
    fn body(&self, buf: &[u8], version: Version) -> Result<BodyKind, HttpError> {
        if let Some(codings) = &self.codings {
            if version != Version::HTTP_11 {
                return Err(HttpError::bad("Transfer-Encoding on HTTP/1.0"));
            }
            if self.lengths > 0 {
                return Err(HttpError::bad("Content-Length with Transfer-Encoding"));
            }
            return codings.kind();
        }
        match self.lengths {
            0 => Ok(BodyKind::None),
            1 => match parse_length(&buf[self.length.0..self.length.1])? {
                0 => Ok(BodyKind::None),
                n => Ok(BodyKind::Length(n)),
            },
            _ => Err(HttpError::bad("several Content-Length fields")),
        }
    }
}

/// The `Transfer-Encoding` fields' values as one list (RFC 9110 §5.3: the values of
/// repeated fields joined by commas), element by element as they come, without
/// joining them anywhere.
#[derive(Default)]
struct Codings {
    /// Whether any element was taken yet (a list of empty values so far joins to
    /// nothing, and an empty value adds no element to it).
    started: bool,
    /// Elements so far.
    items: u32,
    /// How many are `chunked`.
    chunked: u32,
    /// Whether the last is.
    last_chunked: bool,
    /// An element empty or not a token.
    malformed: bool,
}

impl Codings {
    /// The elements of one field value (trimmed).
    fn add(&mut self, value: &[u8]) {
        if value.is_empty() && !self.started {
            return;
        }
        self.started = true;
        for item in value.split(|&b| b == b',') {
            let item = trim_ows(item);
            self.items += 1;
            if item.is_empty() || !item.iter().all(|&b| is::<TOKEN>(b)) {
                self.malformed = true;
            }
            self.last_chunked = item.eq_ignore_ascii_case(b"chunked");
            self.chunked += u32::from(self.last_chunked);
        }
    }

    /// Chunked, or why not: only `chunked` alone is implemented (501 for any other
    /// coding), and `chunked` must be the last coding, once (400).
    fn kind(&self) -> Result<BodyKind, HttpError> {
        // All empty: the joined list is one empty element.
        if self.malformed || !self.started {
            return Err(HttpError::bad("malformed Transfer-Encoding"));
        }
        match (self.chunked, self.last_chunked, self.items) {
            (1, true, 1) => Ok(BodyKind::Chunked),
            (0, _, _) | (1, true, _) => Err(HttpError::new(
                ErrorClass::NotImplemented,
                "unsupported transfer coding",
            )),
            _ => Err(HttpError::bad("chunked not last or repeated")),
        }
    }
}

/// The checks of a whole head, in the order the reference makes them: the request
/// line's and the head's size, the target, the first faulty field, `Host`, framing;
/// the head is written into `head` once it passed them all.
#[inline(always)]
fn finish(
    buf: &[u8],
    cfg: &Config,
    len: usize,
    line: &RequestLine,
    fields: &FieldFacts,
    head: &mut RawHead,
) -> Result<(), HttpError> {
    if line.line_len - 1 > cfg.max_request_line {
        return Err(HttpError::new(
            ErrorClass::UriTooLong,
            "request line too long",
        ));
    }
    if len > cfg.max_head_size {
        return Err(HttpError::new(ErrorClass::HeaderTooLarge, "head too large"));
    }
    // The syntax admits no NUL and no CR without LF anywhere in the head (the method
    // and field names are tokens, the target and values exclude controls, line ends
    // are CR LF or LF): checked again only in debug builds, and by the fuzz target.
    debug_assert!(no_nul_or_bare_cr(&buf[..len]), "a control got through");
    let method = &buf[line.method_start..line.method_end];
    let target_len = line.target_end - line.target_start;
    if target_len > MAX_TARGET {
        return Err(HttpError::new(ErrorClass::UriTooLong, "target too long"));
    }
    let path_len = match line.origin_path {
        Some(n) => n as u32,
        None => other_target(buf, len, line, method)?,
    };
    if let Some(fault) = &fields.fault {
        return Err(fault.clone());
    }
    check_hosts(line.version, fields.hosts)?;
    let named = &fields.named;
    // The common head names neither framing field: no body, and no call to read them.
    let body = if named.lengths == 0 && named.codings.is_none() {
        BodyKind::None
    } else {
        named.body(buf, line.version)?
    };
    let keep_alive = match line.version {
        Version::HTTP_11 => !named.close,
        _ => named.keep_alive && !named.close,
    };
    *head = RawHead {
        len,
        method_start: line.method_start as u32,
        method_len: method.len() as u16,
        target_start: line.target_start as u32,
        target_len: target_len as u32,
        path_len,
        fields_start: line.line_len as u32,
        fields: fields.count as u16,
        version: line.version,
        body,
        keep_alive,
        expect_continue: named.expect_continue,
        is_head: method == b"HEAD",
    };
    Ok(())
}

/// A target the request line left for the whole head to judge: origin form with a
/// byte outside its classes (refused), or another form (each only where it belongs).
/// The path length, `u32::MAX` for the forms other than origin.
#[cold]
#[inline(never)]
fn other_target(
    buf: &[u8],
    len: usize,
    line: &RequestLine,
    method: &[u8],
) -> Result<u32, HttpError> {
    let target = &buf[line.target_start..line.target_end];
    if target[0] == b'/' {
        match origin_path_len(&buf[line.target_start..len], target.len()) {
            Some(n) => Ok(n as u32),
            None => Err(HttpError::bad("invalid target")),
        }
    } else {
        Ok(check_other_target(method, target)?.map_or(u32::MAX, |n| n as u32))
    }
}
