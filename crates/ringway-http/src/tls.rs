//! TLS through rustls: the record layer is driven by the runtime's owned buffers.
//! Ciphertext arrives as pool buffers from the multishot receive and is fed to
//! `ServerConnection::read_tls`; outgoing records are gathered by `write_tls` into one
//! buffer lent by the core's pool and leave in one send, so a batch of pipelined
//! responses is still one send. Plaintext is copied from rustls straight into the
//! connection's input.

use std::future::Future;
use std::io::{self, BufRead as _, Write as _};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use ringway::net::{RecvStream, TcpStream};
use rustls::ServerConnection;

use crate::buffers::PooledBuf;
use crate::input::Input;
use crate::transport::Transport;

/// A rustls server configuration from PEM files: ALPN `http/1.1`, TLS 1.2 and 1.3, and
/// session resumption (see [`server_config_from`]).
pub fn server_config(cert: &Path, key: &Path) -> io::Result<Arc<rustls::ServerConfig>> {
    let certs = rustls_pemfile::certs(&mut io::BufReader::new(std::fs::File::open(cert)?))
        .collect::<Result<Vec<_>, _>>()?;
    if certs.is_empty() {
        return Err(io::Error::other(format!(
            "no certificate in {}",
            cert.display()
        )));
    }
    let key = rustls_pemfile::private_key(&mut io::BufReader::new(std::fs::File::open(key)?))?
        .ok_or_else(|| io::Error::other(format!("no private key in {}", key.display())))?;
    server_config_from(certs, key)
}

/// As [`server_config`], from DER values already loaded.
///
/// Resumption, as `tests/tls.rs` (`what_resumes_tls12_and_tls13_sessions`) checks it:
/// TLS 1.3 sessions resume by stateless tickets (rustls's ticketer, keys rotated);
/// TLS 1.2 sessions by the same tickets for clients that take them (rustls's and
/// curl's do), and by session id, from a cache of 4096 sessions per server, for
/// clients that do not.
pub fn server_config_from(
    certs: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
) -> io::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(io::Error::other)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    cfg.session_storage = rustls::server::ServerSessionMemoryCache::new(4096);
    cfg.ticketer = rustls::crypto::ring::Ticketer::new().map_err(io::Error::other)?;
    Ok(Arc::new(cfg))
}

/// TLS over TCP.
pub(crate) struct Tls {
    stream: TcpStream,
    rx: RecvStream,
    conn: ServerConnection,
}

impl Tls {
    pub(crate) fn new(mut stream: TcpStream, cfg: Arc<rustls::ServerConfig>) -> io::Result<Tls> {
        let _ = stream.set_nodelay(true);
        let rx = stream.recv_multishot();
        Ok(Tls {
            stream,
            rx,
            conn: ServerConnection::new(cfg).map_err(io::Error::other)?,
        })
    }

    /// Sends every record rustls has queued, in one background send.
    async fn flush_tls(&mut self) -> io::Result<()> {
        if !self.conn.wants_write() {
            return Ok(());
        }
        let mut wire = PooledBuf::take();
        while self.conn.wants_write() {
            self.conn.write_tls(&mut *wire)?;
        }
        self.stream.send_all(wire).await
    }
}

impl Transport for Tls {
    async fn recv(&mut self, input: &mut Input) -> io::Result<usize> {
        loop {
            // Plaintext already decrypted?
            let mut reader = self.conn.reader();
            match reader.fill_buf() {
                Ok(plain) => {
                    let n = plain.len();
                    if n > 0 {
                        input.own_mut().extend_from_slice(plain);
                    }
                    reader.consume(n);
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // Handshake records to send?
            self.flush_tls().await?;
            let Some(chunk) = self.rx.next().await else {
                return Ok(0);
            };
            let chunk = chunk?;
            let mut rest: &[u8] = &chunk;
            while !rest.is_empty() {
                self.conn.read_tls(&mut rest)?;
                if let Err(e) = self.conn.process_new_packets() {
                    // Tell the peer why (an alert), then give up.
                    let _ = self.flush_tls().await;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            }
            if let Err(e) = self.conn.process_new_packets() {
                let _ = self.flush_tls().await;
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        }
    }

    async fn send(&mut self, buf: PooledBuf) -> io::Result<()> {
        self.conn.writer().write_all(&buf)?;
        drop(buf);
        self.flush_tls().await
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.stream.flush()).poll(cx)
    }

    fn abort(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    fn bytes_waiting(&mut self) -> bool {
        let plain = self.conn.reader().fill_buf().is_ok_and(|b| !b.is_empty());
        plain || crate::transport::socket_has_input(self.stream.as_raw_fd())
    }

    async fn close_write(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush_tls().await;
        let _ = self.stream.flush().await;
        let _ = self.stream.close_write().await;
    }
}
