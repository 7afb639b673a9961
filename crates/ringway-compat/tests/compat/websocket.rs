//! WebSockets through axum on `Server`, on both backends: `ringway_compat::ws`'s
//! extractor upgrades the connection, its socket task runs on the connection's core,
//! and a tokio-tungstenite client (over the adapter) exchanges text, binary, ping and
//! close frames, with a selected subprotocol; requests that are not upgrades get
//! axum's rejections; a request over HTTP/2 is told that WebSockets need HTTP/1.1
//! here. axum's own extractor is shown to need tokio's runtime.

use std::time::Duration;

use axum::routing::get;
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use ringway::net::TcpStream;
use ringway::{Backend, Runtime};
use ringway_compat::ws::{Message, WebSocket, WebSocketUpgrade};
use ringway_compat::{CompatStream, ServeOptions, Server, TowerService};
use tokio_tungstenite::tungstenite::{self, client::IntoClientRequest};

per_backend!(
    websocket_echo_through_axum,
    non_upgrade_requests_are_rejected,
    a_websocket_route_over_http2_says_it_needs_http1
);

async fn echo(mut socket: WebSocket) {
    let core = ringway::runtime::current_core();
    while let Some(Ok(msg)) = socket.recv().await {
        let reply = match msg {
            Message::Text(t) if t.as_str() == "core?" => Message::text(core.to_string()),
            Message::Close(_) => break,
            other => other,
        };
        if socket.send(reply).await.is_err() {
            break;
        }
    }
}

fn router() -> Router {
    Router::new().route(
        "/ws",
        get(|ws: WebSocketUpgrade| async move { ws.protocols(["chat", "echo"]).on_upgrade(echo) }),
    )
}

fn start(backend: Backend) -> (Runtime, Server) {
    let rt = Runtime::builder()
        .worker_threads(2)
        .backend(backend)
        .build()
        .unwrap();
    let server = Server::http1(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
        TowerService(router())
    })
    .unwrap();
    (rt, server)
}

fn websocket_echo_through_axum(backend: Backend) {
    let (rt, server) = start(backend);
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    let report = rt.block_on(async move {
        for round in 0..4 {
            let tcp = TcpStream::connect(addr).await.unwrap();
            let mut req = format!("ws://{addr}/ws").into_client_request().unwrap();
            req.headers_mut()
                .insert("sec-websocket-protocol", "echo, x".parse().unwrap());
            let (mut ws, resp) = tokio_tungstenite::client_async(req, CompatStream::new(tcp))
                .await
                .expect("handshake");
            assert_eq!(resp.status(), 101);
            assert_eq!(
                resp.headers().get("sec-websocket-protocol").unwrap(),
                "echo",
                "the first of the server's protocols that the client asked for"
            );
            for i in 0..50u32 {
                let text = format!("hello {round} {i}");
                ws.send(tungstenite::Message::text(text.clone()))
                    .await
                    .unwrap();
                assert_eq!(
                    ws.next().await.unwrap().unwrap(),
                    tungstenite::Message::text(text)
                );
            }
            let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
            ws.send(tungstenite::Message::binary(big.clone()))
                .await
                .unwrap();
            match ws.next().await.unwrap().unwrap() {
                tungstenite::Message::Binary(b) => assert!(b == big, "binary echo differs"),
                other => panic!("expected binary, got {other:?}"),
            }
            // A ping is answered by a pong (tungstenite answers it; the echo then sends the
            // ping back too, which ours answers in turn).
            ws.send(tungstenite::Message::Ping("p".into()))
                .await
                .unwrap();
            let mut pinged_back = false;
            loop {
                match ws.next().await.unwrap().unwrap() {
                    tungstenite::Message::Pong(p) => {
                        assert_eq!(&p[..], b"p");
                        break;
                    }
                    // The echo of our ping may come first.
                    tungstenite::Message::Ping(p) if !pinged_back => {
                        assert_eq!(&p[..], b"p");
                        pinged_back = true;
                    }
                    other => panic!("expected pong, got {other:?}"),
                }
            }
            ws.send(tungstenite::Message::text("core?")).await.unwrap();
            let core = loop {
                match ws.next().await.unwrap().unwrap() {
                    tungstenite::Message::Text(t) => break t.to_string(),
                    tungstenite::Message::Ping(_) | tungstenite::Message::Pong(_) => continue,
                    other => panic!("expected text, got {other:?}"),
                }
            };
            assert!(core == "0" || core == "1", "{core}");
            ws.close(None).await.unwrap();
            // The server closes in turn: the stream ends.
            while let Some(m) = ws.next().await {
                if m.is_err() {
                    break;
                }
            }
        }
        ringway::time::sleep(Duration::from_millis(20)).await;
        stop.shutdown();
        server.wait().await.unwrap()
    });
    assert_eq!(report.connections, 4);
    assert_eq!(report.aborted, 0);
}

