//! HTTP peer: the hyper service of `http-hyper` (same code, same hyper settings) served
//! on the ringway runtime through ringway-compat's `Server`: one core per server thread,
//! a `SO_REUSEPORT` listener per core, connections as `!Send` tasks of their core. Set
//! against `http-hyper` (tokio), it isolates the runtime under one hyper service.

use clap::Parser;
use ringway::Backend;
use ringway_bench::peers::hyper_hello::{http1_builder, HelloService};
use ringway_bench::peers::kit::{announce, PeerArgs, BACKLOG};
use ringway_compat::{ServeOptions, Server};

/// hyper 1 on ringway.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    peer: PeerArgs,
    /// ringway's I/O backend: `uring`, `epoll` or `auto`.
    #[arg(long, default_value = "uring", value_parser = parse_backend)]
    backend: Backend,
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    match s {
        "auto" => Ok(Backend::Auto),
        "uring" => Ok(Backend::Uring),
        "epoll" => Ok(Backend::Epoll),
        _ => Err(format!("expected auto, uring or epoll, not {s:?}")),
    }
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let peer = args.peer;
    let rt = ringway::Runtime::builder()
        .worker_threads(peer.threads.max(1))
        .backend(args.backend)
        .build()?;
    let options = ServeOptions {
        http1: http1_builder(),
        backlog: BACKLOG,
        nodelay: true,
        ..ServeOptions::default()
    };
    let service = HelloService::new(peer.app);
    let server = Server::http1(&rt.handle(), peer.bind, options, move || service.clone())?;
    announce(
        &format!("http-hyper-ringway ({})", rt.backend()),
        server.local_addr(),
        peer.threads,
    )?;
    rt.block_on(server.wait())?;
    Ok(())
}
