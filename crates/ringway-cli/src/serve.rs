//! `ringway serve`: the HTTP/1.1 server of ringway-http on every core, with canned
//! handlers for benchmarks (`--hello`, `--json`), differential testing
//! (`--echo-request`) and static files (`--static DIR`), optionally over TLS.
//!
//! `--hello` and `--json` are written with ringway-http's public API like any user's
//! handler: the request-view API by default, the `http`-types API with `--http-types`
//! (the same answers, the way the README's example is written).

use std::future::Future;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use http::{header, HeaderValue, Request, Response, StatusCode};
use ringway_http::{
    Body, Config, PreparedResponse, RequestView, Responder, Server, ViewBody, ViewHandler, Written,
};

use crate::runtime_args::RuntimeArgs;
use crate::stop_signals::StopSignals;

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
    /// Answer `Hello, World!` (text/plain) at `/` and `/plaintext`.
    #[arg(long, group = "mode")]
    hello: bool,
    /// With --hello (request-view API): also serve `/upload-slow`, which reads its request
    /// body one chunk every MS milliseconds before it answers the byte count (a slow
    /// reader, for the suite's slow uploader, S13 `mix-upload`). Without the flag, the
    /// environment variable RINGWAY_SLOW_UPLOAD_MS sets it (the suite sets it for that
    /// variant alone). Bodies up to 1 GiB are then taken (or --max-body, if larger).
    /// Off by default: plain --hello's handler stays a plain closure.
    #[arg(long, value_name = "MS", requires = "hello")]
    slow_upload_ms: Option<u64>,
    /// Answer `{"message":"Hello, World!"}` (serialised per request).
    #[arg(long, group = "mode")]
    json: bool,
    /// Answer with the parsed request (method, target, version, headers, body) as JSON.
    #[arg(long, group = "mode")]
    echo_request: bool,
    /// Serve the files under this directory.
    #[arg(long = "static", value_name = "DIR", group = "mode")]
    static_dir: Option<PathBuf>,
    /// With --static: milliseconds a file stays open per core before it is checked
    /// again (a change on disk is served after at most this long); 0 opens and reads
    /// the file for every request.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 1_000,
        requires = "static_dir"
    )]
    static_revalidate_ms: u64,
    /// TLS certificate chain (PEM).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Write --hello and --json with the `http`-types handler API (`http::Request` in,
    /// `http::Response` out) instead of the request-view API.
    #[arg(long)]
    http_types: bool,
    /// Do not write the access log.
    #[arg(long)]
    no_access_log: bool,
    /// Header timeout in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// Idle keep-alive timeout in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    idle_timeout_ms: u64,
    /// Drain deadline of the graceful shutdown in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    drain_timeout_ms: u64,
    /// Connections held open at once, on all cores together (nginx's
    /// worker_connections): one accepted beyond it is closed at once and counted
    /// (over_limit in the closing statistics).
    #[arg(long, value_name = "N", default_value_t = Config::default().max_connections)]
    max_connections: usize,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 8 << 20)]
    max_body: u64,
    /// Send static file bodies of at least this many bytes with splice (file -> pipe ->
    /// socket) on plain TCP. Off by default: see crates/ringway-http/README.md.
    #[arg(long, value_name = "BYTES")]
    splice_min: Option<u64>,
    /// Never send file bodies with splice (the default; overrides --splice-min).
    #[arg(long)]
    no_splice: bool,
}

#[derive(Clone, Copy)]
enum Mode {
    Hello,
    Json,
    Echo,
}

