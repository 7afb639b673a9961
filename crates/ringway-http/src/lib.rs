//! # ringway-http
//!
//! A strict, fast HTTP/1.1 server on the ringway runtime, with TLS through rustls.
//!
//! - Request heads are read by a hand-written scanner in one pass and checked against
//!   RFC 9112 (target forms, `Host`, framing fields); httparse, the parser it replaced,
//!   is the reference it is differentially tested and fuzzed against; bodies are framed here (`Content-Length`, chunked
//!   with extensions and bounded trailers). Anything ambiguous is refused with its status
//!   and the connection closes: no resynchronisation, no smuggling.
//! - Keep-alive, pipelining answered in order with every response ready in one loop
//!   turn coalesced into one send, `Expect: 100-continue`, HEAD/204/304 without bodies,
//!   a `Date` header formatted once per second, limits (414/431/413/400) and timeouts
//!   (header 408, body 408, idle, send), graceful shutdown.
//! - Handlers take `http::Request<Body>` and return `http::Response<Body>`
//!   ([`Handler`], [`Server::start`]); or, where the cost of building those types per
//!   request matters, read a borrowed [`RequestView`] and write the response in place
//!   with a [`Responder`] ([`ViewHandler`], [`Server::start_view`]).
//! - Per request on the common path nothing is allocated and no timer is touched; an
//!   idle connection holds no buffer ([`buffers_in_use`]).
//! - The access log never blocks a serving core: lines go to a log thread in batches,
//!   and are dropped and counted if its sink does not keep up.
//!
//! ```
//! use std::io::{Read, Write};
//!
//! use http::{Request, Response};
//! use ringway_http::{Body, Config, Server};
//!
//! fn main() -> std::io::Result<()> {
//!     let rt = ringway::Runtime::new()?;
//!     let running = Server::new(Config::default()).start(&rt, "127.0.0.1:0", || {
//!         |req: Request<Body>| async move {
//!             Response::new(Body::from(format!("you asked for {}\n", req.uri())))
//!         }
//!     })?;
//!     // A client on a thread of its own; the server runs while `wait` drives the runtime.
//!     let addr = running.local_addr();
//!     let stop = running.shutdown_handle();
//!     let client = std::thread::spawn(move || {
//!         let mut response = String::new();
//!         let asked = std::net::TcpStream::connect(addr).and_then(|mut conn| {
//!             conn.write_all(b"GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")?;
//!             conn.read_to_string(&mut response)
//!         });
//!         stop.shutdown();
//!         asked.map(|_| response)
//!     });
//!     running.wait(&rt);
//!     assert!(client.join().unwrap()?.ends_with("you asked for /hello\n"));
//!     Ok(())
//! }
//! ```

mod accept;
mod body;
mod body_queue;
mod body_reader;
mod buffers;
pub mod chunked;
pub mod client;
mod config;
mod conn;
mod date;
mod deadline;
pub mod decoder;
mod error;
pub mod files;
mod framing;
mod future_box;
mod handler;
pub mod head;
mod header_maps;
mod input;
mod log;
mod mime;
mod origin_form;
mod prepared;
mod response;
mod select;
mod server;
mod server_state;
mod shutdown;
mod stats;
pub mod tls;
mod token;
mod transport;
mod view;
pub mod whole_buffer;
mod wire;

pub use body::{Body, BodyStream, FnStream};
pub use buffers::buffers_in_use;
pub use config::{Config, MAX_HEADERS_CAP};
pub use date::format_imf;
pub use decoder::{BodyDecoder, Event, RequestDecoder};
pub use error::{ErrorClass, HttpError};
pub use framing::{body_kind, parse_length, BodyKind};
pub use handler::{Handler, HttpTypes, ViewHandler};
pub use head::RawHead;
pub use prepared::PreparedResponse;
pub use response::{Responder, ResponseHead, Written};
pub use server::{Running, Server};
pub use shutdown::ShutdownHandle;
pub use stats::{Stats, StatsSnapshot};
pub use view::{RequestView, ViewBody};
