//! The length of an origin-form target's path, and whether every byte of the target is
//! in the origin-form classes (RFC 9112 §3.2.1 within what the `http` crate's `Uri`
//! takes: `head::classes::PATH` and `QUERY`), so that a target the server accepts
//! always becomes a `Uri` and a fragment or a control never gets through.
//!
//! The head scanner checks the common target on its way through the request line
//! (the same classes, the same spans); this is the whole rule, for the targets it
//! leaves for later and for the reference parser.

use crate::head::classes::{span, PATH, QUERY};

/// For an origin-form target (one that starts with `/`): the length of its path
/// (before `?`) if every byte of its `target_len` bytes is in the origin-form classes,
/// `None` if one is not.
///
/// `from_target` starts with the target and may go on past it (the rest of the head):
/// the byte that ends a target is a space, in no class, so the scan stops there, and
/// the bytes after it give the 16-byte steps room on short targets.
pub(crate) fn origin_path_len(from_target: &[u8], target_len: usize) -> Option<usize> {
    let path = span::<PATH>(from_target, 0);
    let mut end = path;
    if path < target_len && from_target[path] == b'?' {
        end = span::<QUERY>(from_target, path + 1);
    }
    (end == target_len).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

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
