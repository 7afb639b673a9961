//! HTTP peer: hyper 1 (http1) on tokio's multi-thread runtime, one worker per server
//! core, answering the canned responses through hyper's own framing.
//!
//! hyper's automatic `Date` is off and the handler writes `server`, `date` (formatted
//! once per second per thread), the app's headers and `content-length` in the order
//! ringway writes them, so the bytes on the wire match; `pipeline_flush` is on, as a
//! hyper user serving pipelined clients would set it.

use std::convert::Infallible;

use bytes::Bytes;
use clap::Parser;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use ringway_bench::canned::{coarse_now_secs, imf_date, App, SERVER};
use ringway_bench::peer_kit::{announce, PeerArgs, BACKLOG};

/// tokio multi-thread + hyper 1.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    peer: PeerArgs,
}

thread_local! {
    static DATE: std::cell::RefCell<(u64, HeaderValue)> =
        const { std::cell::RefCell::new((0, HeaderValue::from_static(""))) };
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
struct Canned {
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

fn canned(app: App) -> Canned {
    Canned {
        headers: app
            .headers()
            .into_iter()
            .map(|(n, v)| {
                (
                    HeaderName::from_static(n),
                    HeaderValue::from_str(&v).expect("valid header"),
                )
            })
            .collect(),
        body: Bytes::from(app.body()),
    }
}

fn answer(c: &Canned, path: &str, app: App) -> Response<Full<Bytes>> {
    if path != app.path() && !(app == App::Hello && path == "/") {
        let mut r = Response::new(Full::new(Bytes::from_static(b"Not Found\n")));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    }
    let mut r = Response::new(Full::new(c.body.clone()));
    let h = r.headers_mut();
    h.insert(hyper::header::SERVER, HeaderValue::from_static(SERVER));
    h.insert(hyper::header::DATE, date());
    for (n, v) in &c.headers {
        h.insert(n.clone(), v.clone());
    }
    r
}

fn main() -> std::io::Result<()> {
    let args = Args::parse().peer;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_io()
        .build()?;
    let listener = ringway_bench::listen::bind_listener(args.bind, BACKLOG, false)?;
    let addr = listener.local_addr()?;
    let app = args.app;
    let c = std::sync::Arc::new(canned(app));
    rt.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        announce("http-hyper", addr, args.threads)?;
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.auto_date_header(false).pipeline_flush(true);
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("accept: {e}");
                    continue;
                }
            };
            stream.set_nodelay(true)?;
            let c = c.clone();
            let conn = builder.serve_connection(
                TokioIo::new(stream),
                service_fn(move |req: Request<hyper::body::Incoming>| {
                    let r = answer(&c, req.uri().path(), app);
                    async move { Ok::<_, Infallible>(r) }
                }),
            );
            tokio::spawn(async move {
                let _ = conn.await;
            });
        }
    })
}
