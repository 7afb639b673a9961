//! The field lines of a request head (`name: value` CRLF ..., then the empty line),
//! parsed by hand one line at a time, so that the head scan reads each field once and
//! checks it on the spot (no array of slots to fill and walk again).
//!
//! Why not `httparse::parse_headers`: measured with callgrind on `serve --hello`
//! pipelined, it cost ~310 instructions per request for a head with one field (its
//! slot array initialised, its iterator plumbing), then the scan walked the slots
//! again. This parser accepts exactly what httparse's does with its default
//! configuration (same outcome, same error kind, same partial/complete decision and the
//! same trimmed values for every input): a property test below runs both on byte soup,
//! on valid blocks cut anywhere and on mutated ones.

use httparse::Error;

use crate::request_line::TOKEN;

/// One line of the field block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A field: its name (a token) and its value without surrounding SP or HTAB.
    Field(&'a [u8], &'a [u8]),
    /// The empty line that ends the head.
    End,
}

/// Parses the line at `buf[*at..]` and moves `at` past it. `Ok(None)`: the line is not
/// whole yet (and nothing in it so far is wrong); `at` is then left where it was.
#[inline(always)]
pub(crate) fn field_line<'a>(buf: &'a [u8], at: &mut usize) -> Result<Option<Line<'a>>, Error> {
    let n = buf.len();
    let mut i = *at;
    // The empty line: CR LF or a bare LF.
    let Some(&first) = buf.get(i) else {
        return Ok(None);
    };
    if first == b'\r' {
        return match buf.get(i + 1) {
            None => Ok(None),
            Some(b'\n') => {
                *at = i + 2;
                Ok(Some(Line::End))
            }
            Some(_) => Err(Error::NewLine),
        };
    }
    if first == b'\n' {
        *at = i + 1;
        return Ok(Some(Line::End));
    }
    // The name: a token, then the colon (no whitespace before it; a line starting with
    // whitespace, obs-fold, is refused here too). `Host:`, which every HTTP/1.1
    // request has, is recognised in one compare of a word (its bytes are tokens).
    let name_start = i;
    if buf.len() >= i + 8 && is_host(&buf[i..i + 8]) {
        i += 4;
    }
    while i < n && TOKEN[buf[i] as usize] {
        i += 1;
    }
    if i == n {
        return Ok(None);
    }
    if buf[i] != b':' || i == name_start {
        return Err(Error::HeaderName);
    }
    let name = &buf[name_start..i];
    i += 1;
    // Whitespace after the colon, then the value up to the line's end.
    while i < n && (buf[i] == b' ' || buf[i] == b'\t') {
        i += 1;
    }
    let value_start = i;
    i += value_span(&buf[i..]);
    let mut value_end = i;
    match buf.get(i) {
        None => return Ok(None),
        Some(b'\n') => i += 1,
        Some(b'\r') => match buf.get(i + 1) {
            None => return Ok(None),
            Some(b'\n') => i += 2,
            Some(_) => return Err(Error::HeaderValue),
        },
        Some(_) => return Err(Error::HeaderValue),
    }
    while value_end > value_start && matches!(buf[value_end - 1], b' ' | b'\t') {
        value_end -= 1;
    }
    *at = i;
    Ok(Some(Line::Field(name, &buf[value_start..value_end])))
}

/// Whether the 8 bytes `w` start with `Host:` in any case.
#[inline(always)]
fn is_host(w: &[u8]) -> bool {
    let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
    // Letters to lower case by their 0x20 bit (only the four letters' bytes; the
    // colon must match exactly).
    const MASK: u64 = 0xff_ffff_ffff;
    const CASE: u64 = 0x00_2020_2020;
    (w | CASE) & MASK == u64::from_le_bytes(*b"host:\0\0\0")
}

/// httparse's field-value bytes: HTAB, SP to `~`, and 0x80 and up.
const fn is_value_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// How many bytes at the start of `bytes` may be in a field value.
#[inline]
fn value_span(bytes: &[u8]) -> usize {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= bytes.len() {
        // SAFETY: 16 bytes from `i` are in bounds (checked above).
        let bad = unsafe { simd::bad_value_mask(bytes.as_ptr().add(i)) };
        if bad != 0 {
            return i + bad.trailing_zeros() as usize;
        }
        i += 16;
    }
    i + bytes[i..]
        .iter()
        .position(|&b| !is_value_byte(b))
        .unwrap_or(bytes.len() - i)
}

