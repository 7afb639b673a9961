//! The HTTP face: an axum router. Everything here is plain axum; the ringway parts are
//! the WebSocket extractor (`ringway_compat::ws`, whose task runs on the connection's
//! core) and the request timeout (`ringway_compat::timeout::http`, on ringway's timers).
//!
//! axum asks a handler's future to be `Send`, so handlers hold only `Send` things
//! across an `.await` (channels, `Arc`s); the core-local state of [`Rooms`] is reached
//! through its methods, which touch it synchronously.
//!
//! | route | what it does |
//! |---|---|
//! | `GET /ws/{room}?name=NAME` | a WebSocket in the room: text frames in are posted, every message of the room comes out as JSON |
//! | `POST /rooms/{room}/messages` | posts `{"from": NAME, "text": TEXT}`; `201` with the message |
//! | `GET /rooms/{room}/history?since=SEQ` | the messages after `SEQ` (default 0) that the room keeps |
//! | `GET /rooms/{room}/next?after=SEQ` | long poll: the first message after `SEQ`, when it comes (or `408` at the request timeout) |
//! | `GET /worker` | the worker process: pid, restarts, messages filtered |

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ringway_compat::timeout::http::TimeoutLayer;
use ringway_compat::ws::WebSocketUpgrade;
use serde::Deserialize;
use serde_json::json;

use crate::rooms::{Closing, Posted, RoomName, Rooms};
use crate::session;
use crate::worker::{FilterError, Worker};

/// The longest message, in bytes.
pub(crate) const MAX_TEXT: usize = 1000;
/// How long a message may wait for the worker's filter.
const FILTER_TIMEOUT: Duration = Duration::from_secs(2);

/// What every handler and session shares: `Clone + Send + Sync`, as axum state must be.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub(crate) rooms: Rooms,
    pub(crate) worker: Worker,
}

/// The router, with the request timeout on every route.
pub(crate) fn router(app: App, request_timeout: Duration) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/ws/{room}", get(websocket))
        .route("/rooms/{room}/messages", post(post_message))
        .route("/rooms/{room}/history", get(history))
        .route("/rooms/{room}/next", get(next))
        .route("/worker", get(worker))
        .layer(TimeoutLayer::new(request_timeout))
        .with_state(app)
}

/// Why a request failed; each is a status and `{"error": ...}`.
#[derive(Debug)]
pub(crate) enum ApiError {
    BadRequest(String),
    /// The worker did not answer in time, or died twice on this message.
    FilterUnavailable,
    ShuttingDown,
}

impl ApiError {
    pub(crate) fn message(&self) -> String {
        match self {
            ApiError::BadRequest(why) => why.clone(),
            ApiError::FilterUnavailable => {
                "the word filter is not available; the message was not posted".to_string()
            }
            ApiError::ShuttingDown => "the server is shutting down".to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::FilterUnavailable | ApiError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        };
        (status, Json(json!({ "error": self.message() }))).into_response()
    }
}

impl From<Closing> for ApiError {
    fn from(_: Closing) -> Self {
        ApiError::ShuttingDown
    }
}

fn room(name: &str) -> Result<RoomName, ApiError> {
    RoomName::parse(name).map_err(ApiError::BadRequest)
}

/// A sender's name: 1 to 32 characters, none of them a control character.
pub(crate) fn sender_name(name: Option<&str>) -> Result<String, ApiError> {
    let name = name.unwrap_or("").trim();
    if (1..=32).contains(&name.chars().count()) && !name.chars().any(char::is_control) {
        Ok(name.to_string())
    } else {
        Err(ApiError::BadRequest(format!(
            "a name is 1 to 32 characters, none of them a control character, not {name:?}"
        )))
    }
}

