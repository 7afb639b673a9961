//! The request line (`METHOD SP target SP HTTP/1.x CRLF`), parsed by hand; the field
//! lines after it are httparse's (`httparse::parse_headers`).
//!
//! Why not httparse for this line too: measured with callgrind on `serve --hello`
//! pipelined, httparse's request line cost ~320 instructions per request, a third of
//! them a UTF-8 validation of a target whose bytes the scanner then restricts to
//! visible ASCII anyway. This parser accepts exactly what httparse's does (same
//! outcome, same error kind, same partial/complete decision for every prefix) except
//! for target bytes of 0x80 and above, which httparse lets through and the scanner
//! refused afterwards with the same 400: that equivalence is a property test below, run
//! against httparse itself. While scanning the target it also checks it against the
//! origin-form byte classes, so the target is read once.

use httparse::Error;

/// A request line: byte ranges into the buffer it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestLine {
    /// Where the method starts (after any empty lines).
    pub method_start: usize,
    pub method_len: usize,
    pub target_start: usize,
    pub target_len: usize,
    /// For a target starting with `/`: the length of its path (before `?`) if every
    /// byte is in the origin-form classes, `None` if one is not.
    pub origin_path: Option<usize>,
    /// The minor version: 0 or 1.
    pub minor: u8,
    /// Bytes the line took, line ending included.
    pub len: usize,
}

/// The line's outcome: complete, more bytes needed, or httparse's error for it.
pub(crate) type LineResult = Result<Option<RequestLine>, Error>;

/// httparse's token bytes (RFC 9110 `tchar`).
const TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = crate::token::is_tchar(b as u8);
        b += 1;
    }
    t
};

/// Class bit of bytes allowed in an origin-form path (not `?`, which ends it).
const PATH: u8 = 1;
/// Class bit of bytes allowed in a query.
const QUERY: u8 = 2;

/// Byte classes of an origin-form target: [`PATH`], allowed in the path; [`QUERY`],
/// allowed in the query. The same sets the `http` crate's `Uri` accepts (so a target
/// that passes here always becomes a `Uri`), within what RFC 9112 allows on the wire
/// (visible ASCII, no fragment).
pub(crate) const TARGET_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0x21;
    while b <= 0x7e {
        let path = matches!(b, 0x21 | 0x22 | 0x24..=0x3b | 0x3d | 0x40..=0x5f | 0x61..=0x7e);
        let query = matches!(b, 0x21 | 0x24..=0x3b | 0x3d | 0x3f..=0x7e);
        t[b] = if path { PATH } else { 0 } | if query { QUERY } else { 0 };
        b += 1;
    }
    t
};

/// How many bytes at the start of `bytes` are in class `bit` of `classes`.
fn span(bytes: &[u8], classes: &[u8; 256], bit: u8) -> usize {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= bytes.len() {
        // SAFETY: 16 bytes from `i` are in bounds (checked above).
        let good = unsafe { simd::good_mask(bytes.as_ptr().add(i), bit) };
        if good != 0xffff {
            return i + (!good).trailing_zeros() as usize;
        }
        i += 16;
    }
    i + bytes[i..]
        .iter()
        .position(|&b| classes[b as usize] & bit == 0)
        .unwrap_or(bytes.len() - i)
}

/// The origin-form classes 16 bytes at a time (SSE2, which every x86_64 has): the same
/// sets as [`TARGET_CLASS`] (a property test below compares them).
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// A mask with bit `k` set if byte `k` of the 16 at `p` is in class `bit`.
    ///
    /// # Safety
    ///
    /// `p` must be valid for reads of 16 bytes.
    #[inline]
    pub(super) unsafe fn good_mask(p: *const u8, bit: u8) -> u32 {
        // SAFETY: the caller guarantees 16 readable bytes; SSE2 is part of x86_64.
        unsafe {
            let v = _mm_loadu_si128(p.cast());
            // Visible ASCII: 0x21..=0x7e (signed compares: 0x80 and up are negative).
            let visible = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(0x20)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x7f)),
            );
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let common = _mm_or_si128(_mm_or_si128(eq(b'#'), eq(b'<')), eq(b'>'));
            let bad = if bit == super::PATH {
                _mm_or_si128(common, _mm_or_si128(eq(b'?'), eq(b'`')))
            } else {
                _mm_or_si128(common, eq(b'"'))
            };
            _mm_movemask_epi8(_mm_andnot_si128(bad, visible)) as u32
        }
    }
}

