//! A TCP echo server on every core: one `SO_REUSEPORT` listener per core, a multishot
//! accept per listener, a multishot receive per connection, and every received pool
//! buffer written straight back (no copy).
//!
//! ```sh
//! cargo run --release -p ringway --example echo -- 127.0.0.1:7000
//! ```
//!
//! `RINGWAY_BACKEND=epoll` runs the same code on the epoll backend.

use std::net::SocketAddr;

use ringway::net::{ListenOptions, TcpListener, TcpStream};

fn main() -> std::io::Result<()> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7000".into())
        .parse()
        .map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("address: {e}"))
        })?;
    let rt = ringway::Runtime::new()?;
    println!("echo on {addr}, {} cores, {}", rt.cores(), rt.backend());
    let opts = ListenOptions {
        reuse_port: true,
        ..ListenOptions::default()
    };
    // Cores 1.. get their own listener; core 0 (this thread) serves in block_on.
    let handle = rt.handle();
    let others: Vec<_> = (1..rt.cores())
        .map(|core| {
            let opts = opts.clone();
            handle.spawn_on(core, move || async move {
                serve(TcpListener::bind_with(addr, &opts)?).await
            })
        })
        .collect();
    rt.block_on(async {
        let result = serve(TcpListener::bind_with(addr, &opts)?).await;
        drop(others);
        result
    })
}

async fn serve(listener: TcpListener) -> std::io::Result<()> {
    let mut incoming = listener.incoming();
    while let Some(stream) = incoming.next().await {
        match stream {
            Ok(stream) => ringway::spawn(echo(stream)).detach(),
            Err(e) => eprintln!("accept: {e}"),
        }
    }
    Ok(())
}

async fn echo(mut stream: TcpStream) {
    let mut rx = stream.recv_multishot();
    while let Some(Ok(chunk)) = rx.next().await {
        if stream.write_all(chunk).await.0.is_err() {
            return;
        }
    }
}
