//! The `http` types built for the last request's target and fields, kept per core: a
//! client sends the same target and mostly the same field lines again and again (`Host`,
//! `User-Agent`, `Accept`, ...), and the `http`-types API then clones a `Uri`, a
//! `HeaderName` and a `HeaderValue` (reference counts) instead of parsing the target
//! again (the `http` crate re-checks every byte of it), looking the name up and copying
//! the value.
//!
//! A hit is an exact byte match of the raw target, or of the raw name and value of the
//! field line at the same position: what a clone stands for is what the client sent.
//! Bounded: the first [`FIELDS`] field lines, items of at most [`LONGEST`] bytes.

use std::cell::RefCell;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::Uri;

/// Field lines kept, by position.
pub(crate) const FIELDS: usize = 16;
/// Longest target, or name and value together, kept.
pub(crate) const LONGEST: usize = 256;

/// One field line and its `http` types.
struct Field {
    /// The raw name, then the raw value.
    line: Box<[u8]>,
    name_len: usize,
    name: HeaderName,
    value: HeaderValue,
}

/// The last target and field lines of this core's requests.
#[derive(Default)]
pub(crate) struct RecentParts {
    target: Box<[u8]>,
    uri: Option<Uri>,
    fields: Vec<Field>,
}

thread_local! {
    static RECENT: RefCell<RecentParts> = RefCell::new(RecentParts::default());
}

/// Runs `f` with this core's cache (a fresh one while the thread is being torn down).
pub(crate) fn with<R>(f: impl FnOnce(&mut RecentParts) -> R) -> R {
    let mut f = Some(f);
    let r = RECENT.try_with(|r| match r.try_borrow_mut() {
        Ok(mut r) => Some((f.take().expect("called once"))(&mut r)),
        Err(_) => None,
    });
    match r {
        Ok(Some(r)) => r,
        _ => (f.take().expect("called once"))(&mut RecentParts::default()),
    }
}

impl RecentParts {
    /// The `Uri` of `target`: a clone of the kept one if it was built from the same
    /// bytes, else `build()` (kept if short).
    #[inline]
    pub(crate) fn uri(
        &mut self,
        target: &[u8],
        build: impl FnOnce(Option<Bytes>) -> Result<Uri, http::uri::InvalidUri>,
    ) -> Result<Uri, http::uri::InvalidUri> {
        if let Some(uri) = &self.uri {
            if *self.target == *target {
                return Ok(uri.clone());
            }
        }
        if target.len() > LONGEST {
            return build(None);
        }
        let uri = build(Some(Bytes::copy_from_slice(target)))?;
        self.target = target.into();
        self.uri = Some(uri.clone());
        Ok(uri)
    }

    /// The name and value of the field line at position `at`: clones of the kept ones
    /// if the line is byte for byte the same, else `build()` (kept if short and among
    /// the first [`FIELDS`]). `build` gets the value's own copy when it will be kept.
    #[inline]
    pub(crate) fn field<E>(
        &mut self,
        at: usize,
        name: &[u8],
        value: &[u8],
        build: impl FnOnce(Option<Bytes>) -> Result<(HeaderName, HeaderValue), E>,
    ) -> Result<(HeaderName, HeaderValue), E> {
        if let Some(f) = self.fields.get(at) {
            if f.name_len == name.len()
                && f.line.len() == name.len() + value.len()
                && f.line[..name.len()] == *name
                && f.line[name.len()..] == *value
            {
                return Ok((f.name.clone(), f.value.clone()));
            }
        }
        if at >= FIELDS || name.len() + value.len() > LONGEST || at > self.fields.len() {
            return build(None);
        }
        let (n, v) = build(Some(Bytes::copy_from_slice(value)))?;
        let mut line = Vec::with_capacity(name.len() + value.len());
        line.extend_from_slice(name);
        line.extend_from_slice(value);
        let kept = Field {
            line: line.into_boxed_slice(),
            name_len: name.len(),
            name: n.clone(),
            value: v.clone(),
        };
        if at == self.fields.len() {
            self.fields.push(kept);
        } else {
            self.fields[at] = kept;
        }
        Ok((n, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(r: &mut RecentParts, t: &str) -> Uri {
        r.uri(t.as_bytes(), |own| {
            Uri::from_maybe_shared(own.unwrap_or_else(|| Bytes::copy_from_slice(t.as_bytes())))
        })
        .unwrap()
    }

    fn field(r: &mut RecentParts, at: usize, n: &str, v: &str) -> (HeaderName, HeaderValue) {
        r.field::<()>(at, n.as_bytes(), v.as_bytes(), |own| {
            let v = own.unwrap_or_else(|| Bytes::copy_from_slice(v.as_bytes()));
            Ok((
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_maybe_shared(v).unwrap(),
            ))
        })
        .unwrap()
    }

    /// A clone only for the very same bytes: a target or a line that differs in one
    /// byte (same length), or a name/value split at another place, is built anew.
    #[test]
    fn hits_only_on_identical_bytes() {
        let mut r = RecentParts::default();
        assert_eq!(uri(&mut r, "/a?x=1"), "/a?x=1");
        assert_eq!(uri(&mut r, "/a?x=1"), "/a?x=1");
        assert_eq!(uri(&mut r, "/a?x=2"), "/a?x=2");
        let long = format!("/{}", "p".repeat(LONGEST + 10));
        assert_eq!(uri(&mut r, &long).path(), long);
        assert_eq!(uri(&mut r, "/a?x=2"), "/a?x=2");

        assert_eq!(field(&mut r, 0, "Host", "a.example").1, "a.example");
        assert_eq!(field(&mut r, 0, "Host", "a.example").0, "host");
        assert_eq!(field(&mut r, 0, "Host", "b.example").1, "b.example");
        let (n, v) = field(&mut r, 0, "Hos", "tb.example");
        assert_eq!((n.as_str(), v.as_bytes()), ("hos", &b"tb.example"[..]));
        let (n, v) = field(&mut r, 1, "X-A", "1");
        assert_eq!((n.as_str(), v.as_bytes()), ("x-a", &b"1"[..]));
        // Beyond the kept positions: built every time, never stale.
        let (n, v) = field(&mut r, FIELDS + 3, "X-B", "2");
        assert_eq!((n.as_str(), v.as_bytes()), ("x-b", &b"2"[..]));
        let (n, v) = field(&mut r, FIELDS + 3, "X-B", "3");
        assert_eq!((n.as_str(), v.as_bytes()), ("x-b", &b"3"[..]));
    }
}
