//! [`PreparedResponse`]: a whole response rendered once (its fields and
//! `Content-Length` as bytes, its body), written per request by
//! [`Responder::prepared`](crate::Responder::prepared) as one copy of its head (status
//! line, `Server`, `Date`, the rendered fields; cached per core and per second), the
//! connection's framing and the body.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use http::header::{HeaderName, HeaderValue};
use http::StatusCode;

use crate::wire::{has_no_body, is_servers_field, push_u64};

/// A response that is the same for every request (a fixed page, a health check, a
/// canned error), rendered once: what a [`Responder`](crate::Responder) would write
/// field by field, done ahead of time.
///
/// As with [`ResponseHead::header`](crate::ResponseHead::header), fields the server
/// writes itself (`Content-Length`, `Transfer-Encoding`, `Connection`, `Date`, and
/// `Server` when the server names itself) are not taken from `fields`; 1xx, 204 and 304
/// carry no body.
///
/// ```
/// use http::{header::CONTENT_TYPE, HeaderValue, StatusCode};
/// use ringway_http::{PreparedResponse, RequestView, Responder, Written};
///
/// let hello = PreparedResponse::new(
///     StatusCode::OK,
///     &[(CONTENT_TYPE, HeaderValue::from_static("text/plain"))],
///     b"Hello, World!",
/// );
/// let handler = move |req: RequestView<'_>, res: Responder<'_>| -> Written {
///     match req.path() {
///         "/" => res.prepared(&hello),
///         _ => res.status(StatusCode::NOT_FOUND).empty(),
///     }
/// };
/// # let _ = handler;
/// ```
pub struct PreparedResponse {
    /// Unique per process: what the per-core cache of rendered heads is keyed by.
    pub(crate) id: u64,
    pub(crate) status: StatusCode,
    /// The field lines, then `content-length: N` CR LF where the status has a body.
    pub(crate) fields: Box<[u8]>,
    /// Where `fields` holds `Server` lines (dropped when the server names itself): the
    /// fields without them.
    pub(crate) fields_unnamed: Option<Box<[u8]>>,
    /// Empty where the status has no body.
    pub(crate) body: Box<[u8]>,
}

impl PreparedResponse {
    /// Renders `status`, `fields` (in order) and `body`.
    pub fn new(
        status: StatusCode,
        fields: &[(HeaderName, HeaderValue)],
        body: &[u8],
    ) -> PreparedResponse {
        let with_body = !has_no_body(status.as_u16());
        // Rendered twice: with the handler's `Server` fields, for a server that does not
        // name itself, and without them (only if there are any).
        let render = |keep_server: bool| {
            let mut rendered = Vec::new();
            for (name, value) in fields {
                let name = name.as_str().as_bytes();
                let server = name == b"server";
                if (server && !keep_server) || (!server && is_servers_field(name, b"")) {
                    continue;
                }
                rendered.extend_from_slice(name);
                rendered.extend_from_slice(b": ");
                rendered.extend_from_slice(value.as_bytes());
                rendered.extend_from_slice(b"\r\n");
            }
            if with_body {
                rendered.extend_from_slice(b"content-length: ");
                push_u64(&mut rendered, body.len() as u64);
                rendered.extend_from_slice(b"\r\n");
            }
            rendered.into_boxed_slice()
        };
        let has_server = fields.iter().any(|(n, _)| n == http::header::SERVER);
        static IDS: AtomicU64 = AtomicU64::new(1);
        PreparedResponse {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            status,
            fields: render(true),
            fields_unnamed: has_server.then(|| render(false)),
            body: if with_body {
                body.into()
            } else {
                Box::default()
            },
        }
    }
}

impl fmt::Debug for PreparedResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedResponse")
            .field("status", &self.status)
            .field("head_bytes", &self.fields.len())
            .field("body_len", &self.body.len())
            .finish()
    }
}
