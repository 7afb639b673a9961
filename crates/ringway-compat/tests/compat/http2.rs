//! `Server::auto` on both backends: HTTP/2 with prior knowledge (hyper's h2 client over
//! the adapter, concurrent streams on one connection, an axum router behind it) and
//! HTTP/1.1 on the same port; a preface split over two receives is still recognised.

use std::time::Duration;

use axum::extract::Path;
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use ringway::net::TcpStream;
use ringway::{Backend, Runtime};
use ringway_compat::{CompatStream, LocalExecutor, ServeOptions, Server, TowerService};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn router() -> Router {
    Router::new()
        .route(
            "/hello/{name}",
            get(|Path(name): Path<String>| async move { format!("hello {name}") }),
        )
        .route("/echo", post(|body: Bytes| async move { body }))
}

per_backend!(
    auto_serves_http2_and_http1_on_one_port,
    a_split_preface_is_still_http2
);

fn start(backend: Backend) -> (Runtime, Server) {
    let rt = Runtime::builder()
        .worker_threads(2)
        .backend(backend)
        .build()
        .unwrap();
    let server = Server::auto(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
        TowerService(router())
    })
    .unwrap();
    (rt, server)
}

fn auto_serves_http2_and_http1_on_one_port(backend: Backend) {
    let (rt, server) = start(backend);
    let addr = server.local_addr();
    let shutdown = server.shutdown_handle();
    let report = rt.block_on(async move {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (send, conn) =
            hyper::client::conn::http2::handshake(LocalExecutor, CompatStream::new(tcp))
                .await
                .expect("h2 handshake");
        ringway::spawn(async move {
            let _ = conn.await;
        })
        .detach();
        // 20 concurrent streams on the one connection.
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let mut send = send.clone();
                ringway::spawn(async move {
                    let body = vec![i as u8; 10_000 * i];
                    let req = Request::post("http://test/echo")
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
        let mut send = send;
        let req = Request::get("http://test/hello/h2")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let r = send.send_request(req).await.unwrap();
        assert_eq!(
            r.into_body().collect().await.unwrap().to_bytes(),
            "hello h2"
        );
        drop(send);

        // HTTP/1.1 on the same port.
        let mut c = crate::common::client(addr).await;
        let r = crate::common::fetch(&mut c, crate::common::get("/hello/h1")).await;
        assert_eq!(r.version(), http::Version::HTTP_11);
        assert_eq!(r.body(), "hello h1");
        drop(c);
        ringway::time::sleep(Duration::from_millis(20)).await;
        shutdown.shutdown();
        server.wait().await.unwrap()
    });
    assert_eq!(report.connections, 2);
    assert_eq!(report.aborted, 0);
}

fn a_split_preface_is_still_http2(backend: Backend) {
    let (rt, server) = start(backend);
    let addr = server.local_addr();
    let shutdown = server.shutdown_handle();
    rt.block_on(async move {
        let mut s = CompatStream::new(TcpStream::connect(addr).await.unwrap());
        // The preface in two pieces, in two receives.
        s.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
        s.flush().await.unwrap();
        ringway::time::sleep(Duration::from_millis(50)).await;
        // The rest of the preface, then an empty SETTINGS frame (RFC 9113, 6.5).
        s.write_all(b"\r\nSM\r\n\r\n").await.unwrap();
        s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        s.flush().await.unwrap();
        // The server answers with its own SETTINGS frame: type 4 on stream 0.
        let mut head = [0u8; 9];
        s.read_exact(&mut head).await.unwrap();
        assert_eq!(head[3], 4, "the first frame is SETTINGS: {head:?}");
        assert_eq!(&head[5..9], &[0, 0, 0, 0], "on stream 0");
        drop(s);
        shutdown.shutdown();
        server.wait().await.unwrap();
    });
}