fn non_upgrade_requests_are_rejected(backend: Backend) {
    let (rt, server) = start(backend);
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    rt.block_on(async move {
        let mut c = crate::common::client(addr).await;
        let r = crate::common::fetch(&mut c, crate::common::get("/ws")).await;
        assert_eq!(r.status(), 400);
        assert_eq!(r.body(), "Connection header did not include 'upgrade'");
        let req = http::Request::get("/ws")
            .header("host", "x")
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let r = crate::common::fetch(&mut c, req).await;
        assert_eq!(r.status(), 400);
        assert_eq!(r.body(), "`Sec-WebSocket-Key` header missing");
        let req = http::Request::post("/ws")
            .header("host", "x")
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let r = crate::common::fetch(&mut c, req).await;
        assert_eq!(r.status(), 405, "axum's router: no POST route");
        drop(c);
        ringway::time::sleep(Duration::from_millis(20)).await;
        stop.shutdown();
        server.wait().await.unwrap();
    });
}

/// RFC 8441 (WebSockets over HTTP/2's extended CONNECT) is not supported: a GET to a
/// WebSocket route over HTTP/2 (which cannot upgrade) is answered `400` with a body that
/// says h2 WebSockets need an extended CONNECT and to use HTTP/1.1 (not `405 Request
/// method must be GET`: it was a GET), never cached; the same port still upgrades an
/// HTTP/1.1 request.
fn a_websocket_route_over_http2_says_it_needs_http1(backend: Backend) {
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(backend)
        .build()
        .unwrap();
    let server = Server::auto(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
        TowerService(router())
    })
    .unwrap();
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    let report = rt.block_on(async move {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (mut h2, conn) = hyper::client::conn::http2::handshake(
            ringway_compat::LocalExecutor,
            CompatStream::new(tcp),
        )
        .await
        .expect("h2 handshake");
        ringway::spawn(async move {
            let _ = conn.await;
        })
        .detach();
        let req = http::Request::get(format!("http://{addr}/ws"))
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let r = h2.send_request(req).await.unwrap();
        assert_eq!(r.version(), http::Version::HTTP_2);
        assert_eq!(r.status(), 400);
        assert_eq!(r.headers()["cache-control"], "no-store");
        let body = http_body_util::BodyExt::collect(r.into_body())
            .await
            .unwrap()
            .to_bytes();
        let body = String::from_utf8_lossy(&body);
        assert!(
            body.contains("WebSockets need HTTP/1.1 here")
                && body.contains("extended CONNECT (RFC 8441)"),
            "{body}"
        );
        drop(h2);
        // HTTP/1.1 on the same port upgrades.
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (mut ws, resp) =
            tokio_tungstenite::client_async(format!("ws://{addr}/ws"), CompatStream::new(tcp))
                .await
                .expect("handshake");
        assert_eq!(resp.status(), 101);
        ws.send(tungstenite::Message::text("over h1"))
            .await
            .unwrap();
        assert_eq!(
            ws.next().await.unwrap().unwrap(),
            tungstenite::Message::text("over h1")
        );
        ws.close(None).await.unwrap();
        while let Some(Ok(_)) = ws.next().await {}
        stop.shutdown();
        server.wait().await.unwrap()
    });
    assert_eq!(report.connections, 2, "{report:?}");
    assert_eq!(report.failed, 0, "{report:?}");
}

/// axum's own `WebSocketUpgrade::on_upgrade` starts its task with `tokio::spawn`: on a
/// ringway core (no tokio runtime) that panics, which is why `ringway_compat::ws`
/// exists. The service catches the panic and answers with its message. If this ever
/// stops panicking, the README's limits need a look.
#[test]
fn axums_own_extractor_needs_tokios_runtime() {
    use axum::extract::FromRequestParts;
    use std::io::{Read, Write};
    let rt = Runtime::builder().worker_threads(1).build().unwrap();
    let service =
        hyper::service::service_fn(|req: http::Request<hyper::body::Incoming>| async move {
            let (mut parts, _) = req.into_parts();
            let upgrade = axum::extract::ws::WebSocketUpgrade::from_request_parts(&mut parts, &())
                .await
                .expect("a valid upgrade request");
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                upgrade.on_upgrade(|_| async {})
            }));
            let text = match caught {
                Ok(_) => "no panic".to_string(),
                Err(e) => e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            };
            Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(
                bytes::Bytes::from(text),
            )))
        });
    let server = Server::http1(
        &rt.handle(),
        "127.0.0.1:0",
        ServeOptions::default(),
        move || service,
    )
    .unwrap();
    let (addr, stop) = (server.local_addr(), server.shutdown_handle());
    let client = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(
            b"GET /ws HTTP/1.1\r\nhost: a\r\nconnection: upgrade\r\nupgrade: websocket\r\n\
              sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        )
        .unwrap();
        let mut got = vec![0u8; 4096];
        let n = s.read(&mut got).unwrap();
        stop.shutdown();
        String::from_utf8_lossy(&got[..n]).to_string()
    });
    rt.block_on(server.wait()).unwrap();
    let response = client.join().unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(
        response.contains("must be called from the context of a Tokio 1.x runtime"),
        "{response}"
    );
}
