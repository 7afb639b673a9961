//! The token and whitespace rules of RFC 9110 §5.6 that the request line, the fields,
//! the body framing, the chunked decoder and the Range header share: `tchar` and optional
//! whitespace (OWS). Leaf module: it uses nothing else of the crate.

/// RFC 9110 `tchar`.
pub(crate) const fn is_tchar(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z'
        | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_'
        | b'`' | b'|' | b'~')
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
