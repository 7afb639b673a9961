//! `Server::tls` on both backends: TLS terminated by the server (rustls), HTTP/2 or
//! HTTP/1.1 chosen by ALPN on one port. Real TLS clients (tokio-rustls over the adapter,
//! hyper's h2 and HTTP/1 clients on top; certificates from rcgen): 20 concurrent h2
//! streams with every byte checked, an HTTP/1.1 client by ALPN and one without ALPN, a
//! WebSocket over TLS, and a client that speaks no TLS (closed, counted as failed); a
//! WebSocket over TLS that outlives the drain deadline is cut.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Path;
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use ringway::net::TcpStream;
use ringway::{Backend, Runtime};
use ringway_compat::{CompatStream, LocalExecutor, ServeOptions, Server, TowerService};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;

per_backend!(
    tls_serves_h2_and_http1_by_alpn,
    a_client_without_tls_is_closed,
    a_websocket_over_tls_is_cut_at_the_drain_deadline
);

/// A self-signed certificate for `localhost` and its key.
struct Pki {
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

fn pki() -> Pki {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    Pki {
        cert: CertificateDer::from(key.cert.der().to_vec()),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.key_pair.serialize_der())),
    }
}

/// The server's configuration: no ALPN named, so the server offers h2 and http/1.1.
fn server_config(pki: &Pki) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![pki.cert.clone()], pki.key.clone_key())
        .unwrap();
    Arc::new(config)
}

/// A client that trusts the certificate and offers `alpn`.
fn client(pki: &Pki, alpn: &[&[u8]]) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.cert.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

async fn ws_echo(mut socket: ringway_compat::ws::WebSocket) {
    while let Some(Ok(msg)) = socket.recv().await {
        if socket.send(msg).await.is_err() {
            break;
        }
    }
}

fn router() -> Router {
    Router::new()
        .route(
            "/hello/{name}",
            get(|Path(name): Path<String>| async move { format!("hello {name}") }),
        )
        .route("/echo", post(|body: Bytes| async move { body }))
        .route(
            "/ws",
            get(|ws: ringway_compat::ws::WebSocketUpgrade| async move { ws.on_upgrade(ws_echo) }),
        )
}

fn start(backend: Backend, config: Arc<rustls::ServerConfig>) -> (Runtime, Server) {
    start_with(backend, config, ServeOptions::default())
}

fn start_with(
    backend: Backend,
    config: Arc<rustls::ServerConfig>,
    options: ServeOptions,
) -> (Runtime, Server) {
    let rt = Runtime::builder()
        .worker_threads(2)
        .backend(backend)
        .build()
        .unwrap();
    let server = Server::tls(&rt.handle(), "127.0.0.1:0", options, config, || {
        TowerService(router())
    })
    .unwrap();
    (rt, server)
}

async fn connect(
    connector: &TlsConnector,
    addr: std::net::SocketAddr,
) -> tokio_rustls::client::TlsStream<CompatStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    connector
        .connect(
            ServerName::try_from("localhost").unwrap(),
            CompatStream::new(tcp),
        )
        .await
        .expect("TLS handshake")
}

