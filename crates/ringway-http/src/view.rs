//! [`RequestView`]: a request as a borrowed view of the bytes it arrived in, for
//! [`ViewHandler`](crate::ViewHandler)s. Nothing is copied or allocated to make one;
//! `http` types are built only when asked for ([`RequestView::into_http`]).

use std::borrow::Cow;
use std::fmt;
use std::io;

use bytes::Bytes;
use http::{Method, Request, Version};

use crate::body::Body;
use crate::error::HttpError;
use crate::head::{Fields, RawHead};

/// A request, borrowed from the connection's input for as long as its handler runs.
///
/// Its head passed every check the server makes (see the crate doc): the method is a
/// token, the target a valid request target, the fields well formed.
///
/// ```
/// use ringway_http::{RequestView, Responder, Written};
/// use http::{header::CONTENT_TYPE, HeaderValue, StatusCode};
///
/// fn hello(req: RequestView<'_>, res: Responder<'_>) -> Written {
///     static TEXT: HeaderValue = HeaderValue::from_static("text/plain");
///     match req.path() {
///         "/" | "/plaintext" => res.ok().header(&CONTENT_TYPE, &TEXT).bytes(b"Hello, World!"),
///         _ => res.status(StatusCode::NOT_FOUND).bytes(b"Not Found\n"),
///     }
/// }
/// ```
pub struct RequestView<'a> {
    head: &'a [u8],
    raw: &'a RawHead,
    body: ViewBody<'a>,
}

/// The body of a [`RequestView`].
pub enum ViewBody<'a> {
    /// The whole body was already received: borrowed from the input (empty if the
    /// request has none).
    Whole(&'a [u8]),
    /// The body is still arriving: read it as it comes ([`Body::chunk`]).
    Streamed(Body),
}

impl<'a> RequestView<'a> {
    /// A view of the head `raw`, scanned from `head` (which must start with the very
    /// bytes it was scanned from), with its body.
    pub(crate) fn new(head: &'a [u8], raw: &'a RawHead, body: ViewBody<'a>) -> Self {
        RequestView { head, raw, body }
    }

    /// The method, as sent (a token: `GET`, `POST`, ...).
    pub fn method(&self) -> &'a str {
        // SAFETY: a view is made only over the bytes its head was scanned from.
        unsafe { self.raw.method_unchecked(self.head) }
    }

    /// The method as an `http` type.
    pub fn http_method(&self) -> Method {
        Method::from_bytes(self.method().as_bytes()).unwrap_or(Method::GET)
    }

    /// The request target, as sent (`/a/b?c`, or an absolute URI, `*`, an authority).
    pub fn target(&self) -> &'a str {
        // SAFETY: a view is made only over the bytes its head was scanned from.
        unsafe { self.raw.target_unchecked(self.head) }
    }

    /// The path of the target (`/a/b` for `/a/b?c` or `http://h/a/b?c`; `*` for `*`;
    /// empty for an authority).
    #[inline]
    pub fn path(&self) -> &'a str {
        // SAFETY: a view is made only over the bytes its head was scanned from.
        if let Some(path) = unsafe { self.raw.origin_path_unchecked(self.head) } {
            return path;
        }
        self.other_path()
    }

    /// [`path`](Self::path) of the other target forms.
    #[inline(never)]
    fn other_path(&self) -> &'a str {
        let t = self.target();
        let t = match t.as_bytes().first() {
            Some(b'/') | None => t,
            _ if t == "*" => return t,
            _ => match t.find("://") {
                Some(i) => {
                    let rest = &t[i + 3..];
                    match rest.find(['/', '?']) {
                        Some(j) => &rest[j..],
                        None => "/",
                    }
                }
                None => return "",
            },
        };
        match t.find('?') {
            Some(0) => "/",
            Some(i) => &t[..i],
            None => t,
        }
    }

    /// The query of the target (after `?`), if it has one.
    pub fn query(&self) -> Option<&'a str> {
        let t = self.target();
        t.find('?').map(|i| &t[i + 1..])
    }

    /// HTTP/1.0 or HTTP/1.1.
    pub fn version(&self) -> Version {
        self.raw.version
    }

    /// The value of the first field named `name` (compared without regard to case).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.raw
            .raw_fields(self.head)
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v)
    }

    /// Every field as `(name, value)`, in the order sent.
    pub fn headers(&self) -> Fields<'a> {
        self.raw.fields(self.head)
    }

    /// The exact body length, if known (`Content-Length`, or no body).
    pub fn body_len(&self) -> Option<u64> {
        match &self.body {
            ViewBody::Whole(b) => Some(b.len() as u64),
            ViewBody::Streamed(b) => b.len(),
        }
    }

    /// The body.
    pub fn into_body(self) -> ViewBody<'a> {
        self.body
    }

    /// The whole body: borrowed if it was already received, else read to its end.
    pub async fn body_bytes(self) -> io::Result<Cow<'a, [u8]>> {
        match self.body {
            ViewBody::Whole(b) => Ok(Cow::Borrowed(b)),
            ViewBody::Streamed(b) => Ok(Cow::Owned(b.bytes().await?.to_vec())),
        }
    }

    /// The request as `http` types (one copy of the head, which the target and the
    /// field values share; a field map reused from an earlier response, if the core has
    /// one).
    pub fn into_http(self) -> Result<Request<Body>, HttpError> {
        let mut req = Request::new(Body::empty());
        self.fill_http(&mut req)?;
        Ok(req)
    }

    /// [`into_http`](Self::into_http) into a request made by the caller (a fresh
    /// `Request::new(Body::empty())`): filled where it lies, not moved out once more.
    pub(crate) fn fill_http(self, req: &mut Request<Body>) -> Result<(), HttpError> {
        match self.body {
            ViewBody::Whole([]) => {}
            ViewBody::Whole(b) => *req.body_mut() = Body::full(Bytes::copy_from_slice(b)),
            ViewBody::Streamed(b) => *req.body_mut() = b,
        }
        if let Some(kept) = crate::header_maps::take() {
            let map = req.headers_mut();
            // The map of a fresh request owns no memory (`HeaderMap::new` "will not
            // allocate", says its documentation; `tests/allocations.rs` checks
            // `Request::new`): overwritten, not dropped, as the drop of even an empty
            // map costs some 60 instructions per request. One that has capacity is
            // dropped.
            if map.capacity() == 0 {
                // SAFETY: `map` is valid for writes; the value overwritten owns no
                // memory, so nothing leaks by skipping its drop.
                unsafe { std::ptr::write(map, kept) };
            } else {
                *map = kept;
            }
        }
        self.raw.fill_http(self.head, req)
    }
}

impl fmt::Debug for RequestView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestView")
            .field("method", &self.method())
            .field("target", &self.target())
            .field("version", &self.version())
            .field("fields", &self.raw.field_count())
            .field("body_len", &self.body_len())
            .finish()
    }
}

impl fmt::Debug for ViewBody<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViewBody::Whole(b) => write!(f, "ViewBody::Whole({} bytes)", b.len()),
            ViewBody::Streamed(b) => write!(f, "ViewBody::Streamed({b:?})"),
        }
    }
}