pub(crate) fn run(args: ServeArgs) -> io::Result<()> {
    // Listen for SIGINT/SIGTERM before any core starts (the cores inherit the blocked
    // mask), so that one sent as soon as the address is printed is not missed.
    let stop = StopSignals::new()?;
    let rt = args.runtime.build()?;
    let slow_upload = match args.hello && !args.http_types {
        true => slow_upload(args.slow_upload_ms)?,
        false => None,
    };
    let max_body = match slow_upload {
        // The slow uploader's body is larger than any round lets it send.
        Some(_) => args.max_body.max(SLOW_UPLOAD_MAX_BODY),
        None => args.max_body,
    };
    let cfg = Config {
        access_log: !args.no_access_log,
        header_timeout: Duration::from_millis(args.header_timeout_ms),
        idle_timeout: Duration::from_millis(args.idle_timeout_ms),
        drain_timeout: Duration::from_millis(args.drain_timeout_ms),
        max_connections: args.max_connections,
        max_body_size: max_body,
        splice_min: if args.no_splice {
            None
        } else {
            args.splice_min
        },
        ..Config::default()
    };
    let mut server = Server::new(cfg);
    let scheme = match (&args.tls_cert, &args.tls_key) {
        (Some(c), Some(k)) => {
            server = server.with_tls(ringway_http::tls::server_config(c, k)?);
            "https"
        }
        _ => "http",
    };
    let running = if let Some(dir) = args.static_dir.clone() {
        let files = ringway_http::files::StaticFiles::new(dir)?
            .revalidate_after(Duration::from_millis(args.static_revalidate_ms));
        // The view face: answers written straight into the connection's output.
        server.start_view(&rt, args.bind, move || files.clone())?
    } else {
        let mode = if args.json {
            Mode::Json
        } else if args.echo_request {
            Mode::Echo
        } else {
            Mode::Hello
        };
        match mode {
            Mode::Hello if !args.http_types => match slow_upload {
                Some(pause) => {
                    server.start_view(&rt, args.bind, move || hello_slow_upload(pause))?
                }
                None => server.start_view(&rt, args.bind, hello)?,
            },
            Mode::Json if !args.http_types => server.start_view(&rt, args.bind, || json)?,
            // Each mode its own handler, as a user would write it (one future type
            // for all would be as large as the largest mode's state).
            Mode::Hello => server.start(&rt, args.bind, || {
                |req: Request<Body>| async move { hello_http(&req) }
            })?,
            _ => server.start(&rt, args.bind, move || {
                move |req: Request<Body>| answer(mode, req)
            })?,
        }
    };
    println!(
        "ringway serve listening on {scheme}://{} ({} cores, backend {})",
        running.local_addr(),
        rt.cores(),
        rt.backend()
    );
    io::stdout().flush()?;
    let handle = running.shutdown_handle();
    // A task of core 0 (the thread that made the signal streams), run by `wait` below.
    rt.block_on(async move {
        ringway::spawn(async move {
            let sig = stop.next().await;
            // Not eprintln!: a closed stderr must not keep the server from stopping.
            let _ = writeln!(
                io::stderr(),
                "ringway serve: signal {}, shutting down (draining)",
                sig.as_raw()
            );
            handle.shutdown();
        })
        .detach();
    });
    let stats = running.wait(&rt);
    let _ = writeln!(io::stderr(), "ringway serve: stopped: {stats}");
    if let Some(pool) = crate::pool_report::PoolReport::collect(&rt) {
        let _ = writeln!(io::stderr(), "ringway serve: receive pool: {pool}");
    }
    Ok(())
}

static TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain");
static APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// `--hello` with the request-view API: a handler per core, its answers rendered once
/// (`PreparedResponse`) and written per request with the cached `Date`.
fn hello() -> impl Fn(RequestView<'_>, Responder<'_>) -> Written {
    let hello = PreparedResponse::new(
        StatusCode::OK,
        &[(header::CONTENT_TYPE, TEXT_PLAIN.clone())],
        b"Hello, World!",
    );
    let not_found = PreparedResponse::new(StatusCode::NOT_FOUND, &[], b"Not Found\n");
    move |req: RequestView<'_>, res: Responder<'_>| match req.path() {
        "/" | "/plaintext" => res.prepared(&hello),
        _ => res.prepared(&not_found),
    }
}

/// The largest body with `--slow-upload-ms` (unless `--max-body` is larger).
const SLOW_UPLOAD_MAX_BODY: u64 = 1 << 30;

/// The pause of `--slow-upload-ms`, or of `RINGWAY_SLOW_UPLOAD_MS` without the flag;
/// `None`: no `/upload-slow`.
fn slow_upload(flag: Option<u64>) -> io::Result<Option<Duration>> {
    let ms = match (flag, std::env::var("RINGWAY_SLOW_UPLOAD_MS")) {
        (Some(ms), _) => ms,
        (None, Ok(v)) => v.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("RINGWAY_SLOW_UPLOAD_MS={v:?}: expected a number of milliseconds"),
            )
        })?,
        (None, Err(_)) => return Ok(None),
    };
    Ok(Some(Duration::from_millis(ms)))
}

