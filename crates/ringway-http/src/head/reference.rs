//! The reference head parser: httparse for the syntax, then our checks of what it
//! found. This was the server's parser until the scanner (`scanner.rs`) replaced it;
//! it stays, unchanged in what it accepts and refuses, as the definition the scanner
//! is checked against: the differential tests (`tests/differential.rs`) and the fuzz
//! target feed both the same bytes and require the same outcome, error or head, to the
//! byte. Built only for tests and for the fuzz target (the `differential` feature).

use std::mem::MaybeUninit;

use http::Version;

use crate::config::{Config, MAX_HEADERS_CAP};
use crate::error::{ErrorClass, HttpError};
use crate::framing::{body_kind, BodyKind};
use crate::origin_form::origin_path_len;
use crate::token::trim_ows;

use super::rules::{
    check_hosts, check_other_target, is_host, no_nul_or_bare_cr, stopped, Syntax, MAX_NAME,
    MAX_TARGET,
};
use super::{RawHead, Scanned};

/// httparse's error as the syntax it broke.
fn syntax(e: httparse::Error) -> Syntax {
    match e {
        httparse::Error::TooManyHeaders => Syntax::TooManyFields,
        httparse::Error::Version => Syntax::Version,
        httparse::Error::Token => Syntax::Token,
        httparse::Error::HeaderName => Syntax::FieldName,
        httparse::Error::HeaderValue => Syntax::FieldValue,
        // (`Status` is a response's; a request gets none.)
        httparse::Error::NewLine | httparse::Error::Status => Syntax::NewLine,
    }
}

/// Field slots tried first: enough for most heads, cheap to initialise. A head with
/// more fields is parsed again with room for [`Config::max_headers`].
const FEW_FIELDS: usize = 16;

/// What [`super::scan_head`] makes of `buf`, by httparse and the checks of its result.
pub fn scan_head(buf: &[u8], cfg: &Config) -> Result<Scanned, HttpError> {
    let max = cfg.max_headers.min(MAX_HEADERS_CAP);
    // Slots httparse fills without reading (it initialises those it parses into): a
    // head's worth of `EMPTY_HEADER`s written first would cost 32 bytes per slot per
    // request.
    let mut few = [const { MaybeUninit::uninit() }; FEW_FIELDS];
    let mut req = httparse::Request::new(&mut []);
    match req.parse_with_uninit_headers(buf, &mut few[..max.min(FEW_FIELDS)]) {
        Err(httparse::Error::TooManyHeaders) if max > FEW_FIELDS => scan_head_many(buf, cfg, max),
        parsed => check_head(buf, cfg, &req, parsed),
    }
}

/// [`scan_head`] again with room for `max` fields (more than [`FEW_FIELDS`]). Apart:
/// its slots would make every scan's stack frame 4 KiB larger.
#[inline(never)]
fn scan_head_many(buf: &[u8], cfg: &Config, max: usize) -> Result<Scanned, HttpError> {
    let mut many = [const { MaybeUninit::uninit() }; MAX_HEADERS_CAP];
    let mut req = httparse::Request::new(&mut []);
    let parsed = req.parse_with_uninit_headers(buf, &mut many[..max]);
    check_head(buf, cfg, &req, parsed)
}

