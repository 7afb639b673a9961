//! TCP echo server on tokio's `current_thread` runtime: the epoll baseline peer.
//!
//! One thread, one task per connection, a 16 KiB buffer per connection, `read` then
//! `write_all` of what was read, TCP_NODELAY on every accepted socket. This is the
//! idiomatic way to write an echo server on tokio; it is measured as is.

use std::io::Write;
use std::net::SocketAddr;

use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Echo server on tokio (current_thread).
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    bind: SocketAddr,
}

async fn echo(mut stream: TcpStream) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if stream.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(args.bind).await?;
        let mut out = std::io::stdout();
        writeln!(out, "listening on {}", listener.local_addr()?)?;
        out.flush()?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    stream.set_nodelay(true)?;
                    tokio::spawn(echo(stream));
                }
                // EMFILE and friends: report and keep serving the connections we have.
                Err(e) => eprintln!("accept: {e}"),
            }
        }
    })
}
