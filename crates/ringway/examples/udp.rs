//! UDP: a server that answers each datagram with it reversed, and a client that sends
//! three, with a timeout on each answer.
//!
//! ```sh
//! cargo run -p ringway --example udp
//! ```

use std::time::Duration;

use ringway::net::UdpSocket;
use ringway::time::timeout;

#[ringway::main]
async fn main() -> std::io::Result<()> {
    let server = UdpSocket::bind("127.0.0.1:0")?;
    let server_addr = server.local_addr()?;
    ringway::spawn(async move {
        let mut buf = vec![0u8; 1500];
        loop {
            let (r, b) = server.recv_from(buf).await;
            let Ok((n, from)) = r else { return };
            let mut answer = b[..n].to_vec();
            answer.reverse();
            let _ = server.send_to(answer, from).await;
            buf = b;
        }
    })
    .detach();

    let client = UdpSocket::bind("127.0.0.1:0")?;
    client.connect(server_addr)?;
    for word in ["ring", "way", "datagram"] {
        let (r, _) = client.send(word.as_bytes().to_vec()).await;
        r?;
        let (r, buf) = timeout(Duration::from_secs(2), client.recv(vec![0u8; 1500])).await?;
        println!("{word} -> {}", String::from_utf8_lossy(&buf[..r?]));
    }
    Ok(())
}
