//! How a request body is delimited (RFC 9112 §6): `Content-Length`, chunked, or none.
//! Ambiguity is never resolved in the sender's favour: every doubtful combination is
//! refused, which is what keeps a second request from being smuggled in a body.

use http::Version;

use crate::error::{ErrorClass, HttpError};
use crate::token::{is_tchar, trim_ows};

/// The framing of a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body.
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
}

/// Decides the framing from the `Content-Length` values and the joined
/// `Transfer-Encoding` list.
pub fn body_kind(
    version: Version,
    lengths: &[&[u8]],
    codings: Option<&[u8]>,
) -> Result<BodyKind, HttpError> {
    if let Some(te) = codings {
        if version != Version::HTTP_11 {
            return Err(HttpError::bad("Transfer-Encoding on HTTP/1.0"));
        }
        if !lengths.is_empty() {
            return Err(HttpError::bad("Content-Length with Transfer-Encoding"));
        }
        let items: Vec<&[u8]> = te.split(|&b| b == b',').map(trim_ows).collect();
        if items
            .iter()
            .any(|i| i.is_empty() || !i.iter().all(|&b| is_tchar(b)))
        {
            return Err(HttpError::bad("malformed Transfer-Encoding"));
        }
        let chunked = items
            .iter()
            .filter(|i| i.eq_ignore_ascii_case(b"chunked"))
            .count();
        let last_chunked = items
            .last()
            .is_some_and(|i| i.eq_ignore_ascii_case(b"chunked"));
        return match (chunked, last_chunked, items.len()) {
            (1, true, 1) => Ok(BodyKind::Chunked),
            (0, _, _) | (1, true, _) => Err(HttpError::new(
                ErrorClass::NotImplemented,
                "unsupported transfer coding",
            )),
            _ => Err(HttpError::bad("chunked not last or repeated")),
        };
    }
    match lengths {
        [] => Ok(BodyKind::None),
        [one] => parse_length(one).map(|n| {
            if n == 0 {
                BodyKind::None
            } else {
                BodyKind::Length(n)
            }
        }),
        _ => Err(HttpError::bad("several Content-Length fields")),
    }
}

/// `1*DIGIT`, nothing else (no sign, no spaces, no list), without overflow.
pub fn parse_length(v: &[u8]) -> Result<u64, HttpError> {
    if v.is_empty() || v.len() > 20 {
        return Err(HttpError::bad("bad Content-Length"));
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return Err(HttpError::bad("bad Content-Length"));
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| HttpError::bad("Content-Length overflows"))?;
    }
    Ok(n)
}
