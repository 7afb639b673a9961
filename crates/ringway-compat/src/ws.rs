//! WebSockets for axum on ringway: [`WebSocketUpgrade`], a drop-in for
//! `axum::extract::ws::WebSocketUpgrade`.
//!
//! axum's own extractor cannot run here: its `on_upgrade` starts the socket's task with
//! `tokio::spawn`, which needs tokio's runtime on the thread (it panics on a ringway
//! core). This one has the same API, but spawns the task on the connection's own core
//! ([`ringway::spawn`]), so the callback need not be `Send`, and speaks the protocol
//! with tungstenite, as axum's does. Port a handler by changing its imports:
//!
//! ```text
//! use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};   // tokio
//! use ringway_compat::ws::{Message, WebSocket, WebSocketUpgrade};  // ringway
//! ```
//!
//! Serve the router with [`Server`](crate::Server) (`http1`, `auto` or `tls`): its
//! HTTP/1.1 connections support upgrades, over a [`CoreBound`](crate::CoreBound)
//! stream. WebSockets over HTTP/2 (RFC 8441's extended CONNECT) are not supported: a
//! request to a WebSocket route over HTTP/2 is answered `400` with a body that says so
//! and that WebSockets need HTTP/1.1 here ([`WebSocketUpgradeRejection::Http2`]).
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use ringway_compat::ws::{Message, WebSocket, WebSocketUpgrade};
//! use ringway_compat::{ServeOptions, Server, TowerService};
//!
//! async fn echo(mut socket: WebSocket) {
//!     while let Some(Ok(msg)) = socket.recv().await {
//!         if socket.send(msg).await.is_err() {
//!             break;
//!         }
//!     }
//! }
//!
//! let rt = ringway::Runtime::new()?;
//! let server = Server::http1(&rt.handle(), "127.0.0.1:3000", ServeOptions::default(), || {
//!     TowerService(Router::new().route(
//!         "/ws",
//!         get(|ws: WebSocketUpgrade| async { ws.on_upgrade(echo) }),
//!     ))
//! })?;
//! rt.block_on(server.wait())?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum_core::body::Body;
use axum_core::extract::FromRequestParts;
use axum_core::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_core::Stream;
use futures_sink::Sink;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::request::Parts;
use http::{Method, StatusCode, Version};
use tokio_tungstenite::tungstenite::protocol::{self as ts, Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

pub use tokio_tungstenite::tungstenite::Error;
pub use tokio_tungstenite::tungstenite::Utf8Bytes;

use crate::io_adapter::TokioIo;

/// The upgraded connection a [`WebSocket`] runs over.
type Upgraded = TokioIo<hyper::upgrade::Upgraded>;

/// Extractor that accepts a WebSocket upgrade (HTTP/1.1 `GET` with `Connection:
/// upgrade`, `Upgrade: websocket`, `Sec-WebSocket-Version: 13` and a key); answer with
/// [`on_upgrade`](Self::on_upgrade). As `axum::extract::ws::WebSocketUpgrade`, but the
/// socket's task runs on the connection's core.
pub struct WebSocketUpgrade<F = DefaultOnFailedUpgrade> {
    config: WebSocketConfig,
    protocol: Option<HeaderValue>,
    requested: Vec<HeaderValue>,
    key: HeaderValue,
    on_upgrade: hyper::upgrade::OnUpgrade,
    on_failed_upgrade: F,
}

impl<F> fmt::Debug for WebSocketUpgrade<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketUpgrade")
            .field("config", &self.config)
            .field("protocol", &self.protocol)
            .field("requested", &self.requested)
            .finish_non_exhaustive()
    }
}

/// What to do when the upgrade fails after the `101` response (the connection broke):
/// see [`WebSocketUpgrade::on_failed_upgrade`].
pub trait OnFailedUpgrade: 'static {
    /// Called with the error.
    fn call(self, error: hyper::Error);
}

impl<F: FnOnce(hyper::Error) + 'static> OnFailedUpgrade for F {
    fn call(self, error: hyper::Error) {
        self(error)
    }
}

/// The default [`OnFailedUpgrade`]: logs the error at debug level.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultOnFailedUpgrade;

impl OnFailedUpgrade for DefaultOnFailedUpgrade {
    fn call(self, error: hyper::Error) {
        tracing::debug!(%error, "WebSocket upgrade failed");
    }
}

impl<F: OnFailedUpgrade> WebSocketUpgrade<F> {
    /// tungstenite's read buffer size (default: the size of one of the core's pool
    /// buffers, 4 KiB unless the runtime was built otherwise; axum's default is 128 KiB,
    /// which tungstenite zero-fills before every read).
    pub fn read_buffer_size(mut self, size: usize) -> Self {
        self.config.read_buffer_size = size;
        self
    }

