//! What a request for a kept file gets (200, 206, 304 or 416, per its conditional and
//! `Range` fields), decided once and written through either handler API: as an
//! `http::Response` for [`StaticFiles::serve`](super::StaticFiles::serve), or straight
//! into the connection's output by the [`ViewHandler`](crate::ViewHandler) face.

use std::io;
use std::rc::Rc;

use http::{header, HeaderName, HeaderValue, Response, StatusCode};

use super::cache::OpenFile;
use super::stream::FileStream;
use crate::body::Body;
use crate::response::{Responder, Written};
use crate::view::RequestView;

/// The request fields that decide the answer, from either API.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Conditions<'a> {
    pub(super) if_none_match: Option<&'a [u8]>,
    pub(super) if_modified_since: Option<&'a [u8]>,
    pub(super) if_range: Option<&'a [u8]>,
    pub(super) range: Option<&'a [u8]>,
}

/// The answer for one file.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Plan {
    NotModified,
    /// `start..end` of the file: 200 for all of it, else 206.
    Bytes {
        start: u64,
        end: u64,
        partial: bool,
    },
    Unsatisfiable,
}

impl<'a> Conditions<'a> {
    /// The fields of a viewed request, in one pass over its field lines (the first of
    /// each name counts, as `RequestView::header` and `HeaderMap::get` have it).
    pub(super) fn of_view(req: &RequestView<'a>) -> Conditions<'a> {
        let mut c = Conditions::default();
        for (name, value) in req.headers() {
            let slot = match name.len() {
                5 if name.eq_ignore_ascii_case("range") => &mut c.range,
                8 if name.eq_ignore_ascii_case("if-range") => &mut c.if_range,
                13 if name.eq_ignore_ascii_case("if-none-match") => &mut c.if_none_match,
                17 if name.eq_ignore_ascii_case("if-modified-since") => &mut c.if_modified_since,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        c
    }
}

/// Decides the answer (RFC 9110 §13.2.2: `If-None-Match` before `If-Modified-Since`;
/// `If-Range` decides whether `Range` applies).
pub(super) fn plan(file: &OpenFile, c: &Conditions<'_>) -> Plan {
    let etag = file.etag.as_bytes();
    let not_modified = match c.if_none_match {
        Some(v) => v
            .split(|&b| b == b',')
            .map(crate::token::trim_ows)
            .any(|t| t == b"*" || t == etag || t.strip_prefix(b"W/") == Some(etag)),
        None => c
            .if_modified_since
            .and_then(parse_imf)
            .is_some_and(|since| file.mtime_secs <= since),
    };
    if not_modified {
        return Plan::NotModified;
    }
    let if_range_ok = c
        .if_range
        .map_or(true, |v| v == etag || v == file.last_modified.as_bytes());
    let range = match c.range {
        Some(v) if if_range_ok => parse_range(v, file.len),
        _ => RangeReq::Full,
    };
    match range {
        RangeReq::Full => Plan::Bytes {
            start: 0,
            end: file.len,
            partial: false,
        },
        RangeReq::Part(start, end) => Plan::Bytes {
            start,
            end,
            partial: true,
        },
        RangeReq::Unsatisfiable => Plan::Unsatisfiable,
    }
}

/// The fields of a 200 for a file (its validators, `Accept-Ranges`, `Content-Type`), in
/// the order every answer writes them; a kept file's prepared response is rendered
/// from the same list.
pub(super) fn file_fields(
    etag: &HeaderValue,
    last_modified: &HeaderValue,
    content_type: &HeaderValue,
) -> [(HeaderName, HeaderValue); 4] {
    [
        (header::ETAG, etag.clone()),
        (header::LAST_MODIFIED, last_modified.clone()),
        (header::ACCEPT_RANGES, HeaderValue::from_static("bytes")),
        (header::CONTENT_TYPE, content_type.clone()),
    ]
}

/// An answer's status, fields and body, for either API to write.
struct Rendered {
    status: StatusCode,
    /// [`file_fields`] (304: without `Content-Type`), then `Content-Range` for 206/416.
    fields: Vec<(HeaderName, HeaderValue)>,
    body: Body,
}

fn render(file: &Rc<OpenFile>, plan: Plan) -> Rendered {
    let mut fields = file_fields(&file.etag, &file.last_modified, &file.content_type).to_vec();
    let len = file.len;
    let (status, range, body) = match plan {
        Plan::NotModified => {
            fields.pop(); // no Content-Type on a 304
            (StatusCode::NOT_MODIFIED, None, Body::empty())
        }
        Plan::Unsatisfiable => (
            StatusCode::RANGE_NOT_SATISFIABLE,
            Some(format!("bytes */{len}")),
            Body::empty(),
        ),
        Plan::Bytes {
            start,
            end,
            partial,
        } => (
            if partial {
                StatusCode::PARTIAL_CONTENT
            } else {
                StatusCode::OK
            },
            partial.then(|| format!("bytes {start}-{}/{len}", end - 1)),
            body(file, start, end),
        ),
    };
    if let Some(range) = range {
        let value = HeaderValue::try_from(range).expect("digits, '-', '/', '*' and a space");
        fields.push((header::CONTENT_RANGE, value));
    }
    Rendered {
        status,
        fields,
        body,
    }
}

/// `start..end` of the file: from the kept bytes, else read (or spliced) from it.
fn body(file: &Rc<OpenFile>, start: u64, end: u64) -> Body {
    match &file.contents {
        Some(all) => Body::from(all.slice(start as usize..end as usize)),
        None => Body::from_stream(Some(end - start), FileStream::new(file.clone(), start, end)),
    }
}

/// The answer as an `http` response.
pub(super) fn to_http(file: &Rc<OpenFile>, plan: Plan) -> Response<Body> {
    let r = render(file, plan);
    let mut resp = Response::new(r.body);
    *resp.status_mut() = r.status;
    let h = resp.headers_mut();
    for (name, value) in r.fields {
        h.insert(name, value);
    }
    resp
}

/// The answer written by `res`: a whole kept file as its prepared response (head and
/// body in one copy each, the `Date` from the core's cache).
pub(super) fn to_view(res: Responder<'_>, file: &Rc<OpenFile>, plan: Plan) -> Written {
    if let (Plan::Bytes { partial: false, .. }, Some(whole)) = (&plan, &file.whole) {
        return res.prepared(whole);
    }
    let r = render(file, plan);
    let mut head = res.status(r.status);
    for (name, value) in &r.fields {
        head = head.header(name, value);
    }
    head.body(r.body)
}

/// The status for a file that could not be served.
pub(super) fn error_code(e: &io::Error) -> StatusCode {
    match e.kind() {
        io::ErrorKind::NotFound => StatusCode::NOT_FOUND,
        io::ErrorKind::PermissionDenied => StatusCode::FORBIDDEN,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An error answer (the reason phrase as its body; `Allow` with 405).
pub(super) fn error_http(s: StatusCode) -> Response<Body> {
    let mut r = Response::new(Body::from(reason(s)));
    *r.status_mut() = s;
    if s == StatusCode::METHOD_NOT_ALLOWED {
        r.headers_mut().insert(header::ALLOW, allow());
    }
    r
}

/// [`error_http`] through a `Responder`.
pub(super) fn error_view(res: Responder<'_>, s: StatusCode) -> Written {
    let mut head = res.status(s);
    if s == StatusCode::METHOD_NOT_ALLOWED {
        head = head.header(&header::ALLOW, &allow());
    }
    head.bytes(reason(s).as_bytes())
}

fn reason(s: StatusCode) -> String {
    format!("{}\n", s.canonical_reason().unwrap_or("Error"))
}

fn allow() -> HeaderValue {
    HeaderValue::from_static("GET, HEAD")
}

/// The byte range asked for.
#[derive(Debug, PartialEq, Eq)]
enum RangeReq {
    Full,
    Part(u64, u64),
    Unsatisfiable,
}

/// One `bytes=` range; several ranges or a malformed header mean the whole file.
fn parse_range(v: &[u8], len: u64) -> RangeReq {
    let Some(spec) = v.strip_prefix(b"bytes=") else {
        return RangeReq::Full;
    };
    if spec.contains(&b',') {
        return RangeReq::Full;
    }
    let spec = crate::token::trim_ows(spec);
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeReq::Full;
    };
    let num = |s: &[u8]| -> Option<u64> {
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) || s.len() > 19 {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    };
    let (a, b) = (&spec[..dash], &spec[dash + 1..]);
    match (a.is_empty(), b.is_empty()) {
        (true, true) => RangeReq::Full,
        (true, false) => match num(b) {
            Some(0) => RangeReq::Unsatisfiable,
            Some(_) if len == 0 => RangeReq::Unsatisfiable,
            Some(n) => RangeReq::Part(len.saturating_sub(n), len),
            None => RangeReq::Full,
        },
        (false, _) => {
            let Some(s) = num(a) else {
                return RangeReq::Full;
            };
            let e = if b.is_empty() {
                Some(len.saturating_sub(1))
            } else {
                num(b)
            };
            match e {
                None => RangeReq::Full,
                Some(_) if s >= len => RangeReq::Unsatisfiable,
                Some(e) if e < s => RangeReq::Full,
                Some(e) => RangeReq::Part(s, e.min(len - 1) + 1),
            }
        }
    }
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) to Unix seconds.
fn parse_imf(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    let mut it = s.split(' ');
    let (_wd, d, mo, y, t, z) = (
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
        it.next()?,
    );
    if z != "GMT" {
        return None;
    }
    const M: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mo = M.iter().position(|m| *m == mo)? as i64 + 1;
    let d: i64 = d.parse().ok()?;
    let y: i64 = y.parse().ok()?;
    let mut tp = t.split(':');
    let (h, mi, se): (i64, i64, i64) = (
        tp.next()?.parse().ok()?,
        tp.next()?.parse().ok()?,
        tp.next()?.parse().ok()?,
    );
    // Days from civil (the inverse of date.rs's conversion).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + mi * 60 + se).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::date::format_imf;

    #[test]
    fn ranges() {
        assert_eq!(parse_range(b"bytes=0-9", 100), RangeReq::Part(0, 10));
        assert_eq!(parse_range(b"bytes=90-", 100), RangeReq::Part(90, 100));
        assert_eq!(parse_range(b"bytes=-10", 100), RangeReq::Part(90, 100));
        assert_eq!(parse_range(b"bytes=95-200", 100), RangeReq::Part(95, 100));
        assert_eq!(parse_range(b"bytes=100-", 100), RangeReq::Unsatisfiable);
        assert_eq!(parse_range(b"bytes=0-1,5-6", 100), RangeReq::Full);
        assert_eq!(parse_range(b"items=0-1", 100), RangeReq::Full);
    }

    #[test]
    fn imf_round_trip() {
        assert_eq!(
            parse_imf(b"Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_imf(&format_imf(1_700_000_000)), Some(1_700_000_000));
    }
}
