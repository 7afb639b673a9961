//! Holds N keep-alive connections open and idle, for the idle-connections scenario
//! (S12): each connection sends one request and reads its response (so the server has
//! set up whatever it keeps per connection), then stays silent. Prints `holding N` once
//! every response has arrived, and holds until its stdin closes or it is killed.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use clap::Parser;

/// Idle keep-alive connections.
#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long)]
    addr: SocketAddr,
    /// Connections to hold.
    #[arg(long, default_value_t = 10_000)]
    conns: usize,
    /// Request path.
    #[arg(long, default_value = "/plaintext")]
    path: String,
}

/// Reads one response framed by Content-Length.
fn read_response(s: &mut TcpStream) -> io::Result<()> {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before the response",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return Ok(());
            }
        }
    }
}

fn main() {
    let args = Args::parse();
    ringway_bench::suite::setup::raise_fd_limit();
    let req = format!("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", args.path);
    let mut conns = Vec::with_capacity(args.conns);
    // In batches: connect and send a batch, then read its responses, so that neither
    // the backlog nor the server's socket buffers see all of them at once.
    for batch in 0..args.conns.div_ceil(256) {
        let n = 256.min(args.conns - batch * 256);
        let mut fresh = Vec::with_capacity(n);
        for _ in 0..n {
            let mut s = match TcpStream::connect(args.addr) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!(
                        "idle-conns: connect {} ({} held): {e}",
                        args.addr,
                        conns.len()
                    );
                    std::process::exit(2);
                }
            };
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            if let Err(e) = s.write_all(req.as_bytes()) {
                eprintln!("idle-conns: write: {e}");
                std::process::exit(2);
            }
            fresh.push(s);
        }
        for s in &mut fresh {
            if let Err(e) = read_response(s) {
                eprintln!("idle-conns: response: {e}");
                std::process::exit(2);
            }
        }
        conns.extend(fresh);
    }
    println!("holding {}", conns.len());
    let _ = io::stdout().flush();
    // Hold until stdin closes (the harness ends us by pid otherwise).
    let mut sink = Vec::new();
    let _ = io::stdin().read_to_end(&mut sink);
    drop(conns);
}