    /// How many bytes of frames are gathered before a write goes to the stream
    /// (default 128 KiB; 0 writes each frame at once).
    pub fn write_buffer_size(mut self, size: usize) -> Self {
        self.config.write_buffer_size = size;
        self
    }

    /// The most bytes the write buffer may hold (default unlimited).
    pub fn max_write_buffer_size(mut self, max: usize) -> Self {
        self.config.max_write_buffer_size = max;
        self
    }

    /// The largest message accepted (default 64 MiB).
    pub fn max_message_size(mut self, max: usize) -> Self {
        self.config.max_message_size = Some(max);
        self
    }

    /// The largest frame accepted (default 16 MiB).
    pub fn max_frame_size(mut self, max: usize) -> Self {
        self.config.max_frame_size = Some(max);
        self
    }

    /// Accept frames the client did not mask (RFC 6455 says a server must not).
    pub fn accept_unmasked_frames(mut self, accept: bool) -> Self {
        self.config.accept_unmasked_frames = accept;
        self
    }

    /// The subprotocols this server speaks, by preference: the first of them that the
    /// client asked for (`Sec-WebSocket-Protocol`) is selected and answered.
    pub fn protocols<I>(mut self, protocols: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<std::borrow::Cow<'static, str>>,
    {
        self.protocol = protocols.into_iter().find_map(|ours| {
            let ours = ours.into();
            self.requested
                .iter()
                .find(|theirs| theirs.as_bytes() == ours.as_bytes())
                .cloned()
        });
        self
    }

    /// The subprotocols the client asked for, in its order.
    pub fn requested_protocols(&self) -> impl Iterator<Item = &HeaderValue> {
        self.requested.iter()
    }

    /// Selects `protocol` (answered in `Sec-WebSocket-Protocol`), whatever was asked.
    pub fn set_selected_protocol(&mut self, protocol: HeaderValue) {
        self.protocol = Some(protocol);
    }

    /// The selected subprotocol, if any.
    pub fn selected_protocol(&self) -> Option<&HeaderValue> {
        self.protocol.as_ref()
    }

    /// Calls `callback` if the connection fails between the `101` response and the
    /// upgrade (instead of logging it).
    pub fn on_failed_upgrade<C: OnFailedUpgrade>(self, callback: C) -> WebSocketUpgrade<C> {
        WebSocketUpgrade {
            config: self.config,
            protocol: self.protocol,
            requested: self.requested,
            key: self.key,
            on_upgrade: self.on_upgrade,
            on_failed_upgrade: callback,
        }
    }

    /// Answers the upgrade (`101 Switching Protocols`) and, once the connection has
    /// switched, runs `callback` with the [`WebSocket`] as a task on this core. The
    /// callback need not be `Send`.
    ///
    /// # Panics
    ///
    /// Outside a ringway runtime (as [`ringway::spawn`]).
    #[must_use = "to set up the WebSocket connection, this response must be returned"]
    pub fn on_upgrade<C, Fut>(self, callback: C) -> Response
    where
        C: FnOnce(WebSocket) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let WebSocketUpgrade {
            config,
            protocol,
            key,
            on_upgrade,
            on_failed_upgrade,
            ..
        } = self;
        let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
        let chosen = protocol.clone();
        ringway::spawn(async move {
            let upgraded = match on_upgrade.await {
                Ok(upgraded) => upgraded,
                Err(e) => return on_failed_upgrade.call(e),
            };
            let inner =
                WebSocketStream::from_raw_socket(TokioIo(upgraded), Role::Server, Some(config))
                    .await;
            callback(WebSocket { inner, protocol }).await;
        })
        .detach();
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = response.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(
            header::SEC_WEBSOCKET_ACCEPT,
            HeaderValue::from_str(&accept).expect("base64 is a valid header value"),
        );
        if let Some(p) = chosen {
            headers.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
        }
        response
    }
}

impl<S: Send + Sync> FromRequestParts<S> for WebSocketUpgrade<DefaultOnFailedUpgrade> {
    type Rejection = WebSocketUpgradeRejection;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        use WebSocketUpgradeRejection as R;
        if parts.version > Version::HTTP_11 {
            // HTTP/2 has no `Upgrade`: its WebSockets open with an extended CONNECT (RFC
            // 8441), which this server does not offer. Say that, not "must be GET".
            return Err(R::Http2);
        }
        if parts.method != Method::GET {
            return Err(R::MethodNotGet);
        }
        if !header_has_token(&parts.headers, header::CONNECTION, "upgrade") {
            return Err(R::InvalidConnectionHeader);
        }
        if !header_is(&parts.headers, header::UPGRADE, "websocket") {
            return Err(R::InvalidUpgradeHeader);
        }
        if !header_is(&parts.headers, header::SEC_WEBSOCKET_VERSION, "13") {
            return Err(R::InvalidWebSocketVersionHeader);
        }
        let key = parts
            .headers
            .get(header::SEC_WEBSOCKET_KEY)
            .ok_or(R::WebSocketKeyHeaderMissing)?
            .clone();
        let on_upgrade = parts
            .extensions
            .remove::<hyper::upgrade::OnUpgrade>()
            .ok_or(R::ConnectionNotUpgradable)?;
        let requested = parts
            .headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
            .filter_map(|p| HeaderValue::from_bytes(p.trim_ascii()).ok())
            .filter(|p| !p.is_empty())
            .collect();
        Ok(WebSocketUpgrade {
            config: default_config(),
            protocol: None,
            requested,
            key,
            on_upgrade,
            on_failed_upgrade: DefaultOnFailedUpgrade,
        })
    }
}

