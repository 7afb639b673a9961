//! Shared by the integration tests: an in-process server on its own thread (bound to
//! 127.0.0.1:0, stopped by its shutdown handle and joined), a strict little response
//! reader for the client side, and the h11 cross-check.
#![allow(dead_code)]

pub(crate) mod hostile_cases;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use ringway::Backend;
use ringway_http::{Body, Config, Server, ShutdownHandle, Stats, StatsSnapshot};

/// A server running the test handler on one core of its own runtime.
pub(crate) struct TestServer {
    pub addr: SocketAddr,
    pub shutdown: ShutdownHandle,
    pub rt: ringway::Handle,
    /// The live counters.
    pub stats: Arc<Stats>,
    thread: Option<std::thread::JoinHandle<StatsSnapshot>>,
}

/// How the in-process server is made.
#[derive(Default)]
pub(crate) struct Setup {
    pub backend: Option<Backend>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Serve these files instead of the test handler.
    pub files: Option<ringway_http::files::StaticFiles>,
    /// Where the access log goes (turns it on).
    pub log: Option<Box<dyn Write + Send>>,
    /// Serve with the request-view twin of the test handler ([`view_test_handler`]).
    pub view: bool,
}

impl TestServer {
    pub(crate) fn start(cfg: Config) -> TestServer {
        Self::start_with(cfg, None, None)
    }

    pub(crate) fn start_with(
        cfg: Config,
        backend: Option<Backend>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> TestServer {
        Self::start_setup(
            cfg,
            Setup {
                backend,
                tls,
                ..Setup::default()
            },
        )
    }

    /// A server of `files`, as configured: through the `http`-types API, or with `view`
    /// as the `ViewHandler` it also is.
    pub(crate) fn start_files(
        files: ringway_http::files::StaticFiles,
        cfg: Config,
        backend: Option<Backend>,
        view: bool,
    ) -> TestServer {
        Self::start_setup(
            cfg,
            Setup {
                backend,
                files: Some(files),
                view,
                ..Setup::default()
            },
        )
    }

    pub(crate) fn start_setup(cfg: Config, setup: Setup) -> TestServer {
        let Setup {
            backend,
            tls,
            files,
            log,
            view,
        } = setup;
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let mut b = ringway::Runtime::builder();
            b.worker_threads(1);
            if let Some(be) = backend {
                b.backend(be);
            }
            let rt = b.build().expect("runtime");
            let mut server = Server::new(cfg);
            if let Some(t) = tls {
                server = server.with_tls(t);
            }
            if let Some(sink) = log {
                server = server.access_log_to(sink);
            }
            let running = match files {
                None if view => server.start_view(&rt, "127.0.0.1:0", || ViewTestHandler),
                None => server.start(&rt, "127.0.0.1:0", || test_handler),
                Some(files) if view => server.start_view(&rt, "127.0.0.1:0", move || files.clone()),
                Some(files) => server.start(&rt, "127.0.0.1:0", move || {
                    let files = files.clone();
                    move |req: Request<Body>| {
                        let files = files.clone();
                        async move { files.serve(&req).await }
                    }
                }),
            }
            .expect("server start");
            tx.send((
                running.local_addr(),
                running.shutdown_handle(),
                rt.handle(),
                running.stats(),
            ))
            .unwrap();
            running.wait(&rt)
        });
        let (addr, shutdown, rt, stats) = rx.recv().expect("server started");
        TestServer {
            addr,
            shutdown,
            rt,
            stats,
            thread: Some(thread),
        }
    }

    /// Runs `f` on the server's core (between its connections' turns) and returns
    /// what it gave.
    pub(crate) fn on_core<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        self.rt
            .spawn_on(0, move || async move {
                let _ = tx.send(f());
            })
            .detach();
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the server's core answered")
    }

    /// Graceful shutdown, then joins the server thread.
    pub(crate) fn stop(mut self) -> StatsSnapshot {
        self.shutdown.shutdown();
        self.thread.take().unwrap().join().expect("server thread")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.shutdown.shutdown();
            let _ = t.join();
        }
    }
}

