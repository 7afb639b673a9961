//! The hyper service of the hyper peers, one code for both runtimes: `http-hyper` serves
//! it on tokio, `http-hyper-ringway` on ringway through ringway-compat. Same service,
//! same hyper settings, so the two rows differ in the runtime only.
//!
//! hyper's automatic `Date` is off and the handler writes `server`, `date` (formatted
//! once per second per thread), the app's headers and `content-length` in the order
//! ringway writes them, so the bytes on the wire are the canned ones; `pipeline_flush` is
//! on, as a hyper user serving pipelined clients would set it. No timer is set on either
//! runtime (hyper's header-read timeout is off on both).

use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Ready;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper::{Request, Response, StatusCode};

use crate::peers::canned::{coarse_now_secs, imf_date, App, SERVER};

thread_local! {
    static DATE: RefCell<(u64, HeaderValue)> =
        const { RefCell::new((0, HeaderValue::from_static(""))) };
}

fn date() -> HeaderValue {
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        let now = coarse_now_secs();
        if d.0 != now {
            *d = (
                now,
                HeaderValue::from_str(&imf_date(now)).expect("a date is a header value"),
            );
        }
        d.1.clone()
    })
}

/// The parts of a canned response hyper needs, built once.
#[derive(Debug)]
struct Parts {
    app: App,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

/// The hello (or body) service: the canned response at the app's path (and `/` for
/// hello), 404 elsewhere. Cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
pub struct HelloService {
    parts: Arc<Parts>,
}

impl HelloService {
    /// The service answering `app`'s canned response.
    pub fn new(app: App) -> HelloService {
        let headers = app
            .headers()
            .into_iter()
            .map(|(n, v)| {
                (
                    HeaderName::from_static(n),
                    HeaderValue::from_str(&v).expect("valid header"),
                )
            })
            .collect();
        HelloService {
            parts: Arc::new(Parts {
                app,
                headers,
                body: Bytes::from(app.body()),
            }),
        }
    }

    /// The response to a request for `path`.
    pub fn answer(&self, path: &str) -> Response<Full<Bytes>> {
        let p = &*self.parts;
        if path != p.app.path() && !(p.app == App::Hello && path == "/") {
            let mut r = Response::new(Full::new(Bytes::from_static(b"Not Found\n")));
            *r.status_mut() = StatusCode::NOT_FOUND;
            return r;
        }
        let mut r = Response::new(Full::new(p.body.clone()));
        let h = r.headers_mut();
        h.insert(hyper::header::SERVER, HeaderValue::from_static(SERVER));
        h.insert(hyper::header::DATE, date());
        for (n, v) in &p.headers {
            h.insert(n.clone(), v.clone());
        }
        r
    }
}

impl<B> Service<Request<B>> for HelloService {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn call(&self, req: Request<B>) -> Self::Future {
        std::future::ready(Ok(self.answer(req.uri().path())))
    }
}

/// The HTTP/1 settings both hyper peers use.
pub fn http1_builder() -> http1::Builder {
    let mut b = http1::Builder::new();
    b.auto_date_header(false).pipeline_flush(true);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::canned::Canned;
    use http_body_util::BodyExt;

    /// The service's response, framed as hyper frames it, is the canned one; checked
    /// end to end by the suite's conformance check, here its parts.
    #[test]
    fn answers_the_canned_headers_and_body_and_404_elsewhere() {
        let s = HelloService::new(App::Hello);
        let r = s.answer("/plaintext");
        assert_eq!(r.status(), StatusCode::OK);
        let names: Vec<&str> = r.headers().keys().map(|n| n.as_str()).collect();
        assert_eq!(names, ["server", "date", "content-type", "content-length"]);
        let canned = Canned::new(App::Hello);
        let text = std::str::from_utf8(canned.as_bytes()).unwrap();
        assert!(text.contains("content-type: text/plain\r\ncontent-length: 13\r\n"));
        let body = futures_lite::future::block_on(r.into_body().collect())
            .unwrap()
            .to_bytes();
        assert_eq!(&body[..], b"Hello, World!");
        assert_eq!(s.answer("/").status(), StatusCode::OK);
        assert_eq!(s.answer("/nope").status(), StatusCode::NOT_FOUND);
    }
}
