//! The crate's integration tests, but for the cancellation suite (which counts the
//! process's fds, so it has a binary of its own): one binary, so that hyper, axum and
//! rustls are linked once. Each module is one suite; every suite runs on both backends.

#[macro_use]
mod common;

mod axum_router;
mod examples;
mod h2_streams;
mod http2;
mod hyper_rt;
mod shutdown;
mod stream;
mod timeouts;
mod tls;
mod tls_server;
mod upgrade;
mod websocket;
