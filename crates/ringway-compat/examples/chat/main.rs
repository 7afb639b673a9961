//! A chat service on ringway: the small real service of issue 25, using most of what a
//! service needs in its first hour.
//!
//! - **TLS, HTTP/2 and HTTP/1.1** on one port: an axum app served by `Server::tls`
//!   (rustls; ALPN picks h2 or http/1.1), a certificate given by `--cert`/`--key` or
//!   made at start (`tls.rs`).
//! - **WebSocket rooms** (`session.rs`): `ringway_compat::ws`, axum's extractor on
//!   ringway; each session runs on its connection's core.
//! - **Cross-core fan-out** (`rooms.rs`): each room's owner core numbers its messages
//!   and sends them to every core's inbox (`ringway::sync::mpsc`, lock-free); each core
//!   hands them to its own subscribers. Core-local maps, no lock on the way.
//! - **A REST API** (`api.rs`): history (a cross-core request to the room's owner,
//!   answered on a `oneshot`), posting, a long poll, the worker's status; a request
//!   timeout from `ringway_compat::timeout` (tower-http's layer on ringway's timers).
//! - **A worker process** (`worker.rs`): a word filter (`sed`) spawned with
//!   `ringway::process::Command`, piped stdio through the ring, waited for through a
//!   pidfd, restarted if it dies.
//! - **Files** (`rooms.rs`): with `--data DIR`, room histories saved at shutdown and
//!   loaded at start with `ringway::fs`.
//! - **Graceful shutdown** on ctrl-c or `SIGTERM` (`stop.rs`, `ringway::signal`): stop
//!   accepting, finish the requests in flight, send every WebSocket client a close
//!   frame, save the rooms, stop and reap the worker, exit 0.
//!
//! ```sh
//! cargo run -p ringway-compat --example chat -- --cert-out /tmp/chat.pem
//! # another terminal: post, read the history (HTTP/2), join with any WebSocket client
//! curl --cacert /tmp/chat.pem -H 'content-type: application/json' \
//!      -d '{"from":"curl","text":"darn, hello"}' https://localhost:8443/rooms/lobby/messages
//! curl --cacert /tmp/chat.pem https://localhost:8443/rooms/lobby/history
//! websocat -k 'wss://localhost:8443/ws/lobby?name=ada'   # -k: the certificate is self-signed
//! # ctrl-c the server: the WebSocket clients get a close frame (1001), the worker is
//! # reaped, the process exits 0
//! ```
//!
//! Options: see `--help`. The first line printed names the address (with `--bind
//! 127.0.0.1:0`, the port picked); `crates/ringway-compat/tests/chat_example.rs` runs it.

mod api;
mod options;
mod rooms;
mod session;
mod stop;
mod tls;
mod worker;

use std::io;
use std::process::ExitCode;

use ringway_compat::{ServeOptions, Server, TowerService};

use crate::api::App;
use crate::options::{Options, USAGE};
use crate::rooms::Rooms;
use crate::stop::StopSignals;
use crate::worker::Worker;

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("chat: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chat: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: Options) -> io::Result<()> {
    let tls = tls::config(&options)?;
    let mut builder = ringway::Runtime::builder();
    builder.worker_threads(options.threads);
    if let Some(backend) = options.backend {
        builder.backend(backend); // else RINGWAY_BACKEND, or the probe, chooses
    }
    let rt = builder.build()?;
    let backend = match rt.backend().kind {
        ringway::Backend::Uring => "io_uring",
        _ => "epoll",
    };
    let handle = rt.handle();
    rt.block_on(async move {
        // From here on ctrl-c and SIGTERM are ours: they start the graceful shutdown.
        let mut stop = StopSignals::listen()?;
        let (rooms, hubs) = Rooms::start(&handle, options.history, options.data.clone()).await?;
        let (worker, supervisor) = match Worker::start(options.worker.clone()).await {
            Ok(w) => w,
            Err(e) => {
                rooms.exit(hubs).await;
                return Err(e);
            }
        };
        let app = App {
            rooms: rooms.clone(),
            worker: worker.clone(),
        };
        let router = api::router(app, options.request_timeout);
        let serve = ServeOptions {
            drain_timeout: options.drain,
            ..ServeOptions::default()
        };
        let server = match Server::tls(&handle, options.bind.as_str(), serve, tls, move || {
            TowerService(router.clone())
        }) {
            Ok(s) => s,
            Err(e) => {
                worker.stop(supervisor).await;
                rooms.exit(hubs).await;
                return Err(e);
            }
        };
        let cores = match handle.cores() {
            1 => "1 core".to_string(),
            n => format!("{n} cores"),
        };
        println!(
            "chat on ringway ({backend}, {cores}) listening on https://{}",
            server.local_addr()
        );

        let signal = stop.recv().await;
        println!("{signal}: shutting down");
        // Stop accepting; hyper finishes what each connection has read, then closes it.
        server.shutdown_handle().shutdown();
        // Every WebSocket client gets its close frame; long polls end.
        let sessions = rooms.close(options.drain).await;
        println!("closed {sessions} WebSocket sessions");
        let report = server.wait().await?;
        println!(
            "served {} connections ({} failed, {} cut at the drain deadline)",
            report.connections, report.failed, report.aborted
        );
        // Nothing posts any more: the histories are final.
        let saved = rooms.persist().await;
        let summary = worker.stop(supervisor).await;
        println!(
            "the worker filtered {} messages and was restarted {} times",
            summary.filtered, summary.restarts
        );
        rooms.exit(hubs).await;
        match (saved, &options.data) {
            (Ok(n), Some(dir)) => println!("saved {n} rooms to {}", dir.display()),
            (Ok(_), None) => {}
            (Err(e), _) => return Err(io::Error::new(e.kind(), format!("saving the rooms: {e}"))),
        }
        println!("stopped cleanly");
        Ok(())
    })
}
