//! TCP echo server on monoio 0.2 with its io_uring driver: the "as shipped" peer, and
//! with `--coop-taskrun` the same binary with the ring flags that make the difference.
//!
//! monoio 0.2.4 does expose `RuntimeBuilder::uring_builder(io_uring::Builder)` (its
//! io-uring dependency is 0.6, hence the renamed `io-uring-06` dependency here), so
//! `--coop-taskrun` builds the ring with `IORING_SETUP_COOP_TASKRUN |
//! IORING_SETUP_TASKRUN_FLAG`. Without the flag the ring is built exactly as monoio
//! ships it. One thread, one task per connection, an owned 16 KiB buffer per connection
//! passed to `read` and `write_all` (completion-style I/O), TCP_NODELAY on accepted
//! sockets.

use std::io::Write;
use std::net::SocketAddr;

use clap::Parser;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::{IoUringDriver, RuntimeBuilder};

/// Echo server on monoio (io_uring driver).
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    bind: SocketAddr,
    /// Build the ring with COOP_TASKRUN | TASKRUN_FLAG instead of monoio's defaults.
    #[arg(long)]
    coop_taskrun: bool,
}

async fn echo(mut stream: TcpStream) {
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        let (res, b) = stream.read(buf).await;
        let n = match res {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        debug_assert_eq!(b.len(), n);
        let (res, b) = stream.write_all(b).await;
        if res.is_err() {
            return;
        }
        buf = b;
    }
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let mut urb = io_uring_06::IoUring::builder();
    if args.coop_taskrun {
        urb.setup_coop_taskrun().setup_taskrun_flag();
    }
    let mut rt = RuntimeBuilder::<IoUringDriver>::new()
        .uring_builder(urb)
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(args.bind)?;
        let mut out = std::io::stdout();
        writeln!(out, "listening on {}", listener.local_addr()?)?;
        out.flush()?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    stream.set_nodelay(true)?;
                    monoio::spawn(echo(stream));
                }
                Err(e) => eprintln!("accept: {e}"),
            }
        }
    })
}
