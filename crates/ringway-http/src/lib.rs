//! # ringway-http
//!
//! A strict, fast HTTP/1.1 server on the ringway runtime, with TLS through rustls.
//!
//! - Request heads are parsed by httparse and then checked against RFC 9112 (target
//!   forms, `Host`, framing fields); bodies are framed here (`Content-Length`, chunked
//!   with extensions and bounded trailers). Anything ambiguous is refused with its status
//!   and the connection closes: no resynchronisation, no smuggling.
//! - Keep-alive, pipelining answered in order with every response ready in one loop
//!   turn coalesced into one send, `Expect: 100-continue`, HEAD/204/304 without bodies,
//!   a `Date` header formatted once per second, limits (414/431/413/400) and timeouts
//!   (header 408, body 408, idle, send), graceful shutdown.
//! - Handlers take `http::Request<Body>` and return `http::Response<Body>`.
//!
//! ```no_run
//! use http::{Request, Response};
//! use ringway_http::{Body, Config, Server};
//!
//! fn main() -> std::io::Result<()> {
//!     let rt = ringway::Runtime::new()?;
//!     Server::new(Config::default()).run(&rt, "127.0.0.1:8080", || {
//!         |req: Request<Body>| async move {
//!             Response::new(Body::from(format!("you asked for {}\n", req.uri())))
//!         }
//!     })?;
//!     Ok(())
//! }
//! ```

mod body;
mod body_reader;
pub mod chunked;
mod config;
mod conn;
mod date;
pub mod decode;
mod error;
pub mod files;
mod framing;
mod handler;
pub mod head;
mod input;
mod log;
mod mime;
mod pipe;
mod response;
mod select;
mod server;
mod shutdown;
mod stats;
pub mod tls;
mod transport;

pub use body::{Body, BodyStream, FnStream};
pub use config::{Config, MAX_HEADERS_CAP};
pub use date::format_imf;
pub use error::{ErrorClass, HttpError};
pub use framing::{body_kind, parse_length, BodyKind};
pub use handler::Handler;
pub use server::{Running, Server};
pub use shutdown::ShutdownHandle;
pub use stats::{Stats, StatsSnapshot};