/// The value bytes 16 at a time (SSE2, which every x86_64 has): the same set as
/// [`is_value_byte`] (a test below compares them for every byte in every lane).
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// A mask with bit `k` set if byte `k` of the 16 at `p` may not be in a value.
    ///
    /// # Safety
    ///
    /// `p` must be valid for reads of 16 bytes.
    #[inline]
    pub(super) unsafe fn bad_value_mask(p: *const u8) -> u32 {
        // SAFETY: the caller guarantees 16 readable bytes; SSE2 is part of x86_64.
        unsafe {
            let v = _mm_loadu_si128(p.cast());
            // Controls 0x00..=0x1f (signed compares: 0x80 and up are negative, allowed).
            let control = _mm_and_si128(
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                _mm_cmpgt_epi8(v, _mm_set1_epi8(-1)),
            );
            let tab = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\t' as i8));
            let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
            _mm_movemask_epi8(_mm_or_si128(_mm_andnot_si128(tab, control), del)) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Room for fields in both parsers.
    const MAX: usize = 6;

    /// The outcome of a whole field block: its length and fields, partial, or an error.
    type Block = Result<Option<(usize, Vec<(Vec<u8>, Vec<u8>)>)>, Error>;

    fn ours(buf: &[u8]) -> Block {
        let mut at = 0;
        let mut fields = Vec::new();
        loop {
            match field_line(buf, &mut at)? {
                None => return Ok(None),
                Some(Line::End) => return Ok(Some((at, fields))),
                Some(Line::Field(n, v)) => {
                    if fields.len() == MAX {
                        return Err(Error::TooManyHeaders);
                    }
                    fields.push((n.to_vec(), v.to_vec()));
                }
            }
        }
    }

    fn theirs(buf: &[u8]) -> Block {
        let mut slots = [httparse::EMPTY_HEADER; MAX];
        match httparse::parse_headers(buf, &mut slots)? {
            httparse::Status::Partial => Ok(None),
            httparse::Status::Complete((len, fields)) => Ok(Some((
                len,
                fields
                    .iter()
                    .map(|f| (f.name.as_bytes().to_vec(), f.value.to_vec()))
                    .collect(),
            ))),
        }
    }

    fn alphabet() -> impl Strategy<Value = u8> {
        prop_oneof![
            8 => prop::sample::select(b"Hos:t \r\n".to_vec()),
            2 => prop::sample::select(b"ax\t\x7f\x00\x80\xff,;(\"".to_vec()),
            1 => any::<u8>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 6000, .. ProptestConfig::default() })]

        /// Byte soup near the grammar: the same outcome as httparse.
        #[test]
        fn agrees_with_httparse(bytes in prop::collection::vec(alphabet(), 0..48)) {
            prop_assert_eq!(ours(&bytes), theirs(&bytes), "{:?}", String::from_utf8_lossy(&bytes));
        }

        /// Valid blocks cut anywhere: partial until whole, then the same as httparse.
        #[test]
        fn prefixes_of_valid_blocks(
            fields in prop::collection::vec(("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}", "[ \t]{0,2}", "[ -~\t]{0,30}", any::<bool>()), 0..8),
            crlf in any::<bool>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut b = Vec::new();
            for (name, ws, value, cr) in &fields {
                b.extend_from_slice(format!("{name}:{ws}{value}{}", if *cr { "\r\n" } else { "\n" }).as_bytes());
            }
            b.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            let k = cut.index(b.len() + 1);
            prop_assert_eq!(ours(&b[..k]), theirs(&b[..k]));
            prop_assert_eq!(ours(&b), theirs(&b));
        }

        /// Valid blocks with a few bytes replaced, inserted or removed.
        #[test]
        fn mutated_blocks_agree_with_httparse(
            value in "[ -~]{0,40}",
            muts in prop::collection::vec((any::<prop::sample::Index>(), alphabet(), 0u8..3), 1..4),
        ) {
            let mut b = format!("Host: a\r\nX-Long: {value}\r\nUser-Agent:\tb c \r\n\r\n").into_bytes();
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
            prop_assert_eq!(ours(&b), theirs(&b), "{:?}", String::from_utf8_lossy(&b));
        }
    }

    #[test]
    fn every_byte_in_every_lane() {
        for b in 0..=255u8 {
            for lane in 0..40 {
                let mut v = vec![b'a'; 40];
                v[lane] = b;
                let want = if is_value_byte(b) { 40 } else { lane };
                assert_eq!(value_span(&v), want, "byte {b:#x} lane {lane}");
            }
        }
    }

    #[test]
    fn too_many_fields_only_once_a_line_beyond_is_whole() {
        let block = b"a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\nf: 6\r\ng: 7";
        assert_eq!(ours(block), Ok(None));
        assert_eq!(theirs(block), Ok(None));
        let block = b"a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\nf: 6\r\ng: 7\r\n";
        assert_eq!(ours(block), Err(Error::TooManyHeaders));
        assert_eq!(theirs(block), Err(Error::TooManyHeaders));
    }
}
