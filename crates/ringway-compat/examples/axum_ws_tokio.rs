//! The same axum WebSocket echo on tokio (current_thread, `axum::serve`, axum's own
//! extractor over tokio-tungstenite): the peer `axum_ws` is measured against in
//! `bench/compare_tls_ws.sh`. A benchmark peer only.
//!
//! Options: `--bind ADDR`, `--read-buffer BYTES` (tungstenite's read buffer; axum's
//! default is 128 KiB).

#[path = "common/app.rs"]
mod app;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::routing::get;
use axum::serve::ListenerExt;
use axum::Router;

/// Echoes every message until the client closes (the same code as `axum_ws`).
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
    let (mut bind, mut read_buffer) = ("127.0.0.1:3001".to_string(), None);
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
            _ => {
                eprintln!("unknown option {name}: expected --bind or --read-buffer");
                std::process::exit(2);
            }
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&bind).await?;
        println!(
            "axum WebSocket echo on tokio (current_thread) listening on http://{}",
            listener.local_addr()?
        );
        // TCP_NODELAY, as `Server` sets it.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router(read_buffer)).await
    })
}