/// Parses the request line at the start of `buf`; `classes` are the origin-form byte
/// classes (bit 0: allowed in the path, bit 1: in the query).
pub(crate) fn parse_request_line(buf: &[u8], classes: &[u8; 256]) -> LineResult {
    let n = buf.len();
    // Empty lines before the request line are skipped (RFC 9112 §2.2), as httparse
    // does: CR LF or a bare LF; a CR followed by anything else is refused.
    let mut i = 0;
    loop {
        match buf.get(i) {
            None => return Ok(None),
            Some(b'\n') => i += 1,
            Some(b'\r') => match buf.get(i + 1) {
                None => return Ok(None),
                Some(b'\n') => i += 2,
                Some(_) => return Err(Error::NewLine),
            },
            Some(_) => break,
        }
    }
    let method_start = i;
    // The method: a token, then one space.
    if buf[i..].starts_with(b"GET ") {
        i += 3;
    } else {
        while i < n && TOKEN[buf[i] as usize] {
            i += 1;
        }
        if i == n {
            return Ok(None);
        }
        if buf[i] != b' ' || i == method_start {
            return Err(Error::Token);
        }
    }
    let method_len = i - method_start;
    i += 1;
    // The target: visible ASCII up to one space. Origin-form classes checked on the way.
    let target_start = i;
    let mut origin_path = None;
    if buf.get(i) == Some(&b'/') {
        i += span(&buf[i..], classes, PATH);
        let path_len = i - target_start;
        let mut clean = true;
        if i < n && buf[i] == b'?' {
            i += 1;
            i += span(&buf[i..], classes, QUERY);
        }
        if i < n && buf[i] != b' ' {
            clean = false;
        }
        if clean {
            origin_path = Some(path_len);
        }
    }
    while i < n && (0x21..=0x7e).contains(&buf[i]) {
        i += 1;
    }
    if i == n {
        return Ok(None);
    }
    if buf[i] >= 0x80 {
        // httparse takes UTF-8 here; the scanner refuses it with the same 400 after.
        return Err(Error::Token);
    }
    if buf[i] != b' ' || i == target_start {
        return Err(Error::Token);
    }
    let target_len = i - target_start;
    i += 1;
    // The version: exactly `HTTP/1.0` or `HTTP/1.1`.
    // (Compared as one 8-byte word: a byte-by-byte compare of the slice is 16 branches.)
    let minor = match buf
        .get(i..i + 8)
        .map(|v| u64::from_le_bytes(v.try_into().expect("8 bytes")))
    {
        Some(v) if v == u64::from_le_bytes(*b"HTTP/1.1") => 1,
        Some(v) if v == u64::from_le_bytes(*b"HTTP/1.0") => 0,
        Some(_) => return Err(Error::Version),
        None => {
            // A prefix of `HTTP/1.` may still become a version.
            let rest = &buf[i..];
            return if b"HTTP/1."[..rest.len().min(7)] == rest[..rest.len().min(7)] {
                Ok(None)
            } else {
                Err(Error::Version)
            };
        }
    };
    i += 8;
    // The line ending: CR LF or a bare LF.
    match buf.get(i) {
        None => return Ok(None),
        Some(b'\n') => i += 1,
        Some(b'\r') => match buf.get(i + 1) {
            None => return Ok(None),
            Some(b'\n') => i += 2,
            Some(_) => return Err(Error::NewLine),
        },
        Some(_) => return Err(Error::NewLine),
    }
    Ok(Some(RequestLine {
        method_start,
        method_len,
        target_start,
        target_len,
        origin_path,
        minor,
        len: i,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// httparse's view of the same bytes, as this parser reports it (only the bytes up
    /// to the first line's end are shown to it: what follows is the fields' business).
    fn httparse_line(buf: &[u8]) -> LineResult {
        let buf = &buf[..line_end(buf).unwrap_or(buf.len())];
        let mut fields: [httparse::Header<'_>; 0] = [];
        let mut req = httparse::Request::new(&mut fields);
        let r = req.parse(buf);
        let line = |r: &httparse::Request<'_, '_>, len| {
            let base = buf.as_ptr() as usize;
            let m = r.method.expect("method");
            let t = r.path.expect("path");
            (
                m.as_ptr() as usize - base,
                m.len(),
                t.as_ptr() as usize - base,
                t.len(),
                r.version.expect("version"),
                len,
            )
        };
        match r {
            Ok(httparse::Status::Partial) if req.version.is_none() || line_end(buf).is_none() => {
                Ok(None)
            }
            // A complete line followed by fields (no room for them) or by the end.
            Ok(httparse::Status::Partial) | Err(Error::TooManyHeaders) => {
                let end = line_end(buf).expect("a whole line");
                let (ms, ml, ts, tl, v, _) = line(&req, end);
                Ok(Some(RequestLine {
                    method_start: ms,
                    method_len: ml,
                    target_start: ts,
                    target_len: tl,
                    origin_path: None,
                    minor: v,
                    len: end,
                }))
            }
            Ok(httparse::Status::Complete(_)) => {
                let end = line_end(buf).expect("a whole line");
                let (ms, ml, ts, tl, v, _) = line(&req, end);
                Ok(Some(RequestLine {
                    method_start: ms,
                    method_len: ml,
                    target_start: ts,
                    target_len: tl,
                    origin_path: None,
                    minor: v,
                    len: end,
                }))
            }
            Err(e) => Err(e),
        }
    }

    /// Where the request line ends (after its LF), skipping leading empty lines.
    fn line_end(buf: &[u8]) -> Option<usize> {
        let mut i = 0;
        while i < buf.len() && (buf[i] == b'\r' || buf[i] == b'\n') {
            i += 1;
        }
        Some(i + buf[i..].iter().position(|&b| b == b'\n')? + 1)
    }

    fn ours(buf: &[u8]) -> LineResult {
        parse_request_line(buf, &TARGET_CLASS).map(|l| {
            l.map(|l| RequestLine {
                origin_path: None,
                ..l
            })
        })
    }

    fn alphabet() -> impl Strategy<Value = u8> {
        prop_oneof![
            8 => prop::sample::select(b"GETPOSHTP/1.0 \r\n".to_vec()),
            2 => prop::sample::select(b"ax?#<>`\"\t%:*".to_vec()),
            1 => any::<u8>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]

        /// Byte soup near the grammar: the same outcome as httparse.
        #[test]
        fn agrees_with_httparse(bytes in prop::collection::vec(alphabet(), 0..40)) {
            let theirs = httparse_line(&bytes);
            let mine = ours(&bytes);
            // Bytes >= 0x80 in the target: httparse may accept (then the scanner
            // refuses), this parser refuses at once.
            let high = bytes.iter().any(|&b| b >= 0x80);
            if !(high && mine == Err(Error::Token)) {
                prop_assert_eq!(mine, theirs, "{:?}", String::from_utf8_lossy(&bytes));
            }
        }

        /// Valid lines cut anywhere: partial until whole, then the same as httparse.
        #[test]
        fn prefixes_of_valid_lines(
            method in "[A-Z]{1,7}",
            target in "/[!-~]{0,20}",
            minor in 0u8..2,
            crlf in any::<bool>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let line = format!(
                "{method} {target} HTTP/1.{minor}{}",
                if crlf { "\r\n" } else { "\n" }
            );
            let b = line.as_bytes();
            let k = cut.index(b.len() + 1);
            prop_assert_eq!(ours(&b[..k]), httparse_line(&b[..k]));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]

        /// Valid lines with a few bytes replaced, inserted or removed.
        #[test]
        fn mutated_lines_agree_with_httparse(
            method in "(GET|POST|[A-Z]{1,6})",
            target in "(/[!-~]{0,12}|\\*|http://a/b)",
            lead in "(\r\n|\n){0,2}",
            muts in prop::collection::vec((any::<prop::sample::Index>(), alphabet(), 0u8..3), 1..4),
        ) {
            let mut b = format!("{lead}{method} {target} HTTP/1.1\r\n").into_bytes();
            for (at, byte, kind) in muts {
                let k = at.index(b.len() + 1);
                match kind {
                    0 if k < b.len() => b[k] = byte,
                    1 => b.insert(k, byte),
                    _ if k < b.len() => {
                        b.remove(k);
                    }
                    _ => {}
                }
            }
            let theirs = httparse_line(&b);
            let mine = ours(&b);
            let high = b.iter().any(|&x| x >= 0x80);
            if !(high && mine == Err(Error::Token)) {
                prop_assert_eq!(mine, theirs, "{:?}", String::from_utf8_lossy(&b));
            }
        }
    }

    proptest! {
        /// The vector classes are the table's.
        #[test]
        fn span_agrees_with_the_table(bytes in prop::collection::vec(alphabet(), 0..70)) {
            let classes = &TARGET_CLASS;
            for bit in [PATH, QUERY] {
                let scalar = bytes
                    .iter()
                    .position(|&b| classes[b as usize] & bit == 0)
                    .unwrap_or(bytes.len());
                prop_assert_eq!(span(&bytes, classes, bit), scalar);
            }
        }
    }

    #[test]
    fn every_byte_in_every_lane() {
        let classes = &TARGET_CLASS;
        for b in 0..=255u8 {
            for lane in 0..20 {
                let mut v = vec![b'a'; 20];
                v[lane] = b;
                for bit in [PATH, QUERY] {
                    let want = if classes[b as usize] & bit == 0 {
                        lane
                    } else {
                        20
                    };
                    assert_eq!(span(&v, classes, bit), want, "byte {b:#x} lane {lane}");
                }
            }
        }
    }

    #[test]
    fn origin_path_and_classes() {
        let classes = &TARGET_CLASS;
        let l = parse_request_line(b"GET /a/b?c=d HTTP/1.1\r\n", classes)
            .unwrap()
            .unwrap();
        assert_eq!((l.target_len, l.origin_path, l.len), (8, Some(4), 23));
        // `<` is visible ASCII (the line parses) but not an origin-form byte.
        let l = parse_request_line(b"GET /a<b HTTP/1.1\r\n", classes)
            .unwrap()
            .unwrap();
        assert_eq!(l.origin_path, None);
        let l = parse_request_line(b"\r\n\nPOST * HTTP/1.0\n", classes)
            .unwrap()
            .unwrap();
        assert_eq!((l.method_start, l.method_len, l.minor), (3, 4, 0));
    }
}
