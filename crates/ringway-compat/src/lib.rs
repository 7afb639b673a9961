//! # ringway-compat
//!
//! Runs hyper, axum, tower and the tokio I/O ecosystem on the [ringway] runtime.
//!
//! - [`CompatStream`] gives a ringway [`TcpStream`](ringway::net::TcpStream) or
//!   [`UnixStream`](ringway::net::UnixStream) tokio's `AsyncRead` / `AsyncWrite` /
//!   `AsyncBufRead`, bridging readiness-style polling onto ringway's completions: reads
//!   come from the pool buffers the multishot receive fills, writes are gathered and
//!   sent once per batch. Anything written against tokio's I/O traits (tokio-rustls,
//!   codecs, `tokio::io::copy`) runs on it.
//! - With the `hyper` feature (on by default): hyper 1's `rt::Read` / `rt::Write` on
//!   the same type, [`LocalExecutor`] (spawns connection tasks on the current core; they
//!   need not be `Send`), [`RingwayTimer`] (hyper's timeouts on ringway's timers), and
//!   [`Server`], which serves a hyper or tower service (an axum `Router`) on every core
//!   with graceful shutdown.
//! - With `tls`: [`Server::tls`], TLS terminated by the server (rustls), HTTP/2 or
//!   HTTP/1.1 by ALPN on one port.
//! - [`CoreBound`]: a stream that is `Send` (what hyper's upgrades ask for) and used only
//!   on its core, checked on every poll; `Server`'s HTTP/1.1 connections support
//!   upgrades over it.
//! - With `ws`: [`ws::WebSocketUpgrade`], axum's WebSocket extractor, spawning on ringway.
//! - With `timeout`: [`timeout`], tower's and tower-http's timeout layers on ringway's
//!   timers.
//! - With `futures-io`: the `futures_io` traits.
//!
//! The crate uses tokio's I/O *traits* only: no tokio runtime runs. Libraries that
//! call into tokio's runtime themselves (`tokio::time::sleep`, `tokio::spawn`,
//! `tokio::net`, and so `tower::timeout`, tower-http's timeouts and axum's own
//! `WebSocketUpgrade`) need it and panic here; use ringway's equivalents and the
//! drop-ins of [`timeout`] and [`ws`] (the crate's README lists them all).

#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]

mod core_bound;
mod receiver;
mod sender;
mod socket;
mod stream;

#[cfg(feature = "hyper")]
mod eager;
#[cfg(feature = "futures-io")]
mod futures_io_impl;
#[cfg(feature = "hyper")]
mod hyper_rt;
#[cfg(any(feature = "tls", feature = "ws"))]
mod io_adapter;
#[cfg(feature = "hyper")]
mod serve;
#[cfg(feature = "hyper")]
mod shutdown;
#[cfg(feature = "http2")]
mod sniff;
#[cfg(feature = "timeout")]
pub mod timeout;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "tower")]
mod tower;
#[cfg(feature = "hyper")]
mod upgrades;
#[cfg(feature = "ws")]
pub mod ws;

pub use core_bound::CoreBound;
pub use socket::StreamSocket;
pub use stream::CompatStream;

#[cfg(feature = "hyper")]
pub use hyper_rt::{LocalExecutor, RingwayTimer};
#[cfg(feature = "hyper")]
pub use serve::{ServeOptions, ServeReport, Server};
#[cfg(feature = "hyper")]
pub use shutdown::{ShutdownHandle, Stopping};
#[cfg(feature = "tower")]
pub use tower::TowerService;