/// Our checks of what httparse made of `buf` (`parsed`, `req`).
#[inline(always)]
fn check_head(
    buf: &[u8],
    cfg: &Config,
    req: &httparse::Request<'_, '_>,
    parsed: httparse::Result<usize>,
) -> Result<Scanned, HttpError> {
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return stopped(buf, cfg, None),
        Err(e) => return stopped(buf, cfg, Some(syntax(e))),
    };
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        // (httparse sets all three before it completes a request.)
        return Err(HttpError::bad("malformed request line"));
    };
    let base = buf.as_ptr() as usize;
    let method_start = method.as_ptr() as usize - base;
    let target_start = target.as_ptr() as usize - base;
    // httparse took exactly `SP HTTP/1.x` and CR LF or a bare LF after the target.
    let version_end = target_start + target.len() + 9;
    let line_len = version_end + if buf[version_end] == b'\r' { 2 } else { 1 };
    if line_len - 1 > cfg.max_request_line {
        return Err(HttpError::new(
            ErrorClass::UriTooLong,
            "request line too long",
        ));
    }
    if len > cfg.max_head_size {
        return Err(HttpError::new(ErrorClass::HeaderTooLarge, "head too large"));
    }
    // httparse refuses NUL and a CR without LF anywhere in the head (the method and
    // field names are tokens, the target and values exclude controls, line ends are CR
    // LF or LF): checked again only in debug builds, and by the fuzz target.
    debug_assert!(no_nul_or_bare_cr(&buf[..len]), "a control got through");
    let method = method.as_bytes();
    let version = if minor == 1 {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    let target = target.as_bytes();
    if target.len() > MAX_TARGET {
        return Err(HttpError::new(ErrorClass::UriTooLong, "target too long"));
    }
    let path_len = if target[0] == b'/' {
        match origin_path_len(&buf[target_start..len], target.len()) {
            Some(n) => n as u32,
            None => return Err(HttpError::bad("invalid target")),
        }
    } else {
        check_other_target(method, target)?.map_or(u32::MAX, |n| n as u32)
    };
    let fields = &*req.headers;
    // Every field is part of the head: in a head within the field limits, none is over
    // them, and their sizes need no look.
    let sizes = len > cfg.max_field_size || len >= MAX_NAME;
    // The common head names no field the server reads but `Host`: the others (framing,
    // the connection's fate, expectations) are looked at only where one is named.
    let facts = match count_hosts(fields, sizes, cfg)? {
        Some(hosts) => {
            check_hosts(version, hosts)?;
            FieldFacts {
                body: BodyKind::None,
                keep_alive: version == Version::HTTP_11,
                expect_continue: false,
            }
        }
        None => field_facts(fields, version, cfg)?,
    };
    Ok(Scanned::Complete(RawHead {
        len,
        method_start: method_start as u32,
        method_len: method.len() as u16,
        target_start: target_start as u32,
        target_len: target.len() as u32,
        path_len,
        fields_start: line_len as u32,
        fields: fields.len() as u16,
        version,
        body: facts.body,
        keep_alive: facts.keep_alive,
        expect_continue: facts.expect_continue,
        is_head: method == b"HEAD",
    }))
}

/// What the fields of a head decide besides `Host`.
#[derive(Debug, PartialEq, Eq)]
struct FieldFacts {
    body: BodyKind,
    keep_alive: bool,
    expect_continue: bool,
}

/// 431 for a field longer than the limit (or than a `HeaderName` can be).
#[inline(always)]
fn check_field_size(f: &httparse::Header<'_>, cfg: &Config) -> Result<(), HttpError> {
    let name = f.name.len();
    if name + f.value.len() > cfg.max_field_size || name >= MAX_NAME {
        return Err(HttpError::new(
            ErrorClass::HeaderTooLarge,
            "field too large",
        ));
    }
    Ok(())
}

