//! The origin-form byte classes of a request target (RFC 9112 §3.2.1 within what the
//! `http` crate's `Uri` takes), checked 16 bytes at a time.
//!
//! httparse parses the request line and lets any visible ASCII byte (and UTF-8) into the
//! target; the server then holds an origin-form target to the stricter classes here, so
//! that a target it accepts always becomes a `Uri` and a fragment or a control never
//! gets through.

/// Class bit of bytes allowed in an origin-form path (not `?`, which ends it).
const PATH: u8 = 1;
/// Class bit of bytes allowed in a query.
const QUERY: u8 = 2;

/// Byte classes of an origin-form target: [`PATH`], allowed in the path; [`QUERY`],
/// allowed in the query. The same sets the `http` crate's `Uri` accepts (so a target
/// that passes here always becomes a `Uri`), within what RFC 9112 allows on the wire
/// (visible ASCII, no fragment).
const TARGET_CLASS: [u8; 256] = {
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

/// For an origin-form target (one that starts with `/`): the length of its path
/// (before `?`) if every byte of its `target_len` bytes is in the origin-form classes,
/// `None` if one is not.
///
/// `from_target` starts with the target and may go on past it (the rest of the head):
/// the byte that ends a target httparse parsed is a space, in no class, so the scan
/// stops there, and the bytes after it give the 16-byte steps room on short targets.
pub(crate) fn origin_path_len(from_target: &[u8], target_len: usize) -> Option<usize> {
    let path = span(from_target, &TARGET_CLASS, PATH);
    let mut end = path;
    if path < target_len && from_target[path] == b'?' {
        end = path + 1 + span(&from_target[path + 1..], &TARGET_CLASS, QUERY);
    }
    (end == target_len).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn alphabet() -> impl Strategy<Value = u8> {
        prop_oneof![
            8 => prop::sample::select(b"GETPOSHTP/1.0 \r\n".to_vec()),
            2 => prop::sample::select(b"ax?#<>`\"\t%:*".to_vec()),
            1 => any::<u8>(),
        ]
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

    /// The target alone, and followed by the rest of a request line (as the scan sees
    /// it): the same answer.
    fn origin(target: &[u8]) -> Option<usize> {
        let alone = origin_path_len(target, target.len());
        let line = [target, b" HTTP/1.1\r\nHost: a\r\n\r\n"].concat();
        assert_eq!(origin_path_len(&line, target.len()), alone, "{target:?}");
        alone
    }

    #[test]
    fn origin_path_and_classes() {
        assert_eq!(origin(b"/a/b?c=d"), Some(4));
        assert_eq!(origin(b"/"), Some(1));
        assert_eq!(origin(b"/a?"), Some(2));
        // `?` may appear again in the query; `<`, `#` and UTF-8 nowhere.
        assert_eq!(origin(b"/a?b?c"), Some(2));
        for bad in [
            &b"/a<b"[..],
            b"/a#f",
            b"/a?b#",
            b"/\xc3\xa9",
            b"/a?\x7f",
            b"/a?b<",
        ] {
            assert_eq!(origin(bad), None, "{bad:?}");
        }
        // Long targets cross the 16-byte steps in both classes.
        let long = [&b"/"[..], &[b'p'; 40], b"?", &[b'q'; 40]].concat();
        assert_eq!(origin(&long), Some(41));
        for at in 1..long.len() {
            let mut bad = long.clone();
            bad[at] = b'"';
            // `"` is allowed in a path, not in a query (in place of the `?`, all path).
            let want = match at {
                ..41 => Some(41),
                41 => Some(long.len()),
                _ => None,
            };
            assert_eq!(origin(&bad), want, "at {at}");
            bad[at] = b'#';
            assert_eq!(origin(&bad), None, "at {at}");
        }
    }
}
