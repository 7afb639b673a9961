//! The hello service both hyper peers of `bench/compare.sh` run, one code for both
//! runtimes: `/plaintext` answers the benchmark suite's canonical response (headers
//! `server`, `date`, `content-type`, `content-length`, in that order, and
//! `Hello, World!`), anything else 404.

use std::cell::RefCell;
use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, DATE, SERVER};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;

thread_local! {
    /// The `date` value and the second it is for: formatted once per second per thread,
    /// as a real server does.
    static DATE_CACHE: RefCell<(u64, HeaderValue)> =
        const { RefCell::new((u64::MAX, HeaderValue::from_static(""))) };
}

fn date() -> HeaderValue {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs {
            *c = (
                secs,
                HeaderValue::from_str(&httpdate::fmt_http_date(now)).expect("an HTTP date"),
            );
        }
        c.1.clone()
    })
}

/// The hello service.
pub(crate) async fn hello<B>(req: Request<B>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() != "/plaintext" && req.uri().path() != "/" {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return Ok(r);
    }
    let mut r = Response::new(Full::new(Bytes::from_static(b"Hello, World!")));
    let h = r.headers_mut();
    h.insert(SERVER, HeaderValue::from_static("ringway"));
    h.insert(DATE, date());
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    h.insert(CONTENT_LENGTH, HeaderValue::from_static("13"));
    Ok(r)
}

/// `--bind ADDR` and `--threads N`/`--flavor F` style options: `(name, value)` pairs.
pub(crate) fn args() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(name) = it.next() {
        let Some(value) = it.next() else {
            eprintln!("option {name} needs a value");
            std::process::exit(2);
        };
        out.push((name, value));
    }
    out
}
