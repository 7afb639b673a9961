//! # ringway
//!
//! An io_uring-native, thread-per-core async runtime, with an epoll fallback behind the
//! same API.
//!
//! - **Fast path on by default**: rings are set up with `SINGLE_ISSUER | DEFER_TASKRUN`
//!   (degrading flag by flag where the kernel says `EINVAL`), one `io_uring_enter` per
//!   loop turn, multishot accept, multishot receive over a per-core provided buffer ring.
//! - **Falls back honestly**: if io_uring is refused (seccomp, `io_uring_disabled`,
//!   memlock, old kernel) the runtime uses edge-triggered epoll and says why
//!   ([`Runtime::backend`]). `RINGWAY_BACKEND=uring|epoll|auto` overrides.
//! - **Owned buffers**: `read(buf)` returns `(io::Result<usize>, buf)`.
//! - **Cancellation by drop is safe**: the driver keeps buffers alive until the kernel is
//!   done, closes fds accepted after a drop, and returns pool buffers.
//!
//! ```
//! use ringway::net::{TcpListener, TcpStream};
//!
//! #[ringway::main]
//! async fn main() -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     // The server: one multishot accept, one multishot receive per connection.
//!     ringway::spawn(async move {
//!         let mut incoming = listener.incoming();
//!         while let Some(stream) = incoming.next().await {
//!             let Ok(mut stream) = stream else { continue };
//!             ringway::spawn(async move {
//!                 let mut rx = stream.recv_multishot();
//!                 while let Some(Ok(chunk)) = rx.next().await {
//!                     // Pool buffers can be written straight back: no copy.
//!                     if stream.write_all(chunk).await.0.is_err() {
//!                         break;
//!                     }
//!                 }
//!             })
//!             .detach();
//!         }
//!     })
//!     .detach();
//!
//!     // A client: owned buffers go in and come back with the result.
//!     let mut client = TcpStream::connect(addr).await?;
//!     let (res, _) = client.write_all(&b"hello"[..]).await;
//!     res?;
//!     let (res, buf) = client.read(vec![0u8; 16]).await;
//!     assert_eq!(&buf[..res?], b"hello");
//!     Ok(())
//! }
//! ```
//!
//! The layers, bottom up: [`driver`] (io_uring | epoll, one op API, usable without the
//! executor), [`buf`] (owned buffers and the provided-buffer pool), [`runtime`]
//! (executor, tasks, `spawn_blocking`), [`time`], [`net`], [`fs`]; and what a service
//! needs beside them: [`signal`] (ctrl-c and signal streams), [`process`] (children
//! waited for through pidfds), [`sync`] (channels across cores, locks on one core),
//! [`task`] (`JoinSet`, `task_local!`).
//!
//! Coming from tokio: `docs/from-tokio.md` in the repository maps each tokio name to
//! ringway's, and says what changes (owned buffers, `!Send` tasks). Runtime-agnostic
//! crates (`tokio::sync`, `async-channel`, `futures`) work on ringway as they are.

pub mod buf;
pub mod driver;
pub mod fs;
pub mod io;
pub mod net;
pub mod process;
pub mod runtime;
pub mod signal;
pub mod sync;
pub mod task;
pub mod time;

pub use driver::{Backend, BackendInfo};
pub use ringway_macros::{main, test};
pub use runtime::{spawn, spawn_blocking, Builder, Handle, JoinError, JoinHandle, Runtime};

/// Builds a default runtime and runs `fut` to completion on it: the short way to start
/// without the attribute.
pub fn start<F: std::future::Future>(fut: F) -> F::Output {
    Runtime::new()
        .expect("ringway: failed to start the runtime")
        .block_on(fut)
}