/// The handler under test: echoes the parsed request as JSON, with a few special paths.
pub(crate) async fn test_handler(req: Request<Body>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let status = |s: u16| {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::from_u16(s).unwrap();
        r
    };
    match path.as_str() {
        "/status/204" => return status(204),
        "/status/304" => return status(304),
        "/stream" => {
            let mut n = 0;
            return Response::new(Body::from_fn(None, move |_| {
                n += 1;
                std::task::Poll::Ready(if n <= 3 {
                    Some(Ok(bytes::Bytes::from(format!("part{n};"))))
                } else {
                    None
                })
            }));
        }
        "/stats" => {
            let v = serde_json::json!({ "submitted": ringway::runtime::driver_stats().submitted });
            return Response::new(Body::from(v.to_string()));
        }
        "/big" => return Response::new(Body::from(vec![b'z'; 32 << 20])),
        "/sleep" => {
            ringway::time::sleep(Duration::from_millis(300)).await;
        }
        p if p.starts_with("/hold/") => {
            Hold::serve(&p["/hold/".len()..]).await;
            return Response::new(Body::from("held"));
        }
        _ => {}
    }
    let (parts, mut body) = req.into_parts();
    if path == "/chunks" {
        // Reads the body piece by piece as it streams in.
        let (mut pieces, mut total) = (0, 0);
        while let Some(c) = body.chunk().await {
            match c {
                Ok(c) => {
                    pieces += 1;
                    total += c.len();
                }
                Err(_) => return status(400),
            }
        }
        let v = serde_json::json!({ "pieces": pieces, "total": total });
        return Response::new(Body::from(v.to_string()));
    }
    if path == "/ignore-body" {
        return Response::new(Body::from("ignored"));
    }
    if path == "/half" {
        // Reads one piece of the body, answers, leaves the rest unread.
        return match body.chunk().await {
            Some(Err(_)) => status(400),
            _ => Response::new(Body::from("half")),
        };
    }
    let Ok(body) = body.bytes().await else {
        return status(400);
    };
    let v = serde_json::json!({
        "method": parts.method.as_str(),
        "target": parts.uri.to_string(),
        "body": String::from_utf8_lossy(&body),
        "body_len": body.len(),
    });
    Response::new(Body::from(v.to_string()))
}

/// A request the test handler holds until released (path `/hold/KEY`): the test
/// learns that its handler started, and decides when it ends. Events, not sleeps.
pub(crate) struct Hold {
    key: String,
    state: Arc<HoldState>,
}

#[derive(Default)]
struct HoldState {
    started: AtomicBool,
    released: AtomicBool,
}

fn holds() -> &'static Mutex<HashMap<String, Arc<HoldState>>> {
    static HOLDS: std::sync::OnceLock<Mutex<HashMap<String, Arc<HoldState>>>> =
        std::sync::OnceLock::new();
    HOLDS.get_or_init(Default::default)
}

impl Hold {
    /// A hold for the requests whose path is [`path`](Self::path).
    pub(crate) fn new(key: &str) -> Hold {
        let state = Arc::new(HoldState::default());
        holds()
            .lock()
            .unwrap()
            .insert(key.to_string(), state.clone());
        Hold {
            key: key.to_string(),
            state,
        }
    }

    pub(crate) fn path(&self) -> String {
        format!("/hold/{}", self.key)
    }

    /// Waits (at most `limit`) until a handler took the request.
    pub(crate) fn wait_started(&self, limit: Duration) {
        assert!(
            wait_for(limit, || self.state.started.load(Ordering::SeqCst)),
            "the held handler did not start within {limit:?}"
        );
    }

    /// Lets the handler answer.
    pub(crate) fn release(&self) {
        self.state.released.store(true, Ordering::SeqCst);
    }