/// tungstenite's defaults, but for the read buffer: one pool buffer's size (4 KiB by
/// default) instead of 128 KiB. tungstenite zero-fills the free part of its read buffer
/// before every read (its `Read`-based codec must hand out initialised bytes), including
/// the read that finds nothing; on ringway a read never returns more than one pool
/// buffer, so the rest of a 128 KiB buffer would be zeroed for nothing, twice per echoed
/// message (`bench/compare_tls_ws.sh`: ~2.6 million instructions per 64 B message with
/// 128 KiB, on tokio too). Larger messages still arrive whole: the buffer grows for a
/// frame that needs it. [`WebSocketUpgrade::read_buffer_size`] sets it.
fn default_config() -> WebSocketConfig {
    let pool_buffer = ringway::Handle::try_current()
        .map(|_| ringway::runtime::pool_stats().buf_size)
        .filter(|&n| n > 0)
        .unwrap_or(4096);
    WebSocketConfig::default().read_buffer_size(pool_buffer)
}

fn header_is(headers: &HeaderMap, name: HeaderName, value: &str) -> bool {
    headers
        .get(name)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(value.as_bytes()))
}

fn header_has_token(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    })
}

/// Why a request is not a WebSocket upgrade; answered with its status and a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebSocketUpgradeRejection {
    /// Not a `GET` (405).
    MethodNotGet,
    /// `Connection` does not name `upgrade` (400).
    InvalidConnectionHeader,
    /// `Upgrade` is not `websocket` (400).
    InvalidUpgradeHeader,
    /// `Sec-WebSocket-Version` is not 13 (400).
    InvalidWebSocketVersionHeader,
    /// No `Sec-WebSocket-Key` (400).
    WebSocketKeyHeaderMissing,
    /// The connection cannot be upgraded (not served by a server that supports
    /// upgrades; 426).
    ConnectionNotUpgradable,
    /// The request came over HTTP/2 (or later), whose WebSockets need an extended CONNECT
    /// (RFC 8441), which is not supported: use HTTP/1.1 (400, never cached).
    Http2,
}

impl WebSocketUpgradeRejection {
    /// The response's status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::MethodNotGet => StatusCode::METHOD_NOT_ALLOWED,
            Self::ConnectionNotUpgradable => StatusCode::UPGRADE_REQUIRED,
            Self::Http2
            | Self::InvalidConnectionHeader
            | Self::InvalidUpgradeHeader
            | Self::InvalidWebSocketVersionHeader
            | Self::WebSocketKeyHeaderMissing => StatusCode::BAD_REQUEST,
        }
    }

    /// The response's body.
    pub fn body_text(&self) -> &'static str {
        match self {
            Self::MethodNotGet => "Request method must be `GET`",
            Self::InvalidConnectionHeader => "Connection header did not include 'upgrade'",
            Self::InvalidUpgradeHeader => "`Upgrade` header did not include 'websocket'",
            Self::InvalidWebSocketVersionHeader => {
                "`Sec-WebSocket-Version` header did not include '13'"
            }
            Self::WebSocketKeyHeaderMissing => "`Sec-WebSocket-Key` header missing",
            Self::ConnectionNotUpgradable => {
                "WebSocket request couldn't be upgraded since no upgrade state was present"
            }
            Self::Http2 => {
                "WebSockets over HTTP/2 need an extended CONNECT (RFC 8441), which this \
                 server does not support: WebSockets need HTTP/1.1 here (a GET with \
                 `Connection: upgrade` and `Upgrade: websocket`)"
            }
        }
    }
}

impl fmt::Display for WebSocketUpgradeRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.body_text())
    }
}

impl std::error::Error for WebSocketUpgradeRejection {}

