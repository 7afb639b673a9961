//! HTTP peer: monoio 0.2 (io_uring), one runtime per server core with its own
//! `SO_REUSEPORT` listener, the raw HTTP loop over owned buffers. As shipped, or with
//! `--coop-taskrun` the ring built with `COOP_TASKRUN | TASKRUN_FLAG` (monoio 0.2.4
//! exposes the io-uring 0.6 builder; the flags decide its speed).

use clap::Parser;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::{IoUringDriver, RuntimeBuilder};
use ringway_bench::peers::canned::App;
use ringway_bench::peers::kit::{announce, listeners, PeerArgs, RawConn, READ_BUF};

/// monoio per core, raw HTTP loop.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    peer: PeerArgs,
    /// Build the ring with COOP_TASKRUN | TASKRUN_FLAG instead of monoio's defaults.
    #[arg(long)]
    coop_taskrun: bool,
}

async fn serve(mut stream: TcpStream, mut conn: RawConn) {
    let mut buf = Vec::with_capacity(READ_BUF);
    let mut out = Vec::with_capacity(READ_BUF);
    loop {
        let (res, b) = stream.read(buf).await;
        buf = b;
        let n = match res {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if conn.on_bytes(&buf[..n], &mut out) > 0 {
            let (res, o) = stream.write_all(out).await;
            if res.is_err() {
                return;
            }
            out = o;
            out.clear();
        }
        buf.clear();
    }
}

fn core(listener: std::net::TcpListener, app: App, coop: bool) -> std::io::Result<()> {
    let mut urb = io_uring_06::IoUring::builder();
    if coop {
        urb.setup_coop_taskrun().setup_taskrun_flag();
    }
    let mut rt = RuntimeBuilder::<IoUringDriver>::new()
        .uring_builder(urb)
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::from_std(listener)?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    stream.set_nodelay(true)?;
                    monoio::spawn(serve(stream, RawConn::new(app)));
                }
                Err(e) => eprintln!("accept: {e}"),
            }
        }
    })
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let p = args.peer;
    let ls = listeners(p.bind, p.threads)?;
    let addr = ls[0].local_addr()?;
    let coop = args.coop_taskrun;
    let threads: Vec<_> = ls
        .into_iter()
        .map(|l| std::thread::spawn(move || core(l, p.app, coop)))
        .collect();
    announce("http-monoio", addr, p.threads)?;
    for t in threads {
        t.join()
            .map_err(|_| std::io::Error::other("a core panicked"))??;
    }
    Ok(())
}
