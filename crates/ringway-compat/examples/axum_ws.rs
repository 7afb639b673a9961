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
//! Options: `--bind ADDR`, `--threads N`, `--backend auto|uring|epoll` (without it,
//! `RINGWAY_BACKEND` chooses, as for any ringway runtime), `--read-buffer BYTES`
//! (tungstenite's read buffer; default one pool buffer, 4 KiB). The tokio peer of the
//! benchmark is `axum_ws_tokio`, the same app.

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

/// The app; `read_buffer` sets tungstenite's read buffer (`--read-buffer`), else the
/// extractor's default stays.
fn router(read_buffer: Option<usize>) -> Router {
    Router::new()
        .route("/", get(|| async { "WebSocket echo at /ws\n" }))
        .route(
            "/ws",
            get(move |ws: WebSocketUpgrade| async move {
                match read_buffer {
                    Some(n) => ws.read_buffer_size(n),
                    None => ws,
                }
                .on_upgrade(echo)
            }),
        )
}

fn main() -> std::io::Result<()> {
    let (mut bind, mut threads, mut backend) = ("127.0.0.1:3001".to_string(), 1, None);
    let mut read_buffer = None;
    for (name, value) in app::args() {
        match name.as_str() {
            "--bind" => bind = value,
            "--read-buffer" => {
                read_buffer = Some(
                    value
                        .parse()
                        .expect("--read-buffer takes a number of bytes"),
                )
            }
            "--threads" => threads = value.parse().expect("--threads takes a number"),
            "--backend" => backend = Some(app::backend(&value)),
            _ => {
                eprintln!(
                    "unknown option {name}: expected --bind, --threads, --backend or --read-buffer"
                );
                std::process::exit(2);
            }
        }
    }
    let rt = app::runtime(threads, backend)?;
    let app = router(read_buffer);
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
