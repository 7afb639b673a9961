//! How `Server` runs HTTP/2 streams, on both backends: a stream whose handler answers
//! at once runs in its connection's task (no task of its own: counted with the core's
//! task count), one that waits becomes a task and still answers, and one whose handler
//! panics is reset while the connection and its other streams go on.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use ringway::net::TcpStream;
use ringway::{Backend, Runtime};
use ringway_compat::{CompatStream, LocalExecutor, ServeOptions, Server, TowerService};

per_backend!(streams_run_in_their_connection_task_unless_they_wait);

/// Pending once (waking itself), then ready: a handler that does not answer at once.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn router() -> Router {
    Router::new()
        // The tasks alive on the server's core while the handler runs.
        .route(
            "/now",
            get(|| async { ringway::runtime::task_count().to_string() }),
        )
        .route(
            "/later",
            get(|| async {
                YieldOnce(false).await;
                ringway::runtime::task_count().to_string()
            }),
        )
        .route(
            "/sleep",
            get(|| async {
                ringway::time::sleep(Duration::from_millis(20)).await;
                "slept"
            }),
        )
        .route(
            "/panic",
            get(|| async {
                if true {
                    panic!("this handler panics (on purpose)");
                }
                "unreachable"
            }),
        )
}

async fn get_text(send: &mut SendRequest<Full<Bytes>>, path: &str) -> Result<String, String> {
    let req = Request::get(format!("http://test{path}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let r = send.send_request(req).await.map_err(|e| e.to_string())?;
    let body = r.into_body().collect().await.map_err(|e| e.to_string())?;
    Ok(String::from_utf8(body.to_bytes().to_vec()).unwrap())
}

fn streams_run_in_their_connection_task_unless_they_wait(backend: Backend) {
    // The server on one core of its own runtime, on a thread of its own.
    let (tx, rx) = std::sync::mpsc::channel();
    let server_thread = std::thread::spawn(move || {
        let rt = Runtime::builder()
            .worker_threads(1)
            .backend(backend)
            .build()
            .unwrap();
        let server = Server::auto(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
            TowerService(router())
        })
        .unwrap();
        tx.send((server.local_addr(), server.shutdown_handle()))
            .unwrap();
        rt.block_on(server.wait()).unwrap()
    });
    let (addr, shutdown) = rx.recv().unwrap();
    let client = Runtime::builder()
        .worker_threads(1)
        .backend(backend)
        .build()
        .unwrap();
    client.block_on(async move {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (mut send, conn) =
            hyper::client::conn::http2::handshake(LocalExecutor, CompatStream::new(tcp))
                .await
                .expect("h2 handshake");
        ringway::spawn(async move {
            let _ = conn.await;
        })
        .detach();
        // One at a time, so that no other stream's task is alive: a handler that
        // answers at once runs with one task fewer than one that waits (which becomes a
        // task of its own).
        for _ in 0..3 {
            let now: usize = get_text(&mut send, "/now").await.unwrap().parse().unwrap();
            let later: usize = get_text(&mut send, "/later")
                .await
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(
                later,
                now + 1,
                "an answering stream runs in its connection's task"
            );
        }
        // Waiting streams, concurrent, on the same connection: all answer.
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let mut send = send.clone();
                ringway::spawn(async move { get_text(&mut send, "/sleep").await })
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap(), "slept");
        }
        // A panicking handler: its stream is reset, the connection goes on.
        let err = get_text(&mut send, "/panic").await.unwrap_err();
        assert!(!err.is_empty());
        assert_eq!(
            get_text(&mut send, "/sleep").await.unwrap(),
            "slept",
            "the connection serves on after a stream's panic"
        );
    });
    shutdown.shutdown();
    let report = server_thread.join().unwrap();
    assert_eq!(report.connections, 1);
}
