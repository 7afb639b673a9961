//! One WebSocket client in a room: its text frames are posted (filtered by the worker),
//! and every message of the room, from any core, goes out to it as a JSON text frame.
//! The task runs on the connection's core and need not be `Send` (the extractor spawns
//! it with `ringway::spawn`).
//!
//! The server ends a session with a close frame: `1001` (going away) at shutdown,
//! `1008` if the client fell too far behind, `1003` for a binary frame; then it waits
//! a moment for the client's close frame, as RFC 6455 asks.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use futures_util::Stream;
use ringway_compat::ws::{CloseFrame, Message, WebSocket};
use serde_json::json;

use crate::api::{post_text, App};
use crate::rooms::{RoomName, SessionGuard, Subscription};

/// How long the server waits for the client's close frame after sending its own.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

enum Event {
    /// From the client (`None`: it is gone).
    Client(Option<Result<Message, ringway_compat::ws::Error>>),
    /// From the room (`None`: the subscription ended).
    Room(Option<std::sync::Arc<crate::rooms::Posted>>),
}

/// Runs the session until either side ends it. `_guard` counts it on its core until
/// it returns, so a shutdown waits for its close.
pub(crate) async fn run(
    mut socket: WebSocket,
    app: App,
    room: RoomName,
    from: String,
    _guard: SessionGuard,
) {
    let mut subscription = match app.rooms.subscribe(&room) {
        Ok(s) => s,
        Err(_) => return close(socket, 1001, "the server is shutting down").await,
    };
    let welcome = json!({ "welcome": {
        "room": room.as_str(),
        "name": from,
        "core": ringway::runtime::current_core(),
    }});
    if socket
        .send(Message::text(welcome.to_string()))
        .await
        .is_err()
    {
        return;
    }
    let (code, reason) = loop {
        match next_event(&mut socket, &mut subscription).await {
            Event::Room(Some(posted)) => {
                if socket
                    .send(Message::Text(posted.json.clone()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Event::Room(None) if app.rooms.is_closing() => {
                break (1001, "the server is shutting down")
            }
            Event::Room(None) => break (1008, "too slow: the room's messages piled up"),
            Event::Client(Some(Ok(Message::Text(text)))) => {
                // Posted and numbered before the next frame is read: a client's
                // messages keep their order.
                if let Err(e) = post_text(&app, &room, &from, text.as_str()).await {
                    let error = json!({ "error": e.message() }).to_string();
                    if socket.send(Message::text(error)).await.is_err() {
                        return;
                    }
                }
            }
            Event::Client(Some(Ok(Message::Binary(_)))) => break (1003, "text frames only"),
            Event::Client(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => {}
            // The client closes: tungstenite has queued the answering close frame,
            // and reading on sends it.
            Event::Client(Some(Ok(Message::Close(_)))) => return finish(socket).await,
            Event::Client(None | Some(Err(_))) => return,
        }
    };
    close(socket, code, reason).await
}

/// The next thing to do: a message from the client first, else one from the room.
async fn next_event(socket: &mut WebSocket, subscription: &mut Subscription) -> Event {
    poll_fn(|cx| {
        if let Poll::Ready(m) = Pin::new(&mut *socket).poll_next(cx) {
            return Poll::Ready(Event::Client(m));
        }
        subscription.poll_next(cx).map(Event::Room)
    })
    .await
}

/// Sends a close frame and waits (a little) for the client's.
async fn close(mut socket: WebSocket, code: u16, reason: &'static str) {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    if socket.send(Message::Close(Some(frame))).await.is_ok() {
        finish(socket).await;
    }
}

/// Reads until the connection ends (the closing handshake's last frames), at most
/// `CLOSE_WAIT`.
async fn finish(mut socket: WebSocket) {
    let _ = ringway::time::timeout(CLOSE_WAIT, async {
        while let Some(Ok(_)) = socket.recv().await {}
    })
    .await;
}
