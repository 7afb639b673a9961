//! The byte classes of a request head, one bit each in one 256-entry table, and the
//! spans of a class: how many bytes from a position on are in it.
//!
//! The classes that run long in real heads (field values, origin-form paths and
//! queries) are also checked 16 bytes at a time with SSE2, which every x86_64 has (no
//! run-time detection); the others (tokens, the rare target forms) one byte at a time
//! from the table. The vector sets are the table's: the tests compare them for every
//! byte in every lane.

use crate::token::is_tchar;

/// RFC 9110 `tchar`: methods and field names.
pub(crate) const TOKEN: u8 = 1;
/// A byte of a field value, as httparse admits it: HTAB, SP to `~`, obs-text (0x80
/// and up). Everything else (controls, DEL) ends a value: CR or LF properly, anything
/// else as an error.
pub(crate) const VALUE: u8 = 2;
/// A byte httparse lets into a request target: visible ASCII and 0x80 and up. The
/// bytes the server then accepts are the stricter sets below (origin form) or visible
/// ASCII without `#` (the other forms).
pub(crate) const URI: u8 = 4;
/// Allowed in an origin-form path (not `?`, which ends it): the `http` crate's `Uri`
/// set within what RFC 9112 allows on the wire (visible ASCII, no fragment).
pub(crate) const PATH: u8 = 8;
/// Allowed in an origin-form query (after the first `?`); the `http` crate's set.
pub(crate) const QUERY: u8 = 16;

