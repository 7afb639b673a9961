//! An axum WebSocket app on ringway: `/ws` echoes every message back (text, binary;
//! pings are answered), `/` says how to use it. The handler is axum code; only the
//! extractor's import differs from tokio's (`ringway_compat::ws` instead of
//! `axum::extract::ws`, whose `on_upgrade` calls `tokio::spawn`), and the socket's task
//! runs on the connection's core.
//!
//! ```sh
//! cargo run --release -p ringway-compat --example axum_ws        # 127.0.0.1:3001
//! # then any WebSocket client, e.g. `websocat ws://127.0.0.1:3001/ws`
//! ```
//!
//! Options: `--bind ADDR`, `--threads N`, `--backend auto|uring|epoll`. The tokio peer
//! of the benchmark is `axum_ws_tokio`, the same app.

#[path = "common/app.rs"]
mod app;

use axum::routing::get;
use axum::Router;
use ringway_compat::ws::{Message, WebSocket, WebSocketUpgrade};
use ringway_compat::{ServeOptions, Server, TowerService};

/// Echoes every message until the client closes.
async fn echo(mut socket: WebSocket) {
    while let Some(Ok(msg)) = socket.recv().await {
        if matches!(msg, Message::Close(_)) {
            break;
        }
        if socket.send(msg).await.is_err() {
            break;
        }
    }
}

fn router() -> Router {
    Router::new()
        .route("/", get(|| async { "WebSocket echo at /ws\n" }))
        .route(
            "/ws",
            get(|ws: WebSocketUpgrade| async { ws.on_upgrade(echo) }),
        )
}

fn main() -> std::io::Result<()> {
    let (mut bind, mut threads, mut backend) =
        ("127.0.0.1:3001".to_string(), 1, ringway::Backend::Auto);
    for (name, value) in app::args() {
        match name.as_str() {
            "--bind" => bind = value,
            "--threads" => threads = value.parse().expect("--threads takes a number"),
            "--backend" => backend = app::backend(&value),
            _ => {
                eprintln!("unknown option {name}: expected --bind, --threads or --backend");
                std::process::exit(2);
            }
        }
    }
    let rt = ringway::Runtime::builder()
        .worker_threads(threads)
        .backend(backend)
        .build()?;
    let app = router();
    let server = Server::http1(
        &rt.handle(),
        bind.as_str(),
        ServeOptions::default(),
        move || TowerService(app.clone()),
    )?;
    println!(
        "axum WebSocket echo on ringway ({}) listening on http://{}",
        rt.backend(),
        server.local_addr()
    );
    let report = rt.block_on(server.wait())?;
    println!("{report:?}");
    Ok(())
}