/// How many fields are `Host`, if none is one of the other four the server reads
/// (`Content-Length`, `Transfer-Encoding`, `Connection`, `Expect`): `None` at the
/// first that is ([`field_facts`] then reads them all). With `sizes`, sizes are checked
/// in order on the way, as [`field_facts`] checks them, so the first fault found is the
/// same.
#[inline(always)]
fn count_hosts(
    fields: &[httparse::Header<'_>],
    sizes: bool,
    cfg: &Config,
) -> Result<Option<u32>, HttpError> {
    let mut hosts = 0u32;
    for f in fields {
        if sizes {
            check_field_size(f, cfg)?;
        }
        let name = f.name.as_bytes();
        // The length picks the one name to compare with.
        match name.len() {
            4 if is_host(name) => hosts += 1,
            14 if name.eq_ignore_ascii_case(b"content-length") => return Ok(None),
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => return Ok(None),
            10 if name.eq_ignore_ascii_case(b"connection") => return Ok(None),
            6 if name.eq_ignore_ascii_case(b"expect") => return Ok(None),
            _ => {}
        }
    }
    Ok(Some(hosts))
}

/// Reads the five fields that decide framing, the connection's fate and expectations
/// (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, `Expect`).
#[inline(never)]
fn field_facts(
    fields: &[httparse::Header<'_>],
    version: Version,
    cfg: &Config,
) -> Result<FieldFacts, HttpError> {
    let mut hosts = 0u32;
    let mut lengths = 0u32;
    let mut length: &[u8] = &[];
    let mut codings: Option<Vec<u8>> = None;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut expect_continue = false;
    for f in fields {
        check_field_size(f, cfg)?;
        let name = f.name.as_bytes();
        // Only five names matter here; the length picks the one to compare with.
        match name.len() {
            4 if is_host(name) => hosts += 1,
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                lengths += 1;
                length = f.value;
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                let c = codings.get_or_insert_with(Vec::new);
                if !c.is_empty() {
                    c.push(b',');
                }
                c.extend_from_slice(f.value);
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in f.value.split(|&b| b == b',') {
                    let t = trim_ows(token);
                    if t.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        keep_alive_token = true;
                    }
                }
            }
            6 if name.eq_ignore_ascii_case(b"expect") => {
                if trim_ows(f.value).eq_ignore_ascii_case(b"100-continue") {
                    expect_continue = version == Version::HTTP_11;
                } else {
                    return Err(HttpError::new(
                        ErrorClass::ExpectationFailed,
                        "unsupported expectation",
                    ));
                }
            }
            _ => {}
        }
    }
    check_hosts(version, hosts)?;
    let body = match (lengths, &codings) {
        (0, None) => BodyKind::None,
        (0, Some(c)) => body_kind(version, &[], Some(c))?,
        (1, c) => body_kind(version, &[length], c.as_deref())?,
        (_, Some(c)) => body_kind(version, &[length, length], Some(c))?,
        (_, None) => return Err(HttpError::bad("several Content-Length fields")),
    };
    let keep_alive = match version {
        Version::HTTP_11 => !close,
        _ => keep_alive_token && !close,
    };
    Ok(FieldFacts {
        body,
        keep_alive,
        expect_continue,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head that names no field the server reads but `Host` gets from the short
    /// path (`count_hosts`) what the full reading (`field_facts`) gives it: the same
    /// facts, or the same first fault; one that names any of the others goes the full
    /// way.
    #[test]
    fn the_short_path_agrees_with_the_full_reading() {
        let small = Config {
            max_field_size: 24,
            ..Config::default()
        };
        let sets: [&[(&str, &str)]; 9] = [
            &[],
            &[("Host", "a")],
            &[("host", "a"), ("Accept", "*/*"), ("User-Agent", "x")],
            &[("Host", "a"), ("HOST", "b")],
            &[("Accept", "*/*")],
            &[
                ("If-Modified-Since", "x"),
                ("Content-Language", "y"),
                ("Host", "h"),
            ],
            &[
                ("Host", "a"),
                ("X-Long", "a value longer than the small limit"),
            ],
            &[
                ("X-Long", "a value longer than the small limit"),
                ("Host", "a"),
                ("Host", "b"),
            ],
            &[
                ("Expecu", "1"),
                ("Connectiom", "close"),
                ("Content-Lengtx", "5"),
                ("Host", "h"),
            ],
        ];
        for cfg in [Config::default(), small] {
            for fields in sets {
                let headers: Vec<httparse::Header<'_>> = fields
                    .iter()
                    .map(|(n, v)| httparse::Header {
                        name: n,
                        value: v.as_bytes(),
                    })
                    .collect();
                for version in [Version::HTTP_10, Version::HTTP_11] {
                    let short = count_hosts(&headers, true, &cfg).map(|hosts| {
                        let hosts = hosts.expect("no framing names");
                        check_hosts(version, hosts).map(|()| FieldFacts {
                            body: BodyKind::None,
                            keep_alive: version == Version::HTTP_11,
                            expect_continue: false,
                        })
                    });
                    let short = short.and_then(|facts| facts);
                    let full = field_facts(&headers, version, &cfg);
                    assert_eq!(short, full, "{fields:?} {version:?}");
                }
            }
        }
        for name in [
            "Content-Length",
            "transfer-encoding",
            "CONNECTION",
            "expect",
        ] {
            let headers = [
                httparse::Header {
                    name: "Host",
                    value: b"h",
                },
                httparse::Header { name, value: b"0" },
            ];
            assert_eq!(
                count_hosts(&headers, true, &Config::default()),
                Ok(None),
                "{name}"
            );
        }
    }
}
