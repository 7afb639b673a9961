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
//! - With `futures-io`: the `futures_io` traits.
//!
//! The crate uses tokio's I/O *traits* only: no tokio runtime runs. Libraries that
//! call into tokio's runtime themselves (`tokio::time::sleep`, `tokio::spawn`,
//! `tokio::net`) need it and do not work here; use ringway's equivalents.

#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]

mod receiver;
mod sender;
mod socket;
mod stream;

// (No feature: ringway-http's server drains with it too.)
pub mod drain;
#[cfg(feature = "futures-io")]
mod futures_io_impl;
#[cfg(feature = "hyper")]
mod hyper_rt;
#[cfg(feature = "hyper")]
mod serve;
#[cfg(feature = "http2")]
mod sniff;
#[cfg(feature = "tower")]
mod tower;

pub use socket::StreamSocket;
pub use stream::CompatStream;

#[cfg(feature = "hyper")]
pub use hyper_rt::{LocalExecutor, RingwayTimer};
#[cfg(feature = "hyper")]
pub use serve::{ServeOptions, ServeReport, Server, ShutdownHandle};
#[cfg(feature = "tower")]
pub use tower::TowerService;
