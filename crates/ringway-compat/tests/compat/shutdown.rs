//! Graceful shutdown with upgraded connections, on both backends: the application hears
//! that a shutdown started (`ShutdownHandle::stopping`, awaited in a handler and in
//! WebSocket tasks, the handle made before the server), `Server::wait` waits for the
//! upgraded connections as for any other, and the drain deadline cuts those still open
//! (counted in `ServeReport`).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use futures_util::{SinkExt, Stream, StreamExt};
use ringway::net::TcpStream;
use ringway::{Backend, Runtime};
use ringway_compat::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use ringway_compat::{CompatStream, ServeOptions, Server, ShutdownHandle, TowerService};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

per_backend!(
    stopping_reaches_handlers_and_websocket_tasks_and_wait_waits_for_them,
    the_drain_deadline_cuts_upgraded_connections
);

/// The longest any step may take before the test gives up.
const STEP: Duration = Duration::from_secs(10);

type ClientWs = tokio_tungstenite::WebSocketStream<CompatStream<TcpStream>>;

fn runtime(backend: Backend) -> Runtime {
    Runtime::builder()
        .worker_threads(2)
        .backend(backend)
        .build()
        .unwrap()
}

async fn connect_ws(addr: std::net::SocketAddr) -> ClientWs {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (ws, resp) =
        tokio_tungstenite::client_async(format!("ws://{addr}/ws"), CompatStream::new(tcp))
            .await
            .expect("handshake");
    assert_eq!(resp.status(), 101);
    ws
}

/// Sends a text and expects it back.
async fn echoed(ws: &mut ClientWs, text: &str) {
    ws.send(tungstenite::Message::text(text)).await.unwrap();
    let back = ringway::time::timeout(STEP, ws.next())
        .await
        .expect("an echo");
    assert_eq!(back.unwrap().unwrap(), tungstenite::Message::text(text));
}

/// Echoes until the shutdown starts; then, after a moment's work (what a real session
/// does: save its state), closes with 1001 and counts itself in `ended`.
async fn polite_session(mut socket: WebSocket, stop: ShutdownHandle, ended: Arc<AtomicUsize>) {
    let mut stopping = stop.stopping();
    loop {
        let next = poll_fn(|cx| {
            if Pin::new(&mut stopping).poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            Pin::new(&mut socket).poll_next(cx).map(Some)
        });
        match next.await {
            Some(Some(Ok(Message::Text(t)))) => {
                if socket.send(Message::Text(t)).await.is_err() {
                    return;
                }
            }
            Some(Some(Ok(_))) => {}
            Some(None | Some(Err(_))) => return,
            None => break,
        }
    }
    ringway::time::sleep(Duration::from_millis(150)).await;
    let frame = CloseFrame {
        code: 1001,
        reason: "going away".into(),
    };
    ended.fetch_add(1, Ordering::SeqCst);
    if socket.send(Message::Close(Some(frame))).await.is_ok() {
        // The client's close frame, then the end of the stream.
        let _ = ringway::time::timeout(STEP, async {
            while let Some(Ok(_)) = socket.recv().await {}
        })
        .await;
    }
}

