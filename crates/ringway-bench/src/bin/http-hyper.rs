//! HTTP peer: hyper 1 (http1) on tokio's multi-thread runtime, one worker per server
//! core, answering the canned responses through hyper's own framing. The service and
//! hyper's settings are [`ringway_bench::peers::hyper_hello`]'s, shared with
//! `http-hyper-ringway` (the same service on ringway).

use clap::Parser;
use hyper_util::rt::TokioIo;
use ringway_bench::peers::hyper_hello::{http1_builder, HelloService};
use ringway_bench::peers::kit::{announce, PeerArgs, BACKLOG};

/// tokio multi-thread + hyper 1.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    peer: PeerArgs,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse().peer;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_io()
        .build()?;
    let listener = ringway_bench::peers::listen::bind_listener(args.bind, BACKLOG, false)?;
    let addr = listener.local_addr()?;
    let service = HelloService::new(args.app);
    rt.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        announce("http-hyper", addr, args.threads)?;
        let builder = http1_builder();
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("accept: {e}");
                    continue;
                }
            };
            stream.set_nodelay(true)?;
            let conn = builder.serve_connection(TokioIo::new(stream), service.clone());
            tokio::spawn(async move {
                let _ = conn.await;
            });
        }
    })
}
