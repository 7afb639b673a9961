//! The load client of `bench/compare_tls_ws.sh`, on ringway (one core) through
//! ringway-compat: closed-loop HTTP/2 over TLS (hyper's h2 client over tokio-rustls),
//! or WebSocket echo (tokio-tungstenite). Prints `N requests in S s` and
//! `Requests/sec: R` (the lines the bench scripts read), and `errors: E`.
//!
//! ```sh
//! compat_load --mode h2 --addr 127.0.0.1:3443 --ca /tmp/cert.pem --connections 4 --streams 32 --seconds 5
//! compat_load --mode ws --addr 127.0.0.1:3001 --connections 50 --size 64 --seconds 5
//! ```
//!
//! `--start-after FILE`: once every connection is up (handshakes done), print
//! `connected` and wait until FILE exists before the measured time starts, so that a
//! script can start its own measurement (a CPU reading, `callgrind_control -z`) between
//! the two and count no handshake.
//!
//! h2: `--connections` TLS connections (ALPN h2), each with `--streams` concurrent
//! streams asking `GET /plaintext` in a loop; every response's status and body length
//! are checked. ws: `--connections` WebSockets on `/ws`, each sending `--depth`
//! binary messages of `--size` bytes, then waiting for their echoes (checked byte for
//! byte), in a loop.

#[path = "common/app.rs"]
mod app;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use ringway::net::TcpStream;
use ringway_compat::{CompatStream, LocalExecutor};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio_tungstenite::tungstenite::Message;

struct Options {
    mode: String,
    addr: String,
    ca: Option<String>,
    connections: usize,
    streams: usize,
    depth: usize,
    size: usize,
    seconds: f64,
    start_after: Option<String>,
}

/// What the client tasks share: counts, and whether the measured time is over.
#[derive(Default)]
struct Tally {
    done: Cell<u64>,
    errors: Cell<u64>,
    stop: Cell<bool>,
}