/// Every byte's classes.
pub(crate) static CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut c = 0;
        if is_tchar(b) {
            c |= TOKEN;
        }
        if b == b'\t' || (b >= b' ' && b != 0x7f) {
            c |= VALUE;
        }
        if b > b' ' && b != 0x7f {
            c |= URI;
        }
        if matches!(b, 0x21 | 0x22 | 0x24..=0x3b | 0x3d | 0x40..=0x5f | 0x61..=0x7e) {
            c |= PATH;
        }
        if matches!(b, 0x21 | 0x24..=0x3b | 0x3d | 0x3f..=0x7e) {
            c |= QUERY;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Whether `b` is in class `CLASS`.
#[inline(always)]
pub(crate) fn is<const CLASS: u8>(b: u8) -> bool {
    CLASSES[b as usize] & CLASS != 0
}

/// The end of the run of class `CLASS` that starts at `from`: the index of the first
/// byte at or after `from` that is not in it, or `bytes.len()`. `from` must be at most
/// `bytes.len()`.
#[inline(always)]
pub(crate) fn span<const CLASS: u8>(bytes: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if matches!(CLASS, VALUE | PATH | QUERY) {
        return simd::span::<CLASS>(bytes, from);
    }
    scalar_span::<CLASS>(bytes, from)
}

/// [`span`] a byte at a time.
#[inline(always)]
fn scalar_span<const CLASS: u8>(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(&b) = bytes.get(i) {
        if !is::<CLASS>(b) {
            break;
        }
        i += 1;
    }
    i
}

/// The vector classes (SSE2).
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    use super::{PATH, QUERY, VALUE};

    /// [`super::span`] 16 bytes at a time; the last step reads the buffer's last 16
    /// bytes (overlapping what was looked at already) rather than going byte by byte.
    /// Buffers under 16 bytes go byte by byte. The run that ends within a whole step
    /// (most of them: the server's input holds the rest of the head, or the next
    /// request) is found inline; the last step is [`span_tail`]'s, out of line (inline,
    /// what it needs was hoisted ahead of every loop and kept across the whole head
    /// scan: ~30 instructions a request).
    #[inline(always)]
    pub(super) fn span<const CLASS: u8>(bytes: &[u8], from: usize) -> usize {
        let n = bytes.len();
        let mut i = from;
        while i + 16 <= n {
            // SAFETY: 16 bytes from `i` are in bounds (checked above).
            let good = unsafe { good_mask::<CLASS>(bytes.as_ptr().add(i)) };
            if good != 0xffff {
                return i + (!good).trailing_zeros() as usize;
            }
            i += 16;
        }
        span_tail::<CLASS>(bytes, i)
    }

    /// [`span`] from `i`, with fewer than 16 bytes left after it.
    #[cold]
    #[inline(never)]
    fn span_tail<const CLASS: u8>(bytes: &[u8], i: usize) -> usize {
        let n = bytes.len();
        if i == n {
            return n;
        }
        if n < 16 {
            return super::scalar_span::<CLASS>(bytes, i);
        }
        // The last `n - i` bytes are lanes `16 - (n - i)..16` of the buffer's last 16.
        // SAFETY: `n >= 16`, so the 16 bytes from `n - 16` are in bounds.
        let good = unsafe { good_mask::<CLASS>(bytes.as_ptr().add(n - 16)) };
        let left = n - i;
        let bad = !(good >> (16 - left)) & ((1u32 << left) - 1);
        if bad == 0 {
            n
        } else {
            i + bad.trailing_zeros() as usize
        }
    }

    /// A mask with bit `k` set if byte `k` of the 16 at `p` is in class `CLASS`.
    ///
    /// # Safety
    ///
    /// `p` must be valid for reads of 16 bytes.
    #[inline(always)]
    pub(super) unsafe fn good_mask<const CLASS: u8>(p: *const u8) -> u32 {
        // SAFETY: the caller guarantees 16 readable bytes; SSE2 is part of x86_64.
        unsafe {
            let v = _mm_loadu_si128(p.cast());
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let bad = if CLASS == VALUE {
                // Controls but HTAB (unsigned `v <= 0x1f`), and DEL.
                let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
                _mm_or_si128(_mm_andnot_si128(eq(b'\t'), control), eq(0x7f))
            } else {
                // Outside visible ASCII 0x21..=0x7e (signed compares: 0x80 and up are
                // negative), and the visible bytes the class leaves out.
                let visible = _mm_and_si128(
                    _mm_cmpgt_epi8(v, _mm_set1_epi8(0x20)),
                    _mm_cmplt_epi8(v, _mm_set1_epi8(0x7f)),
                );
                let common = _mm_or_si128(_mm_or_si128(eq(b'#'), eq(b'<')), eq(b'>'));
                let left_out = if CLASS == PATH {
                    _mm_or_si128(common, _mm_or_si128(eq(b'?'), eq(b'`')))
                } else {
                    debug_assert_eq!(CLASS, QUERY);
                    _mm_or_si128(common, eq(b'"'))
                };
                _mm_or_si128(left_out, _mm_andnot_si128(visible, _mm_set1_epi8(-1)))
            };
            (!_mm_movemask_epi8(bad) as u32) & 0xffff
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The classes as the grammar and httparse's maps state them, byte by byte.
    #[test]
    fn the_table_is_the_grammar() {
        for b in 0..=255u8 {
            assert_eq!(is::<TOKEN>(b), is_tchar(b), "{b:#x}");
            let value = b == b'\t' || (0x20..=0x7e).contains(&b) || b >= 0x80;
            assert_eq!(is::<VALUE>(b), value, "{b:#x}");
            let uri = (0x21..=0x7e).contains(&b) || b >= 0x80;
            assert_eq!(is::<URI>(b), uri, "{b:#x}");
            // Origin form: visible ASCII only, never a fragment or `<`, `>`.
            if is::<PATH>(b) || is::<QUERY>(b) {
                assert!((0x21..=0x7e).contains(&b) && !b"#<>".contains(&b), "{b:#x}");
            }
            assert_eq!(
                is::<PATH>(b),
                is::<QUERY>(b) && b != b'?' && b != b'`' || b == b'"'
            );
        }
    }

    /// Every class a byte at a time and through [`span`] agree, for every byte in every
    /// position of buffers of every length around the vector width.
    #[test]
    fn span_agrees_with_the_table_in_every_lane() {
        for class in [TOKEN, VALUE, URI, PATH, QUERY] {
            for len in [1, 15, 16, 17, 33] {
                for lane in 0..len {
                    for b in 0..=255u8 {
                        let filler = if class == TOKEN { b'a' } else { b'/' };
                        let mut v = vec![filler; len];
                        v[lane] = b;
                        for from in [0, lane, len] {
                            let from = from.min(len);
                            let want = (from..len)
                                .find(|&k| CLASSES[v[k] as usize] & class == 0)
                                .unwrap_or(len);
                            assert_eq!(
                                dispatch(class, &v, from),
                                want,
                                "class {class} len {len} lane {lane} byte {b:#x} from {from}"
                            );
                        }
                    }
                }
            }
        }
    }

    fn dispatch(class: u8, bytes: &[u8], from: usize) -> usize {
        match class {
            TOKEN => span::<TOKEN>(bytes, from),
            VALUE => span::<VALUE>(bytes, from),
            URI => span::<URI>(bytes, from),
            PATH => span::<PATH>(bytes, from),
            _ => span::<QUERY>(bytes, from),
        }
    }

    fn alphabet() -> impl Strategy<Value = u8> {
        prop_oneof![
            8 => prop::sample::select(b"GETPOSHTP/1.0 \r\n:ax".to_vec()),
            2 => prop::sample::select(b"?#<>`\"\t%*\x7f\x80\xa0\x00".to_vec()),
            1 => any::<u8>(),
        ]
    }

    proptest! {
        /// Random buffers and starting points: the vector spans are the table's.
        #[test]
        fn spans_agree_with_the_table(
            bytes in prop::collection::vec(alphabet(), 0..70),
            from in 0usize..70,
        ) {
            let from = from.min(bytes.len());
            for class in [TOKEN, VALUE, URI, PATH, QUERY] {
                let want = (from..bytes.len())
                    .find(|&k| CLASSES[bytes[k] as usize] & class == 0)
                    .unwrap_or(bytes.len());
                prop_assert_eq!(dispatch(class, &bytes, from), want);
            }
        }
    }
}
