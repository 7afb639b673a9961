//! The chat example (`examples/chat/`) run as a process, on each backend
//! (`RINGWAY_BACKEND=uring|epoll`, two cores, 127.0.0.1 port 0), with a bounded load:
//! two WebSocket clients over TLS on connections served by different cores exchange
//! messages (each sees the other's: the cross-core fan-out), through the word-filter
//! worker, which is killed once and must come back; history, posting and a long poll
//! over HTTP/2; a request that times out (`408`); bad input (`400`). Then `SIGTERM`:
//! both WebSocket clients get a close frame (1001), the process exits 0 within its
//! drain time, both workers it ran were reaped by it, and the room was saved. A second
//! run on the same data directory serves the saved history and numbers on from it.
//!
//! A binary of its own: to see whether the server reaps its workers, this process
//! makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so a worker the server
//! left behind (running, or a zombie) would become this process's child once the
//! server exits, and `waitpid` here would find it. That setting is process-wide.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{Request, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::TokioIo;
use ringway::net::TcpStream;
use ringway_compat::{CompatStream, LocalExecutor};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// The server's drain time; the test waits this plus a margin for it to exit.
const DRAIN: Duration = Duration::from_secs(5);
/// The longest any one step of the test may wait.
const STEP: Duration = Duration::from_secs(10);

type Tls = TlsStream<CompatStream<TcpStream>>;
type Ws = WebSocketStream<Tls>;

#[test]
fn chat_service_on_io_uring() {
    chat_service("uring", "io_uring");
}

#[test]
fn chat_service_on_epoll() {
    chat_service("epoll", "epoll");
}

#[test]
fn a_message_in_flight_when_the_worker_dies_is_sent_again_on_io_uring() {
    worker_deaths("uring");
}

#[test]
fn a_message_in_flight_when_the_worker_dies_is_sent_again_on_epoll() {
    worker_deaths("epoll");
}