fn tls_serves_h2_and_http1_by_alpn(backend: Backend) {
    let pki = pki();
    let h2_client = client(&pki, &[b"h2", b"http/1.1"]);
    let h1_client = client(&pki, &[b"http/1.1"]);
    let bare_client = client(&pki, &[]);
    let (rt, server) = start(backend, server_config(&pki));
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    let report = rt.block_on(async move {
        // HTTP/2 by ALPN: 20 concurrent streams on one connection.
        let tls = connect(&h2_client, addr).await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (send, conn) = hyper::client::conn::http2::handshake(LocalExecutor, TokioIo::new(tls))
            .await
            .expect("h2 handshake");
        ringway::spawn(async move {
            let _ = conn.await;
        })
        .detach();
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let mut send = send.clone();
                ringway::spawn(async move {
                    let body: Vec<u8> = (0..7_000 * i).map(|j| (i + j) as u8).collect();
                    let req = Request::post("https://localhost/echo")
                        .body(Full::new(Bytes::from(body.clone())))
                        .unwrap();
                    let r = send.send_request(req).await.unwrap();
                    assert_eq!(r.version(), http::Version::HTTP_2);
                    let got = r.into_body().collect().await.unwrap().to_bytes();
                    assert!(got == body, "stream {i}: echo differs");
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        drop(send);

        // HTTP/1.1 by ALPN, then with no ALPN at all.
        for (connector, alpn) in [(&h1_client, Some(&b"http/1.1"[..])), (&bare_client, None)] {
            let tls = connect(connector, addr).await;
            assert_eq!(tls.get_ref().1.alpn_protocol(), alpn);
            let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .unwrap();
            ringway::spawn(async move {
                let _ = conn.await;
            })
            .detach();
            let req = Request::get("/hello/h1")
                .header("host", "localhost")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let r = send.send_request(req).await.unwrap();
            assert_eq!(r.version(), http::Version::HTTP_11);
            assert_eq!(
                r.into_body().collect().await.unwrap().to_bytes(),
                "hello h1"
            );
        }

        // A WebSocket over TLS (HTTP/1.1 upgrade).
        let tls = connect(&h1_client, addr).await;
        let (mut ws, resp) = tokio_tungstenite::client_async("wss://localhost/ws", tls)
            .await
            .expect("WebSocket handshake over TLS");
        assert_eq!(resp.status(), 101);
        for i in 0..20 {
            let m = tokio_tungstenite::tungstenite::Message::text(format!("over tls {i}"));
            ws.send(m.clone()).await.unwrap();
            assert_eq!(ws.next().await.unwrap().unwrap(), m);
        }
        ws.close(None).await.unwrap();
        while let Some(Ok(_)) = ws.next().await {}

        ringway::time::sleep(Duration::from_millis(20)).await;
        stop.shutdown();
        server.wait().await.unwrap()
    });
    assert_eq!(report.connections, 4);
    assert_eq!(report.failed, 0);
    assert_eq!(report.aborted, 0);
    assert_eq!(report.upgraded, 1, "{report:?}");
}

/// The upgraded connection under TLS stays in the drain: `wait` waits for it until the
/// deadline, then its socket is shut (the client sees the end) and it is counted.
fn a_websocket_over_tls_is_cut_at_the_drain_deadline(backend: Backend) {
    let pki = pki();
    let h1_client = client(&pki, &[b"http/1.1"]);
    let drain = Duration::from_millis(300);
    let options = ServeOptions {
        drain_timeout: drain,
        ..ServeOptions::default()
    };
    let (rt, server) = start_with(backend, server_config(&pki), options);
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    let report = rt.block_on(async move {
        let tls = connect(&h1_client, addr).await;
        let (mut ws, _) = tokio_tungstenite::client_async("wss://localhost/ws", tls)
            .await
            .expect("WebSocket handshake over TLS");
        let m = tokio_tungstenite::tungstenite::Message::text("before the shutdown");
        ws.send(m.clone()).await.unwrap();
        assert_eq!(ws.next().await.unwrap().unwrap(), m);
        let started = Instant::now();
        stop.shutdown();
        let report = server.wait().await.unwrap();
        let took = started.elapsed();
        assert!(
            took >= drain,
            "wait returned after {took:?}, before the deadline"
        );
        let end = ringway::time::timeout(Duration::from_secs(10), ws.next()).await;
        assert!(matches!(end, Ok(None | Some(Err(_)))), "{end:?}");
        report
    });
    assert_eq!(report.connections, 1, "{report:?}");
    assert_eq!(report.upgraded, 1, "{report:?}");
    assert_eq!(report.aborted, 1, "{report:?}");
    assert_eq!(report.upgraded_aborted, 1, "{report:?}");
}

fn a_client_without_tls_is_closed(backend: Backend) {
    let (rt, server) = start(backend, server_config(&pki()));
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    let report = rt.block_on(async move {
        let mut s = CompatStream::new(TcpStream::connect(addr).await.unwrap());
        s.write_all(b"GET / HTTP/1.1\r\nhost: a\r\n\r\n")
            .await
            .unwrap();
        s.flush().await.unwrap();
        // rustls answers a plaintext request with an alert, then the server closes.
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert!(got.len() < 64, "an alert at most, not a response: {got:?}");
        stop.shutdown();
        server.wait().await.unwrap()
    });
    assert_eq!(report.connections, 1);
    assert_eq!(report.failed, 1, "the failed handshake is counted");
}