/// `--hello` with `--slow-upload-ms`: [`hello`]'s answers, and `/upload-slow`, a
/// handler that reads its body slowly ([`read_slowly`]).
fn hello_slow_upload(pause: Duration) -> Hello {
    Hello {
        hello: PreparedResponse::new(
            StatusCode::OK,
            &[(header::CONTENT_TYPE, TEXT_PLAIN.clone())],
            b"Hello, World!",
        ),
        not_found: PreparedResponse::new(StatusCode::NOT_FOUND, &[], b"Not Found\n"),
        pause,
    }
}

/// See [`hello_slow_upload`].
struct Hello {
    hello: PreparedResponse,
    not_found: PreparedResponse,
    pause: Duration,
}

impl ViewHandler for Hello {
    fn call<'a>(
        &'a self,
        req: RequestView<'a>,
        res: Responder<'a>,
    ) -> impl Future<Output = Written> + 'a {
        match req.path() {
            "/" | "/plaintext" => HelloAnswer::Now(Some(res.prepared(&self.hello))),
            "/upload-slow" => HelloAnswer::Slowly(Box::pin(read_slowly(req, res, self.pause))),
            _ => HelloAnswer::Now(Some(res.prepared(&self.not_found))),
        }
    }
}

/// [`Hello`]'s answer: written at once, or (the slow reader) in a heap block of its
/// own, so that the answers written at once carry no state of the slow one.
enum HelloAnswer<'a> {
    Now(Option<Written>),
    Slowly(Pin<Box<dyn Future<Output = Written> + 'a>>),
}

impl Future for HelloAnswer<'_> {
    type Output = Written;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Written> {
        match self.get_mut() {
            HelloAnswer::Now(w) => Poll::Ready(w.take().expect("polled after it answered")),
            HelloAnswer::Slowly(f) => f.as_mut().poll(cx),
        }
    }
}

/// The slow reader: takes the request body one chunk (what one receive brought, at most
/// a pool buffer) every `pause`, then answers the byte count. Its connection stops
/// receiving while it lags (ringway-http's body high-water mark, then the driver's
/// share of the pool), so the uploader's bytes wait in TCP's window.
async fn read_slowly<'a>(req: RequestView<'a>, res: Responder<'a>, pause: Duration) -> Written {
    let read = match req.into_body() {
        ViewBody::Whole(b) => b.len() as u64,
        ViewBody::Streamed(mut body) => {
            let mut read = 0u64;
            loop {
                match body.chunk().await {
                    Some(Ok(chunk)) => read += chunk.len() as u64,
                    Some(Err(_)) => return res.status(StatusCode::BAD_REQUEST).empty(),
                    None => break read,
                }
                ringway::time::sleep(pause).await;
            }
        }
    };
    res.ok()
        .header(&header::CONTENT_TYPE, &TEXT_PLAIN)
        .bytes(format!("{read}\n").as_bytes())
}

/// `--json` with the request-view API (the object serialised per request).
fn json(_req: RequestView<'_>, res: Responder<'_>) -> Written {
    let v = serde_json::json!({ "message": "Hello, World!" });
    res.ok()
        .header(&header::CONTENT_TYPE, &APPLICATION_JSON)
        .bytes(&serde_json::to_vec(&v).unwrap_or_default())
}

/// `--hello` with the `http`-types API.
fn hello_http(req: &Request<Body>) -> Response<Body> {
    match req.uri().path() {
        "/" | "/plaintext" => {
            let mut r = Response::new(Body::from("Hello, World!"));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, TEXT_PLAIN.clone());
            r
        }
        _ => not_found(),
    }
}

/// The other modes with the `http`-types API.
async fn answer(mode: Mode, req: Request<Body>) -> Response<Body> {
    match mode {
        Mode::Hello => hello_http(&req),
        Mode::Json => {
            let v = serde_json::json!({ "message": "Hello, World!" });
            let mut r = Response::new(Body::from(serde_json::to_vec(&v).unwrap_or_default()));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, APPLICATION_JSON.clone());
            r
        }
        Mode::Echo => {
            let (parts, body) = req.into_parts();
            let body = body.bytes().await.unwrap_or_else(|_| Bytes::new());
            let headers: Vec<(String, String)> = parts
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            let v = serde_json::json!({
                "method": parts.method.as_str(),
                "target": parts.uri.to_string(),
                "version": format!("{:?}", parts.version),
                "headers": headers,
                "body": String::from_utf8_lossy(&body),
                "body_len": body.len(),
            });
            Response::builder()
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(serde_json::to_vec(&v).unwrap_or_default()))
                .unwrap_or_default()
        }
    }
}

fn not_found() -> Response<Body> {
    let mut r = Response::new(Body::from("Not Found\n"));
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}
