//! Socket options (through socket2), a Unix datagram exchange, and a stream's borrowed
//! halves reading and writing at once in one task.
//!
//! ```sh
//! cargo run -p ringway --example sockets
//! ```

use std::time::Duration;

use ringway::net::{TcpListener, TcpStream, UnixDatagram};

#[ringway::main]
async fn main() -> std::io::Result<()> {
    // An echo server to talk to.
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    ringway::spawn(async move {
        let Ok((mut s, _)) = listener.accept().await else {
            return;
        };
        let mut rx = s.recv_multishot();
        while let Some(Ok(chunk)) = rx.next().await {
            if s.write_all(chunk).await.0.is_err() {
                break;
            }
        }
    })
    .detach();

    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    stream.set_keepalive(Some(Duration::from_secs(60)))?;
    stream.set_linger(Some(Duration::from_secs(1)))?;
    stream.set_recv_buffer_size(256 * 1024)?;
    println!(
        "nodelay {}, keepalive {:?}, linger {:?}, receive buffer {} bytes, ttl {}",
        stream.nodelay()?,
        stream.keepalive()?,
        stream.linger()?,
        stream.recv_buffer_size()?,
        stream.ttl()?
    );

    // Borrowed halves: the write and the read run together in this one task.
    let (mut reader, mut writer) = stream.split();
    let payload = vec![b'x'; 256 * 1024];
    let len = payload.len();
    let write = async move { writer.write_all(payload).await.0 };
    let read = async move {
        let mut got = 0;
        while got < len {
            let (r, _) = reader.read(vec![0; 64 * 1024]).await;
            got += r?;
        }
        Ok::<_, std::io::Error>(got)
    };
    let (w, r) = futures::join!(write, read);
    w?;
    println!("echoed {} bytes through the split halves", r?);

    // Unix datagrams between two named sockets.
    let dir = std::env::temp_dir().join(format!("ringway-example-sockets-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let server = UnixDatagram::bind(dir.join("server.sock"))?;
    let client = UnixDatagram::bind(dir.join("client.sock"))?;
    let (r, _) = client
        .send_to(b"ping".to_vec(), dir.join("server.sock"))
        .await;
    r?;
    let (r, buf) = server.recv_from(vec![0; 64]).await;
    let (n, from) = r?;
    println!("{:?} from {from:?}", String::from_utf8_lossy(&buf[..n]));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