/// Filters `text` through the worker and posts it: what both the WebSocket sessions
/// and `POST /rooms/{room}/messages` do.
pub(crate) async fn post_text(
    app: &App,
    room: &RoomName,
    from: &str,
    text: &str,
) -> Result<Arc<Posted>, ApiError> {
    if text.trim().is_empty() || text.len() > MAX_TEXT {
        return Err(ApiError::BadRequest(format!(
            "a message is 1 to {MAX_TEXT} bytes of text, not {} bytes",
            text.len()
        )));
    }
    let filtered = match ringway::time::timeout(FILTER_TIMEOUT, app.worker.filter(text)).await {
        Ok(Ok(filtered)) => filtered,
        Ok(Err(FilterError::Stopped)) => return Err(ApiError::ShuttingDown),
        Ok(Err(FilterError::Dropped)) | Err(_) => return Err(ApiError::FilterUnavailable),
    };
    Ok(app.rooms.post(room, from, filtered).await?)
}

/// A message as its JSON, made once by the room's owner.
fn json_of(posted: &Posted) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        posted.json.as_str().to_owned(),
    )
        .into_response()
}

async fn index() -> &'static str {
    "chat on ringway\n\
     GET  /ws/{room}?name=NAME                 WebSocket: text frames in, messages out (JSON)\n\
     POST /rooms/{room}/messages              {\"from\": NAME, \"text\": TEXT}\n\
     GET  /rooms/{room}/history?since=SEQ\n\
     GET  /rooms/{room}/next?after=SEQ         long poll\n\
     GET  /worker                             the worker process\n"
}

#[derive(Debug, Deserialize)]
struct Join {
    name: Option<String>,
}

async fn websocket(
    State(app): State<App>,
    Path(name): Path<String>,
    Query(join): Query<Join>,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let room = room(&name)?;
    let from = sender_name(join.name.as_deref())?;
    // Counted from now, so that a shutdown waits for the session this upgrade starts.
    let guard = app.rooms.session()?;
    Ok(ws.on_upgrade(move |socket| session::run(socket, app, room, from, guard)))
}

#[derive(Debug, Deserialize)]
struct NewMessage {
    from: String,
    text: String,
}

async fn post_message(
    State(app): State<App>,
    Path(name): Path<String>,
    Json(message): Json<NewMessage>,
) -> Result<Response, ApiError> {
    let room = room(&name)?;
    let from = sender_name(Some(&message.from))?;
    let posted = post_text(&app, &room, &from, &message.text).await?;
    let mut response = json_of(&posted);
    *response.status_mut() = StatusCode::CREATED;
    Ok(response)
}

#[derive(Debug, Deserialize)]
struct Since {
    since: Option<u64>,
}

async fn history(
    State(app): State<App>,
    Path(name): Path<String>,
    Query(since): Query<Since>,
) -> Result<Response, ApiError> {
    let room = room(&name)?;
    let messages = app.rooms.history(&room, since.since.unwrap_or(0)).await?;
    let records: Vec<_> = messages.iter().map(|p| &p.record).collect();
    Ok(Json(json!({ "room": room.as_str(), "messages": records })).into_response())
}

#[derive(Debug, Deserialize)]
struct After {
    after: Option<u64>,
}

/// The first message after `after`: subscribed first, then the history asked, so
/// that a message posted in between is not missed.
async fn next(
    State(app): State<App>,
    Path(name): Path<String>,
    Query(after): Query<After>,
) -> Result<Response, ApiError> {
    let room = room(&name)?;
    let after = after.after.unwrap_or(0);
    let mut subscription = app.rooms.subscribe(&room)?;
    if let Some(first) = app.rooms.history(&room, after).await?.first() {
        return Ok(json_of(first));
    }
    while let Some(posted) = subscription.next().await {
        if posted.record.seq > after {
            return Ok(json_of(&posted));
        }
    }
    Err(ApiError::ShuttingDown)
}

async fn worker(State(app): State<App>) -> Json<serde_json::Value> {
    let (pid, restarts, filtered) = app.worker.status().read();
    Json(json!({ "pid": pid, "restarts": restarts, "filtered": filtered }))
}