fn main() -> std::io::Result<()> {
    let mut o = Options {
        mode: "h2".into(),
        addr: "127.0.0.1:3443".into(),
        ca: None,
        connections: 4,
        streams: 32,
        depth: 1,
        size: 64,
        seconds: 5.0,
        start_after: None,
    };
    for (name, value) in app::args() {
        let number = || -> usize {
            value.parse().unwrap_or_else(|_| {
                eprintln!("{name} takes a number, not {value:?}");
                std::process::exit(2)
            })
        };
        match name.as_str() {
            "--mode" if value == "h2" || value == "ws" => o.mode = value,
            "--addr" => o.addr = value,
            "--ca" => o.ca = Some(value),
            "--start-after" => o.start_after = Some(value),
            "--connections" => o.connections = number(),
            "--streams" => o.streams = number(),
            "--depth" => o.depth = number(),
            "--size" => o.size = number(),
            "--seconds" => {
                o.seconds = value.parse().unwrap_or_else(|_| {
                    eprintln!("--seconds takes a number, not {value:?}");
                    std::process::exit(2)
                })
            }
            _ => {
                eprintln!(
                    "unknown option {name} {value}: expected --mode h2|ws, --addr, --ca, \
                     --connections, --streams, --depth, --size, --seconds, --start-after"
                );
                std::process::exit(2);
            }
        }
    }
    let rt = ringway::Runtime::builder().worker_threads(1).build()?;
    rt.block_on(async move {
        let tally = Rc::new(Tally::default());
        let connector = if o.mode == "h2" {
            Some(connector(o.ca.as_deref()))
        } else {
            None
        };
        // Every connection up (handshakes done) before anything is counted.
        let mut conns = Vec::new();
        for _ in 0..o.connections {
            let tcp = TcpStream::connect(o.addr.as_str()).await?;
            tcp.set_nodelay(true)?;
            let io = CompatStream::new(tcp);
            conns.push(match &connector {
                Some(connector) => Conn::H2(h2_connect(connector, io).await?),
                None => Conn::Ws(Box::new(ws_connect(io, &o.addr).await?)),
            });
        }
        if let Some(trigger) = &o.start_after {
            println!("connected");
            use std::io::Write;
            std::io::stdout().flush()?;
            while !std::path::Path::new(trigger).exists() {
                ringway::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let start = Instant::now();
        let mut tasks = Vec::new();
        for conn in conns {
            match conn {
                Conn::H2(send) => tasks.extend(h2_streams(send, o.streams, &tally)),
                Conn::Ws(ws) => tasks.push(ws_echoes(*ws, o.size, o.depth, tally.clone())),
            }
        }
        ringway::time::sleep(Duration::from_secs_f64(o.seconds)).await;
        let (done, took) = (tally.done.get(), start.elapsed().as_secs_f64());
        tally.stop.set(true);
        for t in tasks {
            let _ = ringway::time::timeout(Duration::from_secs(5), t).await;
        }
        println!("{done} requests in {took:.2}s");
        println!("Requests/sec: {:.0}", done as f64 / took);
        println!("errors: {}", tally.errors.get());
        Ok(())
    })
}

/// A client configuration that trusts the certificate in `ca` (PEM) and offers h2.
fn connector(ca: Option<&str>) -> tokio_rustls::TlsConnector {
    let ca = ca.unwrap_or_else(|| {
        eprintln!("--mode h2 needs --ca FILE (the server's certificate, from --cert-out)");
        std::process::exit(2)
    });
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("read --ca") {
        roots
            .add(cert.expect("a PEM certificate"))
            .expect("a usable certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS 1.2 and 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// An open connection, before its load starts.
enum Conn {
    H2(hyper::client::conn::http2::SendRequest<Empty<Bytes>>),
    Ws(Box<tokio_tungstenite::WebSocketStream<CompatStream<TcpStream>>>),
}

/// One TLS connection speaking h2 (its connection task spawned).
async fn h2_connect(
    connector: &tokio_rustls::TlsConnector,
    io: CompatStream<TcpStream>,
) -> std::io::Result<hyper::client::conn::http2::SendRequest<Empty<Bytes>>> {
    let tls = connector
        .connect(ServerName::try_from("localhost").expect("a name"), io)
        .await?;
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err(std::io::Error::other("the server did not choose h2"));
    }
    let (send, conn) = hyper::client::conn::http2::handshake(LocalExecutor, TokioIo::new(tls))
        .await
        .map_err(std::io::Error::other)?;
    ringway::spawn(async move {
        let _ = conn.await;
    })
    .detach();
    Ok(send)
}

/// `streams` tasks asking `GET /plaintext` in a loop on one h2 connection.
fn h2_streams(
    send: hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    streams: usize,
    tally: &Rc<Tally>,
) -> Vec<ringway::JoinHandle<()>> {
    let uri: http::Uri = "https://localhost/plaintext".parse().expect("a URI");
    (0..streams)
        .map(|_| {
            let (mut send, tally, uri) = (send.clone(), tally.clone(), uri.clone());
            ringway::spawn(async move {
                while !tally.stop.get() {
                    let req = http::Request::get(uri.clone())
                        .body(Empty::<Bytes>::new())
                        .expect("a request");
                    let ok = match send.send_request(req).await {
                        Ok(r) if r.status() == 200 => match r.into_body().collect().await {
                            Ok(b) => b.to_bytes().len() == 13,
                            Err(_) => false,
                        },
                        _ => false,
                    };
                    if ok {
                        tally.done.set(tally.done.get() + 1);
                    } else {
                        tally.errors.set(tally.errors.get() + 1);
                        break;
                    }
                }
            })
        })
        .collect()
}

/// One WebSocket on `/ws`.
async fn ws_connect(
    io: CompatStream<TcpStream>,
    addr: &str,
) -> std::io::Result<tokio_tungstenite::WebSocketStream<CompatStream<TcpStream>>> {
    let url = format!("ws://{addr}/ws");
    let (ws, _) = tokio_tungstenite::client_async(url, io)
        .await
        .map_err(std::io::Error::other)?;
    Ok(ws)
}

/// Echoes `depth` messages of `size` bytes at a time on one WebSocket, in a loop.
fn ws_echoes(
    mut ws: tokio_tungstenite::WebSocketStream<CompatStream<TcpStream>>,
    size: usize,
    depth: usize,
    tally: Rc<Tally>,
) -> ringway::JoinHandle<()> {
    let payload = Bytes::from(vec![b'x'; size]);
    ringway::spawn(async move {
        'run: while !tally.stop.get() {
            for _ in 0..depth {
                if ws.feed(Message::Binary(payload.clone())).await.is_err() {
                    tally.errors.set(tally.errors.get() + 1);
                    break 'run;
                }
            }
            if ws.flush().await.is_err() {
                tally.errors.set(tally.errors.get() + 1);
                break;
            }
            for _ in 0..depth {
                match ws.next().await {
                    Some(Ok(Message::Binary(b))) if b == payload => {
                        tally.done.set(tally.done.get() + 1)
                    }
                    _ => {
                        tally.errors.set(tally.errors.get() + 1);
                        break 'run;
                    }
                }
            }
        }
        let _ = ws.close(None).await;
    })
}
