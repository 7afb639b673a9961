//! HTTP peer: tokio `current_thread` runtimes, one per server core, each with its own
//! `SO_REUSEPORT` listener, and a minimal hand-written HTTP loop (pingora's shape): read
//! into a per-connection buffer, count the request heads, write that many canned
//! responses in one `write_all`.

use clap::Parser;
use ringway_bench::peers::kit::{announce, listeners, PeerArgs, RawConn, READ_BUF};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// tokio current_thread per core, raw HTTP loop.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    peer: PeerArgs,
}

async fn serve(mut stream: TcpStream, mut conn: RawConn) {
    let mut buf = vec![0u8; READ_BUF];
    let mut out = Vec::with_capacity(READ_BUF);
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if conn.on_bytes(&buf[..n], &mut out) > 0 {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
}

fn core(
    listener: std::net::TcpListener,
    app: ringway_bench::peers::canned::App,
) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    rt.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    stream.set_nodelay(true)?;
                    tokio::spawn(serve(stream, RawConn::new(app)));
                }
                Err(e) => eprintln!("accept: {e}"),
            }
        }
    })
}

fn main() -> std::io::Result<()> {
    let args = Args::parse().peer;
    let ls = listeners(args.bind, args.threads)?;
    let addr = ls[0].local_addr()?;
    let threads: Vec<_> = ls
        .into_iter()
        .map(|l| std::thread::spawn(move || core(l, args.app)))
        .collect();
    announce("http-tokio", addr, args.threads)?;
    for t in threads {
        t.join()
            .map_err(|_| std::io::Error::other("a core panicked"))??;
    }
    Ok(())
}
