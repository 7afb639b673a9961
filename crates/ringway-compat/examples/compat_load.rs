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
                     --connections, --streams, --depth, --size, --seconds"
                );
                std::process::exit(2);
            }
        }
    }
    let rt = ringway::Runtime::builder().worker_threads(1).build()?;
    rt.block_on(async move {
        let tally = Rc::new(Tally::default());
        let mut tasks = Vec::new();
        let connector = if o.mode == "h2" {
            Some(connector(o.ca.as_deref()))
        } else {
            None
        };
        for _ in 0..o.connections {
            let tcp = TcpStream::connect(o.addr.as_str()).await?;
            tcp.set_nodelay(true)?;
            let io = CompatStream::new(tcp);
            match &connector {
                Some(connector) => tasks.extend(h2_connection(connector, io, &o, &tally).await?),
                None => tasks.push(ws_connection(io, &o, tally.clone()).await?),
            }
        }
        let start = Instant::now();
        tally.done.set(0);
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

/// One TLS connection speaking h2, with its stream tasks.
async fn h2_connection(
    connector: &tokio_rustls::TlsConnector,
    io: CompatStream<TcpStream>,
    o: &Options,
    tally: &Rc<Tally>,
) -> std::io::Result<Vec<ringway::JoinHandle<()>>> {
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
    let uri: http::Uri = "https://localhost/plaintext".parse().expect("a URI");
    Ok((0..o.streams)
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
        .collect())
}

/// One WebSocket, echoing `--depth` messages of `--size` bytes at a time.
async fn ws_connection(
    io: CompatStream<TcpStream>,
    o: &Options,
    tally: Rc<Tally>,
) -> std::io::Result<ringway::JoinHandle<()>> {
    let url = format!("ws://{}/ws", o.addr);
    let (mut ws, _) = tokio_tungstenite::client_async(url, io)
        .await
        .map_err(std::io::Error::other)?;
    let payload = Bytes::from(vec![b'x'; o.size]);
    let depth = o.depth;
    Ok(ringway::spawn(async move {
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
    }))
}
