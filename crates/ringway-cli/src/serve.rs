//! `ringway serve`: the HTTP/1.1 server of ringway-http on every core, with canned
//! handlers for benchmarks (`--hello`, `--json`), differential testing
//! (`--echo-request`) and static files (`--static DIR`), optionally over TLS.
//!
//! `--hello` and `--json` are written with ringway-http's public API like any user's
//! handler: the request-view API by default, the `http`-types API with `--http-types`
//! (the same answers, the way the README's example is written).

use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use http::{header, HeaderValue, Request, Response, StatusCode};
use ringway_http::{Body, Config, PreparedResponse, RequestView, Responder, Server, Written};

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
    let cfg = Config {
        access_log: !args.no_access_log,
        header_timeout: Duration::from_millis(args.header_timeout_ms),
        idle_timeout: Duration::from_millis(args.idle_timeout_ms),
        drain_timeout: Duration::from_millis(args.drain_timeout_ms),
        max_connections: args.max_connections,
        max_body_size: args.max_body,
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
            Mode::Hello if !args.http_types => server.start_view(&rt, args.bind, hello)?,
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