impl IntoResponse for WebSocketUpgradeRejection {
    fn into_response(self) -> Response {
        let mut response = (self.status(), self.body_text()).into_response();
        if self == Self::Http2 {
            // The answer depends on the connection's protocol, not on the URL: a cache
            // must not give it to the same URL asked over HTTP/1.1.
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        response
    }
}

/// An open WebSocket: [`recv`](Self::recv) and [`send`](Self::send), or use it as a
/// `Stream` of messages and a `Sink` of them (`split` it with `futures`' `StreamExt`).
/// As `axum::extract::ws::WebSocket`; lives on the connection's core.
pub struct WebSocket {
    inner: WebSocketStream<Upgraded>,
    protocol: Option<HeaderValue>,
}

impl fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocket")
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl WebSocket {
    /// The next message; `None` once the connection is closed. Pings are answered for
    /// you (and still returned).
    pub async fn recv(&mut self) -> Option<Result<Message, Error>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// Sends a message (and flushes it).
    pub async fn send(&mut self, msg: Message) -> Result<(), Error> {
        std::future::poll_fn(|cx| Pin::new(&mut self.inner).poll_ready(cx)).await?;
        Pin::new(&mut self.inner).start_send(msg.into_tungstenite())?;
        std::future::poll_fn(|cx| Pin::new(&mut self.inner).poll_flush(cx)).await
    }

    /// The subprotocol selected for this socket, if any.
    pub fn protocol(&self) -> Option<&HeaderValue> {
        self.protocol.as_ref()
    }
}

impl Stream for WebSocket {
    type Item = Result<Message, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match ready!(Pin::new(&mut self.inner).poll_next(cx)) {
                Some(Ok(msg)) => {
                    // Raw frames are never returned when reading (tungstenite's rule).
                    if let Some(msg) = Message::from_tungstenite(msg) {
                        return Poll::Ready(Some(Ok(msg)));
                    }
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => return Poll::Ready(None),
            }
        }
    }
}

impl Sink<Message> for WebSocket {
    type Error = Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Pin::new(&mut self.inner).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: Message) -> Result<(), Error> {
        Pin::new(&mut self.inner).start_send(item.into_tungstenite())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Pin::new(&mut self.inner).poll_close(cx)
    }
}

/// A close frame's status code and reason (as axum's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseFrame {
    /// The status code (RFC 6455, section 7.4).
    pub code: u16,
    /// Why, for people.
    pub reason: Utf8Bytes,
}

/// A WebSocket message (as `axum::extract::ws::Message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A text message (UTF-8).
    Text(Utf8Bytes),
    /// A binary message.
    Binary(Bytes),
    /// A ping (at most 125 bytes); answered for you with a pong.
    Ping(Bytes),
    /// A pong.
    Pong(Bytes),
    /// A close, with an optional code and reason.
    Close(Option<CloseFrame>),
}

impl Message {
    fn into_tungstenite(self) -> ts::Message {
        match self {
            Message::Text(t) => ts::Message::Text(t),
            Message::Binary(b) => ts::Message::Binary(b),
            Message::Ping(b) => ts::Message::Ping(b),
            Message::Pong(b) => ts::Message::Pong(b),
            Message::Close(c) => ts::Message::Close(c.map(|c| ts::CloseFrame {
                code: c.code.into(),
                reason: c.reason,
            })),
        }
    }

    fn from_tungstenite(msg: ts::Message) -> Option<Message> {
        Some(match msg {
            ts::Message::Text(t) => Message::Text(t),
            ts::Message::Binary(b) => Message::Binary(b),
            ts::Message::Ping(b) => Message::Ping(b),
            ts::Message::Pong(b) => Message::Pong(b),
            ts::Message::Close(c) => Message::Close(c.map(|c| CloseFrame {
                code: c.code.into(),
                reason: c.reason,
            })),
            ts::Message::Frame(_) => return None,
        })
    }

    /// The payload's bytes.
    pub fn into_data(self) -> Bytes {
        match self {
            Message::Text(t) => t.into(),
            Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => b,
            Message::Close(Some(c)) => c.reason.into(),
            Message::Close(None) => Bytes::new(),
        }
    }

    /// A text message from `text`.
    pub fn text(text: impl Into<Utf8Bytes>) -> Message {
        Message::Text(text.into())
    }

    /// A binary message from `bytes`.
    pub fn binary(bytes: impl Into<Bytes>) -> Message {
        Message::Binary(bytes.into())
    }
}

impl From<String> for Message {
    fn from(s: String) -> Self {
        Message::Text(s.into())
    }
}

impl<'a> From<&'a str> for Message {
    fn from(s: &'a str) -> Self {
        Message::Text(s.into())
    }
}

impl From<Bytes> for Message {
    fn from(b: Bytes) -> Self {
        Message::Binary(b)
    }
}

impl From<Vec<u8>> for Message {
    fn from(b: Vec<u8>) -> Self {
        Message::Binary(b.into())
    }
}
