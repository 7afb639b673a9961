//! One client connection, plain or TLS, with the two operations the engine needs: send
//! a buffer, receive the next chunk of bytes.
//!
//! Plain connections receive through one multishot receive (pool buffers, parsed in
//! place: no submission per read on io_uring). TLS connections feed the same stream of
//! records through rustls and hand out the plaintext.
//! The same receive serves both backends (the epoll backend emulates it).

use std::io::{self, Read as _, Write as _};
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ringway::buf::PoolBuf;
use ringway::net::RecvStream;
use ringway::net::TcpStream;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

/// Bytes received: a pool buffer (plain) or decrypted plaintext (TLS).
#[derive(Debug)]
pub enum Chunk {
    /// Straight from the kernel's buffer ring.
    Pool(PoolBuf),
    /// Decrypted by rustls.
    Owned(Vec<u8>),
}

impl Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Chunk::Pool(b) => b,
            Chunk::Owned(v) => v,
        }
    }
}

/// TLS parameters of a connection.
#[derive(Debug, Clone)]
pub struct TlsTarget {
    /// Client configuration.
    pub config: Arc<ClientConfig>,
    /// Name to verify and send as SNI.
    pub name: ServerName<'static>,
}

/// How bytes are received: one multishot receive over the core's buffer pool.
#[derive(Debug)]
struct Rx(RecvStream);

impl Rx {
    fn new(stream: &mut TcpStream) -> Rx {
        Rx(stream.recv_multishot())
    }

    async fn next(&mut self, _stream: &mut TcpStream) -> Option<io::Result<Chunk>> {
        self.0.next().await.map(|r| r.map(Chunk::Pool))
    }
}

/// A connected stream. Field order matters: the receive is cancelled before the socket
/// closes.
#[derive(Debug)]
pub struct Conn {
    rx: Rx,
    stream: TcpStream,
    tls: Option<Box<ClientConnection>>,
}

impl Conn {
    /// Connects (and, for TLS, completes the handshake) within `timeout`.
    pub async fn connect(
        addr: SocketAddr,
        tls: Option<&TlsTarget>,
        timeout: Duration,
    ) -> io::Result<Conn> {
        let fut = async {
            let mut stream = TcpStream::connect_timeout(&addr, timeout).await?;
            stream.set_nodelay(true)?;
            let rx = Rx::new(&mut stream);
            let mut conn = Conn {
                rx,
                stream,
                tls: None,
            };
            if let Some(t) = tls {
                let c = ClientConnection::new(t.config.clone(), t.name.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                conn.tls = Some(Box::new(c));
                conn.handshake().await?;
            }
            Ok(conn)
        };
        match ringway::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("connect to {addr} timed out"),
            )),
        }
    }

    async fn handshake(&mut self) -> io::Result<()> {
        loop {
            self.flush_tls().await?;
            let tls = self.tls.as_mut().expect("TLS connection");
            if !tls.is_handshaking() {
                return Ok(());
            }
            let Some(chunk) = self.rx.next(&mut self.stream).await else {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed during the TLS handshake",
                ));
            };
            self.feed_tls(&chunk?)?;
        }
    }

    /// Sends all of `data` (encrypting it for TLS).
    pub async fn send(&mut self, data: Bytes) -> io::Result<()> {
        match self.tls.as_mut() {
            None => self.stream.write_all(data).await.0,
            Some(tls) => {
                tls.writer().write_all(&data)?;
                self.flush_tls().await
            }
        }
    }

    /// The next bytes from the peer; `None` at the end of the stream.
    pub async fn recv(&mut self) -> io::Result<Option<Chunk>> {
        if self.tls.is_none() {
            return self.rx.next(&mut self.stream).await.transpose();
        }
        loop {
            let tls = self.tls.as_mut().expect("TLS connection");
            let mut out = vec![0u8; 16 * 1024];
            match tls.reader().read(&mut out) {
                Ok(0) => return Ok(None),
                Ok(n) => {
                    out.truncate(n);
                    return Ok(Some(Chunk::Owned(out)));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Closed without close_notify: for HTTP framing, the end of the stream.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) => return Err(e),
            }
            match self.rx.next(&mut self.stream).await {
                None => {
                    let tls = self.tls.as_mut().expect("TLS connection");
                    tls.read_tls(&mut &[][..])?;
                    tls.process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                }
                Some(chunk) => self.feed_tls(&chunk?)?,
            }
            self.flush_tls().await?;
        }
    }

    /// Gives received TLS records to rustls.
    fn feed_tls(&mut self, mut data: &[u8]) -> io::Result<()> {
        let tls = self.tls.as_mut().expect("TLS connection");
        while !data.is_empty() {
            tls.read_tls(&mut data)?;
            tls.process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
        Ok(())
    }

    /// Sends whatever rustls has to send.
    async fn flush_tls(&mut self) -> io::Result<()> {
        let Some(tls) = self.tls.as_mut() else {
            return Ok(());
        };
        if !tls.wants_write() {
            return Ok(());
        }
        let mut out = Vec::new();
        while tls.wants_write() {
            tls.write_tls(&mut out)?;
        }
        self.stream.write_all(out).await.0
    }
}