fn stopping_reaches_handlers_and_websocket_tasks_and_wait_waits_for_them(backend: Backend) {
    let rt = runtime(backend);
    // Made before the server, so the router can hold it.
    let stop = ShutdownHandle::new();
    let ended = Arc::new(AtomicUsize::new(0));
    let router = {
        let (stop, ended) = (stop.clone(), ended.clone());
        let stop_for_wait = stop.clone();
        Router::new()
            .route(
                "/ws",
                get(move |ws: WebSocketUpgrade| {
                    let (stop, ended) = (stop.clone(), ended.clone());
                    async move { ws.on_upgrade(move |s| polite_session(s, stop, ended)) }
                }),
            )
            .route(
                // A long poll: answers once the shutdown starts.
                "/wait",
                get(move || {
                    let stop = stop_for_wait.clone();
                    async move {
                        stop.stopping().await;
                        "stopping"
                    }
                }),
            )
    };
    let options = ServeOptions {
        shutdown: stop.clone(),
        drain_timeout: STEP,
        ..ServeOptions::default()
    };
    let server = Server::http1(&rt.handle(), "127.0.0.1:0", options, move || {
        TowerService(router.clone())
    })
    .unwrap();
    let addr = server.local_addr();
    let (report, waited_for) = rt.block_on(async move {
        let mut sessions = Vec::new();
        for i in 0..4 {
            let mut ws = connect_ws(addr).await;
            echoed(&mut ws, &format!("hello {i}")).await;
            sessions.push(ws);
        }
        let long_poll = ringway::spawn(async move {
            let mut c = crate::common::client(addr).await;
            crate::common::fetch(&mut c, crate::common::get("/wait")).await
        });
        ringway::time::sleep(Duration::from_millis(50)).await;
        assert!(!stop.is_shutdown());
        assert!(!server.shutdown_handle().is_shutdown());
        // The handle made before the server stops it.
        stop.shutdown();
        let clients: Vec<_> = sessions
            .into_iter()
            .map(|mut ws| {
                ringway::spawn(async move {
                    let frame = match ringway::time::timeout(STEP, ws.next()).await {
                        Ok(Some(Ok(tungstenite::Message::Close(Some(frame))))) => frame,
                        other => panic!("expected a close frame, got {other:?}"),
                    };
                    // tungstenite answers the close; then the server ends the stream.
                    let end = ringway::time::timeout(STEP, ws.next()).await;
                    assert!(matches!(end, Ok(None)), "{end:?}");
                    (frame.code, frame.reason.to_string())
                })
            })
            .collect();
        let report = server.wait().await.unwrap();
        // `wait` returned only after every session had done its work and closed.
        let waited_for = ended.load(Ordering::SeqCst);
        let answer = long_poll.await.unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.body(), "stopping");
        assert_eq!(answer.headers()["connection"], "close");
        for c in clients {
            assert_eq!(
                c.await.unwrap(),
                (CloseCode::Away, "going away".to_string())
            );
        }
        (report, waited_for)
    });
    assert_eq!(
        waited_for, 4,
        "Server::wait returned before the WebSocket tasks ended"
    );
    assert_eq!(report.connections, 5, "{report:?}");
    assert_eq!(report.upgraded, 4, "{report:?}");
    assert_eq!(report.aborted, 0, "{report:?}");
    assert_eq!(report.upgraded_aborted, 0, "{report:?}");
    assert_eq!(report.failed, 0, "{report:?}");
}

/// An echo that pays no attention to the shutdown; counts itself in `ended` when its
/// stream ends.
async fn deaf_echo(mut socket: WebSocket, ended: Arc<AtomicUsize>) {
    while let Some(Ok(msg)) = socket.recv().await {
        if socket.send(msg).await.is_err() {
            break;
        }
    }
    ended.fetch_add(1, Ordering::SeqCst);
}

fn the_drain_deadline_cuts_upgraded_connections(backend: Backend) {
    let rt = runtime(backend);
    let ended = Arc::new(AtomicUsize::new(0));
    let router = {
        let ended = ended.clone();
        Router::new().route(
            "/ws",
            get(move |ws: WebSocketUpgrade| {
                let ended = ended.clone();
                async move { ws.on_upgrade(move |s| deaf_echo(s, ended)) }
            }),
        )
    };
    let drain = Duration::from_millis(300);
    let options = ServeOptions {
        drain_timeout: drain,
        ..ServeOptions::default()
    };
    let server = Server::http1(&rt.handle(), "127.0.0.1:0", options, move || {
        TowerService(router.clone())
    })
    .unwrap();
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    let report = rt.block_on(async move {
        let mut sessions = Vec::new();
        for i in 0..3 {
            let mut ws = connect_ws(addr).await;
            echoed(&mut ws, &format!("hello {i}")).await;
            sessions.push(ws);
        }
        let started = Instant::now();
        stop.shutdown();
        let report = server.wait().await.unwrap();
        let took = started.elapsed();
        assert!(
            took >= drain,
            "wait returned after {took:?}, before the deadline"
        );
        assert!(took < STEP, "wait took {took:?}");
        // Each client sees its connection end (no close frame: it was cut).
        for mut ws in sessions {
            match ringway::time::timeout(STEP, ws.next()).await {
                Ok(None | Some(Err(_))) => {}
                other => panic!("expected the connection to end, got {other:?}"),
            }
        }
        // And each server task saw its stream end, and ended.
        let start = Instant::now();
        while ended.load(Ordering::SeqCst) < 3 {
            assert!(start.elapsed() < STEP, "the echo tasks did not end");
            ringway::time::sleep(Duration::from_millis(5)).await;
        }
        report
    });
    assert_eq!(report.connections, 3, "{report:?}");
    assert_eq!(report.upgraded, 3, "{report:?}");
    assert_eq!(report.aborted, 3, "{report:?}");
    assert_eq!(report.upgraded_aborted, 3, "{report:?}");
}