fn chat_service(backend: &str, banner: &str) {
    become_subreaper();
    let dir = std::env::temp_dir().join(format!(
        "ringway-chat-example-{}-{backend}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("data");

    // The first run: the load, then SIGTERM.
    let mut server = ChatProcess::start(backend, &dir, &data, &[]);
    assert!(
        server.banner.contains(&format!("({banner}, 2 cores)")),
        "{}",
        server.banner
    );
    let client = Client::new(&server.cert, server.addr);
    let rt = client_runtime(backend);
    let (workers, closes, (status, lines)) = rt.block_on(async {
        let (workers, closes) = first_run(&client, server.pid()).await;
        (workers, closes, server.exited(DRAIN + STEP).await)
    });
    assert!(
        status.success(),
        "the server exited with {status}: {lines:#?}"
    );
    for close in &closes {
        assert_eq!(
            close,
            &(CloseCode::Away, "the server is shutting down".to_string())
        );
    }
    let find = |prefix: &str| lines.iter().any(|l| l.starts_with(prefix));
    assert!(find("SIGTERM: shutting down"), "{lines:#?}");
    // Every connection finished by itself within the drain time.
    assert!(
        find("served ")
            && lines
                .iter()
                .any(|l| l.ends_with(", 0 cut at the drain deadline)")),
        "{lines:#?}"
    );
    let sessions: usize = lines
        .iter()
        .find_map(|l| {
            l.strip_prefix("closed ")?
                .strip_suffix(" WebSocket sessions")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no count of closed sessions: {lines:#?}"));
    assert!(sessions >= 2, "{lines:#?}");
    // The killed worker and the one that replaced it, each reaped by the server (and
    // said so), neither left to this process (the subreaper) when the server exited.
    assert!(
        find(&format!("worker pid {} reaped: signal: 9", workers.0)),
        "{lines:#?}"
    );
    assert!(
        find(&format!("worker pid {} reaped: exit status: 0", workers.1)),
        "{lines:#?}"
    );
    for pid in [workers.0, workers.1] {
        assert_not_our_child(pid);
    }
    assert!(find("stopped cleanly"), "{lines:#?}");
    let saved: Vec<Value> =
        serde_json::from_slice(&std::fs::read(data.join("lobby.json")).unwrap()).unwrap();
    let seqs: Vec<u64> = saved.iter().map(|m| m["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);

    // The second run, on the same data directory: the history is back, and numbering
    // goes on from it.
    let mut server = ChatProcess::start(backend, &dir, &data, &[]);
    let client = Client::new(&server.cert, server.addr);
    let (status, lines) = rt.block_on(async {
        let h2 = client.h2().await;
        let (status, body) = h2.get("/rooms/lobby/history").await;
        assert_eq!(status, StatusCode::OK);
        let before: Vec<&str> = saved.iter().map(|m| m["text"].as_str().unwrap()).collect();
        assert_eq!(texts(&body["messages"]), before);
        let (status, body) = h2
            .post(
                "/rooms/lobby/messages",
                r#"{"from":"carol","text":"back again"}"#,
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["seq"], 5);
        drop(h2);
        server.signal(libc::SIGTERM);
        server.exited(DRAIN + STEP).await
    });
    assert!(
        status.success(),
        "the second run exited with {status}: {lines:#?}"
    );
    assert!(lines.iter().any(|l| l == "stopped cleanly"), "{lines:#?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A worker that dies on some messages: `boom` kills the first worker that reads it
/// (a marker file says it happened), `fatal` kills every one. The first is sent again
/// to the next worker and posted; the second, after killing two, is dropped with a
/// clear error; the service goes on, and reaps every worker it ran.
fn worker_deaths(backend: &str) {
    become_subreaper();
    let dir = std::env::temp_dir().join(format!(
        "ringway-chat-worker-{}-{backend}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mark = dir.join("boom-happened");
    let script = format!(
        r#"while IFS= read -r l; do
             case "$l" in
               *boom*) [ -e '{mark}' ] || {{ touch '{mark}'; exit 3; }} ;;
               *fatal*) exit 4 ;;
             esac
             printf '%s\n' "$l"
           done"#,
        mark = mark.display()
    );
    let mut server = ChatProcess::start(
        backend,
        &dir,
        &dir.join("data"),
        &["--worker", &script, "--request-timeout", "5s"],
    );
    let client = Client::new(&server.cert, server.addr);
    let rt = client_runtime(backend);
    let (status, lines) = rt.block_on(async {
        let h2 = client.h2().await;
        let post = |text: &'static str| {
            let h2 = &h2;
            async move {
                let json = match text {
                    "boom" => r#"{"from":"t","text":"boom"}"#,
                    "fatal" => r#"{"from":"t","text":"fatal"}"#,
                    _ => r#"{"from":"t","text":"after"}"#,
                };
                h2.post("/rooms/lobby/messages", json).await
            }
        };
        // Sent again to the next worker, and posted.
        let (status, body) = post("boom").await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(
            (body["seq"].as_u64(), body["text"].as_str()),
            (Some(1), Some("boom"))
        );
        assert!(mark.exists(), "the first worker read it and died");
        // Kills two workers: dropped, with a clear error.
        let (status, body) = post("fatal").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("word filter is not available"),
            "{body}"
        );
        // A fourth worker comes (after its back-off); then posting works again.
        let start = Instant::now();
        let worker = loop {
            let (_, worker) = h2.get("/worker").await;
            if worker["pid"].as_u64() != Some(0) && worker["restarts"] == 3 {
                break worker;
            }
            assert!(start.elapsed() < STEP, "no fourth worker: {worker}");
            ringway::time::sleep(Duration::from_millis(20)).await;
        };
        let (status, body) = post("after").await;
        assert_eq!(status, StatusCode::CREATED, "{body} ({worker})");
        assert_eq!(body["seq"], 2);
        drop(h2);
        server.signal(libc::SIGTERM);
        server.exited(DRAIN + STEP).await
    });
    assert!(status.success(), "{status}: {lines:#?}");
    let reaped: Vec<i32> = lines
        .iter()
        .filter_map(|l| {
            l.strip_prefix("worker pid ")?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(
        reaped.len(),
        4,
        "four workers ran and were reaped: {lines:#?}"
    );
    for pid in reaped {
        assert_not_our_child(pid);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The load of the first run; ends with the server's SIGTERM. The two workers' pids,
/// and the close frame each WebSocket client got.
async fn first_run(client: &Client, server: i32) -> ((i32, i32), Vec<(CloseCode, String)>) {
    // Two WebSocket clients on connections that different cores serve (the kernel
    // spreads connections over the cores' listeners by their ports: try a few).
    let (mut alice, alice_core) = client.join("alice").await;
    let mut bob = None;
    for _ in 0..32 {
        let (ws, core) = client.join("bob").await;
        if core != alice_core {
            bob = Some(ws);
            break;
        }
    }
    let mut bob = bob.expect("no connection landed on the other core in 32 tries");

    // Each sees the other's messages, numbered by the room's owner, filtered by the
    // worker.
    send(&mut alice, "hello darn world").await;
    for ws in [&mut alice, &mut bob] {
        let m = recv(ws).await;
        assert_eq!(
            (m["seq"].as_u64(), m["from"].as_str()),
            (Some(1), Some("alice")),
            "{m}"
        );
        assert_eq!(m["text"], "hello **** world");
    }
    send(&mut bob, "hi alice").await;
    for ws in [&mut alice, &mut bob] {
        let m = recv(ws).await;
        assert_eq!(
            (m["seq"].as_u64(), m["from"].as_str()),
            (Some(2), Some("bob")),
            "{m}"
        );
        assert_eq!(m["text"], "hi alice");
    }
    // Bad input on a WebSocket: an error frame, the session goes on.
    send(&mut alice, "   ").await;
    let m = recv(&mut alice).await;
    assert!(
        m["error"].as_str().unwrap().contains("1 to 1000 bytes"),
        "{m}"
    );

    // The worker dies; the next message is still filtered, by the worker that
    // replaced it.
    let h2 = client.h2().await;
    let (status, before) = h2.get("/worker").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(before["restarts"], 0, "{before}");
    let first_worker = before["pid"].as_i64().unwrap() as i32;
    // SAFETY: plain syscall on a pid the server reported; the worker is its child,
    // so the pid cannot have been reused before the server reaps it.
    assert_eq!(unsafe { libc::kill(first_worker, libc::SIGKILL) }, 0);
    send(&mut alice, "drat, it died").await;
    for ws in [&mut alice, &mut bob] {
        let m = recv(ws).await;
        assert_eq!(m["seq"], 3, "{m}");
        assert_eq!(m["text"], "****, it died");
    }
    let (_, after) = h2.get("/worker").await;
    assert_eq!(after["restarts"], 1, "{after}");
    let second_worker = after["pid"].as_i64().unwrap() as i32;
    assert!(
        second_worker != first_worker && second_worker > 0,
        "{after}"
    );

    // REST over HTTP/2: a post reaches the WebSocket clients; history; a long poll
    // answered at once, one that times out; bad input.
    let (status, posted) = h2
        .post(
            "/rooms/lobby/messages",
            r#"{"from":"rest","text":"over h2, heck"}"#,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    assert_eq!(
        (posted["seq"].as_u64(), posted["text"].as_str()),
        (Some(4), Some("over h2, ****"))
    );
    for ws in [&mut alice, &mut bob] {
        assert_eq!(recv(ws).await, posted);
    }
    let (status, history) = h2.get("/rooms/lobby/history").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        texts(&history["messages"]),
        [
            "hello **** world",
            "hi alice",
            "****, it died",
            "over h2, ****"
        ]
    );
    let (_, since) = h2.get("/rooms/lobby/history?since=2").await;
    assert_eq!(
        texts(&since["messages"]),
        ["****, it died", "over h2, ****"]
    );
    let (status, next) = h2.get("/rooms/lobby/next?after=3").await;
    assert_eq!((status, &next), (StatusCode::OK, &posted));
    let (status, _) = h2.get("/rooms/lobby/next?after=4").await;
    assert_eq!(
        status,
        StatusCode::REQUEST_TIMEOUT,
        "the request timeout (300 ms)"
    );
    let (status, bad) = h2.get("/rooms/No%20Such!/history").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        bad["error"].as_str().unwrap().contains("a room's name"),
        "{bad}"
    );
    drop(h2);

    // SIGTERM: each WebSocket client gets a close frame, and the connection ends.
    // SAFETY: plain syscall on the pid of the server this test started (not reaped).
    assert_eq!(unsafe { libc::kill(server, libc::SIGTERM) }, 0);
    let mut closes = Vec::new();
    for ws in [&mut alice, &mut bob] {
        let frame = match next_message(ws).await {
            Some(Message::Close(Some(frame))) => frame,
            other => panic!("expected a close frame, got {other:?}"),
        };
        closes.push((frame.code, frame.reason.to_string()));
        // tungstenite answers the close; the server then ends the connection.
        assert!(next_message(ws).await.is_none());
    }
    ((first_worker, second_worker), closes)
}

/// The chat example as a process, its stdout read line by line on a thread.
struct ChatProcess {
    child: Option<Child>,
    banner: String,
    addr: std::net::SocketAddr,
    cert: PathBuf,
    lines: mpsc::Receiver<String>,
}

impl ChatProcess {
    fn start(backend: &str, dir: &Path, data: &Path, extra: &[&str]) -> ChatProcess {
        let exe = std::env::current_exe().unwrap();
        let examples = exe.parent().unwrap().parent().unwrap().join("examples");
        let cert = dir.join("cert.pem");
        let mut child = Command::new(examples.join("chat"))
            .args([
                "--bind",
                "127.0.0.1:0",
                "--threads",
                "2",
                "--request-timeout",
                "300ms",
            ])
            .args(["--drain", &format!("{}s", DRAIN.as_secs())])
            .arg("--cert-out")
            .arg(&cert)
            .arg("--data")
            .arg(data)
            .args(extra)
            .env("RINGWAY_BACKEND", backend)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "start the chat example: {e} (cargo test -p ringway-compat builds the \
                     examples; a filtered run needs cargo build -p ringway-compat --example chat)"
                )
            });
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut process = ChatProcess {
            child: Some(child),
            banner: String::new(),
            addr: "127.0.0.1:0".parse().unwrap(),
            cert,
            lines,
        };
        let banner = process
            .lines
            .recv_timeout(STEP)
            .unwrap_or_else(|e| panic!("the chat example printed no address: {e}"));
        let addr = banner.rsplit("https://").next().unwrap_or_default();
        process.addr = addr
            .parse()
            .unwrap_or_else(|_| panic!("the chat example printed {banner:?}"));
        process.banner = banner;
        process
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    fn signal(&self, signal: i32) {
        // SAFETY: plain syscall on the pid of our child, not yet reaped.
        assert_eq!(unsafe { libc::kill(self.pid(), signal) }, 0);
    }

    /// Waits at most `limit` for the process to exit (on the client's runtime, which
    /// goes on serving the client's connections meanwhile); its status and what it
    /// printed after the banner.
    async fn exited(&mut self, limit: Duration) -> (std::process::ExitStatus, Vec<String>) {
        let start = Instant::now();
        let child = self.child.as_mut().unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < limit,
                "the server did not exit within {limit:?} of the signal"
            );
            ringway::time::sleep(Duration::from_millis(10)).await;
        };
        self.child = None;
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(STEP) {
            lines.push(line);
        }
        (status, lines)
    }
}

impl Drop for ChatProcess {
    fn drop(&mut self) {
        // A failed test still stops what it started, by its pid.
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// TLS clients that trust the server's certificate.
struct Client {
    addr: std::net::SocketAddr,
    h2: TlsConnector,
    http1: TlsConnector,
}

impl Client {
    fn new(cert: &Path, addr: std::net::SocketAddr) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(cert).expect("the certificate the server wrote"))
            .unwrap();
        let connector = |alpn: &[u8]| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            config.alpn_protocols = vec![alpn.to_vec()];
            TlsConnector::from(Arc::new(config))
        };
        Client {
            addr,
            h2: connector(b"h2"),
            http1: connector(b"http/1.1"),
        }
    }

    async fn connect(&self, connector: &TlsConnector) -> Tls {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        connector
            .connect(name, CompatStream::new(tcp))
            .await
            .expect("TLS handshake")
    }

    /// A WebSocket client in the room `lobby`, and the core serving it (from the
    /// server's welcome).
    async fn join(&self, name: &str) -> (Ws, u64) {
        let tls = self.connect(&self.http1).await;
        let url = format!("wss://localhost/ws/lobby?name={name}");
        let (mut ws, response) = tokio_tungstenite::client_async(url, tls)
            .await
            .expect("WebSocket handshake over TLS");
        assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
        let welcome = recv(&mut ws).await;
        assert_eq!(welcome["welcome"]["name"], name, "{welcome}");
        let core = welcome["welcome"]["core"].as_u64().expect("the core");
        (ws, core)
    }

    /// An HTTP/2 connection (ALPN `h2`).
    async fn h2(&self) -> H2 {
        let tls = self.connect(&self.h2).await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (send, conn) = hyper::client::conn::http2::handshake(LocalExecutor, TokioIo::new(tls))
            .await
            .expect("h2 handshake");
        ringway::spawn(async move {
            let _ = conn.await;
        })
        .detach();
        H2 { send }
    }
}

struct H2 {
    send: SendRequest<Full<Bytes>>,
}

impl H2 {
    async fn request(&self, request: Request<Full<Bytes>>) -> (StatusCode, Value) {
        let mut send = self.send.clone();
        let answer = async move {
            let response = send.send_request(request).await.unwrap();
            assert_eq!(response.version(), Version::HTTP_2);
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
        };
        ringway::time::timeout(STEP, answer)
            .await
            .expect("an answer in time")
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let uri = format!("https://localhost{path}");
        self.request(Request::get(uri).body(Full::default()).unwrap())
            .await
    }

    async fn post(&self, path: &str, json: &'static str) -> (StatusCode, Value) {
        let request = Request::post(format!("https://localhost{path}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(json.as_bytes())))
            .unwrap();
        self.request(request).await
    }
}

async fn send(ws: &mut Ws, text: &str) {
    ws.send(Message::text(text)).await.unwrap();
}

/// The next frame that is not a ping or pong; `None` once the connection has ended.
async fn next_message(ws: &mut Ws) -> Option<Message> {
    ringway::time::timeout(STEP, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(m)) => return Some(m),
                Some(Err(_)) | None => return None,
            }
        }
    })
    .await
    .expect("a frame in time")
}

/// The next text frame, as JSON.
async fn recv(ws: &mut Ws) -> Value {
    match next_message(ws).await {
        Some(Message::Text(t)) => serde_json::from_str(t.as_str()).unwrap(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

fn texts(messages: &Value) -> Vec<&str> {
    messages
        .as_array()
        .expect("an array of messages")
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect()
}

fn client_runtime(backend: &str) -> ringway::Runtime {
    let backend = match backend {
        "uring" => ringway::Backend::Uring,
        _ => ringway::Backend::Epoll,
    };
    ringway::Runtime::builder()
        .worker_threads(1)
        .backend(backend)
        .build()
        .unwrap()
}

fn become_subreaper() {
    // SAFETY: prctl with an integer argument; no memory is passed.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(
        r,
        0,
        "PR_SET_CHILD_SUBREAPER: {}",
        std::io::Error::last_os_error()
    );
}

/// `pid` is not a child of this process: the server reaped it before it exited (had
/// it not, the subreaper setting would have made it ours). Reaps and fails if it is.
fn assert_not_our_child(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid writes one int through a valid pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    if r != -1 {
        // Still running (0) or a zombie (pid, now reaped here): stop it and fail.
        // SAFETY: plain syscalls on our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut status, 0);
        }
        panic!("worker {pid} was left behind by the server (waitpid said {r})");
    }
    assert_eq!(errno, Some(libc::ECHILD), "waitpid({pid})");
}
