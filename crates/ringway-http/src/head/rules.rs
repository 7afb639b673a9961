//! The rules both head parsers share (the scanner that serves and the httparse-based
//! reference it is checked against): the limits on a head that stopped before its end,
//! the error a broken syntax gets, the version's 505, the target forms other than
//! origin form, and `Host`.

use http::{Uri, Version};

use crate::config::Config;
use crate::error::{ErrorClass, HttpError};

use super::Scanned;

/// Longest target the `http` crate's `Uri` takes; a longer one is refused with 414
/// here, so that building a `Uri` from a scanned head cannot fail.
pub(crate) const MAX_TARGET: usize = u16::MAX as usize - 1;

/// Longest field name the `http` crate's `HeaderName` takes.
pub(crate) const MAX_NAME: usize = 1 << 16;

/// Whether a field name (a token) is `Host`, in any case: a 4-byte token is when its
/// bytes with the 0x20 bit set are `host` (only the letters H, O, S, T map to h, o, s,
/// t so).
#[inline(always)]
pub(crate) fn is_host(name: &[u8]) -> bool {
    name.len() == 4
        && u32::from_le_bytes([name[0], name[1], name[2], name[3]]) | 0x2020_2020
            == u32::from_le_bytes(*b"host")
}

/// The `Host` fields of an HTTP/1.1 request: exactly one; of an HTTP/1.0 one, at most one.
#[inline(always)]
pub(crate) fn check_hosts(version: Version, hosts: u32) -> Result<(), HttpError> {
    if version == Version::HTTP_11 && hosts != 1 {
        return Err(HttpError::bad("HTTP/1.1 needs exactly one Host"));
    }
    if hosts > 1 {
        return Err(HttpError::bad("duplicate Host"));
    }
    Ok(())
}

/// More bytes are needed, unless the head is already over a limit.
pub(crate) fn partial(buf: &[u8], cfg: &Config) -> Result<Scanned, HttpError> {
    check_line_limit(buf, cfg)?;
    if buf.len() > cfg.max_head_size {
        return Err(HttpError::new(ErrorClass::HeaderTooLarge, "head too large"));
    }
    Ok(Scanned::Partial)
}

/// What the syntax of a head broke, in the terms httparse reports it (the reference
/// parser maps its errors to these; the scanner stops with them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// A byte that cannot be in the method or the target, or a missing one.
    Token,
    /// Not `HTTP/1.0` or `HTTP/1.1` (or a prefix of `HTTP/1.` while arriving).
    Version,
    /// A CR not followed by LF at a line's end, or junk where a line should end.
    NewLine,
    /// A field name that is not a token, or not followed by `:`.
    FieldName,
    /// A control or DEL in a field value, or a CR not followed by LF after one.
    FieldValue,
    /// One field line more than [`Config::max_headers`] allows.
    TooManyFields,
}

/// How a head that stopped before its end is answered: more bytes are needed, unless a
/// limit is already exceeded ([`partial`]); or its error. A version that may yet
/// become a well-formed one (`HTTP/2` on its way to `HTTP/2.0`, 505) waits too.
#[cold]
#[inline(never)]
pub(crate) fn stopped(
    buf: &[u8],
    cfg: &Config,
    syntax: Option<Syntax>,
) -> Result<Scanned, HttpError> {
    match syntax {
        None => partial(buf, cfg),
        Some(Syntax::Version) if memchr_nl(buf).is_none() && version_may_follow(buf) => {
            partial(buf, cfg)
        }
        Some(e) => Err(syntax_error(buf, cfg, e)),
    }
}

/// The error for a broken syntax (the request line limit first: a long target is 414,
/// whatever else is wrong).
fn syntax_error(buf: &[u8], cfg: &Config, e: Syntax) -> HttpError {
    if let Err(long) = check_line_limit(buf, cfg) {
        return long;
    }
    match e {
        Syntax::TooManyFields => HttpError::new(ErrorClass::HeaderTooLarge, "too many fields"),
        Syntax::Version => version_error(buf),
        Syntax::Token => HttpError::bad("invalid token"),
        Syntax::FieldName => HttpError::bad("invalid field name"),
        Syntax::FieldValue => HttpError::bad("invalid field value"),
        Syntax::NewLine => HttpError::bad("invalid line ending"),
    }
}

/// 414 if the request line (complete or still arriving) is longer than the limit.
fn check_line_limit(buf: &[u8], cfg: &Config) -> Result<(), HttpError> {
    let too_long = match memchr_nl(buf) {
        Some(i) => i > cfg.max_request_line,
        None => buf.len() > cfg.max_request_line,
    };
    if too_long {
        return Err(HttpError::new(
            ErrorClass::UriTooLong,
            "request line too long",
        ));
    }
    Ok(())
}

fn memchr_nl(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

/// No NUL anywhere in the head, and a CR always followed by LF.
pub(crate) fn no_nul_or_bare_cr(head: &[u8]) -> bool {
    head.iter()
        .enumerate()
        .all(|(i, &b)| b != 0 && (b != b'\r' || head.get(i + 1) == Some(&b'\n')))
}

/// Whether the unfinished request line ends in a prefix of `HTTP/d.d`.
///
/// The version field is what follows `METHOD SP target SP` (a version error comes only
/// after both parsed), not merely the last word: `NTz (q \x9a ` has a version field,
/// `\x9a `, that no byte can complete, although its last word is empty.
fn version_may_follow(buf: &[u8]) -> bool {
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(0);
    let mut fields = buf[start..].splitn(3, |&b| b == b' ');
    let (Some(_method), Some(_target), Some(version)) =
        (fields.next(), fields.next(), fields.next())
    else {
        return false;
    };
    let version = version.strip_suffix(b"\r").unwrap_or(version);
    let pattern = b"HTTP/0.0";
    version.len() <= pattern.len()
        && version.iter().zip(pattern).all(|(&b, &p)| match p {
            b'0' => b.is_ascii_digit(),
            _ => b == p,
        })
}

/// The version was refused: 505 for a well-formed `HTTP/x.y` of another major
/// version, 400 for anything else.
pub(crate) fn version_error(buf: &[u8]) -> HttpError {
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

/// The target forms of RFC 9112 §3.2 other than origin form (see [`crate::origin_form::origin_path_len`]),
/// each only where it belongs.
pub(crate) fn check_other_target(method: &[u8], bytes: &[u8]) -> Result<Option<usize>, HttpError> {
    let bad = || HttpError::bad("invalid target");
    if bytes
        .iter()
        .any(|&b| !(0x21..=0x7e).contains(&b) || b == b'#')
    {
        return Err(bad());
    }
    let form_ok = if bytes == b"*" {
        method == b"OPTIONS"
    } else if method == b"CONNECT" {
        true
    } else {
        let scheme = |s: &[u8]| bytes.len() >= s.len() && bytes[..s.len()].eq_ignore_ascii_case(s);
        scheme(b"http://") || scheme(b"https://")
    };
    if !form_ok {
        return Err(HttpError::bad("invalid target form"));
    }
    // Rare forms: let the `http` crate judge them, as it will build them.
    Uri::try_from(bytes).map(|_| None).map_err(|_| bad())
}
