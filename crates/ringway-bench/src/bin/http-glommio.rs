//! HTTP peer: glommio 0.9 (io_uring), one executor per server core, each with its own
//! listener (glommio binds with `SO_REUSEPORT`), the raw HTTP loop. glommio registers
//! `io_memory` bytes of buffers per executor (10 MiB by default), more than this
//! machine's 8 MiB memlock limit, so it is set to 2 MiB.

use clap::Parser;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement};
use ringway_bench::peers::kit::{announce, PeerArgs, RawConn, READ_BUF};

/// glommio per core, raw HTTP loop.
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

fn main() -> std::io::Result<()> {
    let args = Args::parse().peer;
    // The first executor resolves port 0; the others bind the port it got.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut handles = Vec::new();
    let mut addr = args.bind;
    for i in 0..args.threads.max(1) {
        let tx = tx.clone();
        let app = args.app;
        let bind = addr;
        let h = LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(2 << 20)
            .name(&format!("core{i}"))
            .spawn(move || async move {
                let listener = match TcpListener::bind(bind) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = tx.send(listener.local_addr().map_err(|e| e.to_string()));
                loop {
                    match listener.accept().await {
                        Ok(stream) => {
                            let _ = stream.set_nodelay(true);
                            glommio::spawn_local(serve(stream, RawConn::new(app))).detach();
                        }
                        Err(e) => eprintln!("accept: {e}"),
                    }
                }
            })
            .map_err(|e| std::io::Error::other(format!("glommio executor: {e}")))?;
        handles.push(h);
        addr = rx
            .recv()
            .map_err(|_| std::io::Error::other("executor died"))?
            .map_err(std::io::Error::other)?;
    }
    announce("http-glommio", addr, args.threads)?;
    for h in handles {
        h.join()
            .map_err(|e| std::io::Error::other(format!("{e}")))?;
    }
    Ok(())
}