    /// The handler's side: says it started, then waits to be released.
    async fn serve(key: &str) {
        let state = holds().lock().unwrap().get(key).cloned();
        let Some(state) = state else { return };
        state.started.store(true, Ordering::SeqCst);
        while !state.released.load(Ordering::SeqCst) {
            ringway::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.release();
        holds().lock().unwrap().remove(&self.key);
    }
}

/// Polls `cond` until it holds or `limit` passes; whether it held. For waiting on an
/// event the test cannot be told about directly (the limit only bounds a failure).
pub(crate) fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The request-view twin of [`test_handler`]: the same answers (the JSON of the parsed
/// request; `/status/204`, `/status/304`, `/stream`, `/big`, `/chunks`,
/// `/ignore-body`, `/half`), written with `ViewHandler`; and `/plaintext`, a `Hello, World!`
/// that allocates nothing.
pub(crate) struct ViewTestHandler;

impl ringway_http::ViewHandler for ViewTestHandler {
    async fn call<'a>(
        &'a self,
        req: ringway_http::RequestView<'a>,
        res: ringway_http::Responder<'a>,
    ) -> ringway_http::Written {
        let path = req.path();
        match path {
            "/status/204" => return res.status(StatusCode::NO_CONTENT).empty(),
            "/status/304" => return res.status(StatusCode::NOT_MODIFIED).empty(),
            "/big" => return res.ok().bytes(&vec![b'z'; 32 << 20]),
            "/ignore-body" => return res.ok().bytes(b"ignored"),
            // Allocates nothing (the allocation test counts on it).
            "/plaintext" => return res.ok().bytes(b"Hello, World!"),
            "/stream" => {
                let mut n = 0;
                return res.ok().body(Body::from_fn(None, move |_| {
                    n += 1;
                    std::task::Poll::Ready(if n <= 3 {
                        Some(Ok(bytes::Bytes::from(format!("part{n};"))))
                    } else {
                        None
                    })
                }));
            }
            _ => {}
        }
        let method = req.method().to_string();
        let target = req.target().to_string();
        if path == "/half" {
            // Reads one piece of the body, answers, leaves the rest unread.
            if let ringway_http::ViewBody::Streamed(mut body) = req.into_body() {
                if let Some(Err(_)) = body.chunk().await {
                    return res.status(StatusCode::BAD_REQUEST).empty();
                }
            }
            return res.ok().bytes(b"half");
        }
        if path == "/chunks" {
            let (mut pieces, mut total) = (0, 0);
            match req.into_body() {
                ringway_http::ViewBody::Whole(b) => {
                    pieces = 1;
                    total = b.len();
                }
                ringway_http::ViewBody::Streamed(mut body) => {
                    while let Some(c) = body.chunk().await {
                        match c {
                            Ok(c) => {
                                pieces += 1;
                                total += c.len();
                            }
                            Err(_) => return res.status(StatusCode::BAD_REQUEST).empty(),
                        }
                    }
                }
            }
            let v = serde_json::json!({ "pieces": pieces, "total": total });
            return res.ok().bytes(v.to_string().as_bytes());
        }
        let Ok(body) = req.body_bytes().await else {
            return res.status(StatusCode::BAD_REQUEST).empty();
        };
        let v = serde_json::json!({
            "method": method,
            "target": target,
            "body": String::from_utf8_lossy(&body),
            "body_len": body.len(),
        });
        res.ok().bytes(v.to_string().as_bytes())
    }
}

/// A client connection with a read timeout.
pub(crate) fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// One parsed response.
#[derive(Debug, Clone)]
pub(crate) struct Resp {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Parses as many complete responses as `buf` holds (`heads[i]`: the i-th request was
/// HEAD). Returns the responses and the bytes they took.
pub(crate) fn parse_responses(buf: &[u8], heads: &[bool], eof: bool) -> (Vec<Resp>, usize) {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Response::new(&mut fields);
        let n = match r.parse(&buf[pos..]) {
            Ok(httparse::Status::Complete(n)) => n,
            _ => return (out, pos),
        };
        let status = r.code.unwrap();
        let headers: Vec<(String, Vec<u8>)> = r
            .headers
            .iter()
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let mut p = pos + n;
        let final_index = out.iter().filter(|r: &&Resp| r.status >= 200).count();
        let is_head = heads.get(final_index).copied().unwrap_or(false);
        let body;
        if status < 200 || status == 204 || status == 304 || is_head {
            body = Vec::new();
        } else if let Some(cl) = get("content-length") {
            let cl: usize = std::str::from_utf8(&cl).unwrap().parse().unwrap();
            if buf.len() - p < cl {
                return (out, pos);
            }
            body = buf[p..p + cl].to_vec();
            p += cl;
        } else if get("transfer-encoding").is_some() {
            match ringway_http::chunked::decode_all(&buf[p..], 1024, 8192) {
                Ok(Some((b, used))) => {
                    body = b;
                    p += used;
                }
                _ => return (out, pos),
            }
        } else {
            if !eof {
                return (out, pos);
            }
            body = buf[p..].to_vec();
            p = buf.len();
        }
        out.push(Resp {
            status,
            headers,
            body,
        });
        pos = p;
    }
}

/// What reading a connection gave.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub responses: Vec<Resp>,
    pub raw: Vec<u8>,
    pub closed: bool,
}

impl Exchange {
    /// Final statuses (1xx left out).
    pub(crate) fn statuses(&self) -> Vec<u16> {
        self.responses
            .iter()
            .filter(|r| r.status >= 200)
            .map(|r| r.status)
            .collect()
    }
}

/// Reads until `want` final responses have arrived and, if `until_close`, until the
/// server closes (at most `limit` in all).
pub(crate) fn read_exchange(
    s: &mut TcpStream,
    want: usize,
    heads: &[bool],
    until_close: bool,
    limit: Duration,
) -> Exchange {
    let start = Instant::now();
    let mut raw = Vec::new();
    let mut closed = false;
    let mut buf = [0u8; 16384];
    loop {
        let (resps, _) = parse_responses(&raw, heads, closed);
        let finals = resps.iter().filter(|r| r.status >= 200).count();
        if closed || (!until_close && finals >= want) || start.elapsed() > limit {
            return Exchange {
                responses: resps,
                raw,
                closed,
            };
        }
        s.set_read_timeout(Some(
            limit
                .saturating_sub(start.elapsed())
                .max(Duration::from_millis(10)),
        ))
        .unwrap();
        match s.read(&mut buf) {
            Ok(0) => closed = true,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => closed = true,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut => {
            }
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Writes `parts` one by one (a short pause between them so they arrive apart).
pub(crate) fn write_parts(s: &mut TcpStream, parts: &[&[u8]], pause: Duration) {
    for (i, p) in parts.iter().enumerate() {
        if i > 0 && !pause.is_zero() {
            std::thread::sleep(pause);
        }
        if s.write_all(p).is_err() {
            return; // the server may already have answered and closed
        }
    }
}

/// The workspace root.
pub(crate) fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python of the `.venv` holding h11, created if missing (`scripts/test` creates it
/// before the tests run; this covers `cargo test` on its own).
///
/// Serialised: the two backends' conformance tests run in parallel threads, and two
/// `python -m venv` + `pip install` into one directory at once break each other (CI saw
/// one pip fail that way).
pub(crate) fn h11_python() -> PathBuf {
    static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    let root = workspace_root();
    let py = root.join(".venv/bin/python");
    let ok = |py: &PathBuf| {
        std::process::Command::new(py)
            .args(["-c", "import h11"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !ok(&py) {
        let venv = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(root.join(".venv"))
            .status();
        assert!(
            matches!(venv, Ok(s) if s.success()),
            "h11 check needs python3 with venv (apt-get install python3-venv)"
        );
        let pip = std::process::Command::new(root.join(".venv/bin/pip"))
            .args(["install", "-q", "h11"])
            .status();
        assert!(
            matches!(pip, Ok(s) if s.success()),
            "could not install h11 into .venv (pip install h11 needs network access)"
        );
    }
    py
}

/// Runs h11 over every `(methods, raw bytes, closed)` response stream; panics with its
/// complaints if it refuses any.
pub(crate) fn check_with_h11(streams: &[(Vec<String>, Vec<u8>, bool)]) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("ringway-h11-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data: Vec<serde_json::Value> = streams
        .iter()
        .map(|(m, raw, closed)| {
            serde_json::json!({
                "methods": m,
                "raw": raw.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                "closed": closed,
            })
        })
        .collect();
    let input = dir.join("streams.json");
    std::fs::write(&input, serde_json::to_vec(&data).unwrap()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/h11_check.py");
    let out = std::process::Command::new(h11_python())
        .arg(&script)
        .arg(&input)
        .output()
        .expect("run h11 check");
    let _ = std::fs::remove_dir_all(&dir);
    eprint!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "h11 refused responses:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `ringway` binary, built by `cargo build -p ringway-cli` into this target dir.
pub(crate) fn ringway_bin() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = std::process::Command::new(cargo)
        .args(["build", "-q", "-p", "ringway-cli", "--bin", "ringway"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo build");
    assert!(st.success(), "building the ringway binary failed");
    // Tests live in target/<profile>/deps; the binary in target/<profile>.
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("ringway")
}
