//! TLS for [`Server::tls`](crate::Server::tls): the handshake of one connection, through
//! tokio-rustls over the connection's [`CompatStream`], and the protocol ALPN chose.
//!
//! tokio-rustls uses tokio's I/O traits only, which the adapter has. The handshake's
//! records are gathered in the connection's outbox like any write, and handed to the
//! kernel after each poll of the handshake (the server's deferred sends), so a flight
//! of handshake messages goes in one send.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use ringway::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::core_bound::CoreBound;
use crate::sender::Link;
use crate::stream::CompatStream;
use crate::upgrades::Watched;
use ringway::sync::drain::{Ask, ConnGuard};

/// The TLS stream a TLS connection is served over.
pub(crate) type ServerTls = TlsStream<CoreBound<Watched<CompatStream<TcpStream>>>>;

/// The ALPN protocols [`Server::tls`](crate::Server::tls) offers when the configuration
/// names none: HTTP/2 first, then HTTP/1.1.
pub(crate) fn with_alpn(config: Arc<rustls::ServerConfig>) -> Arc<rustls::ServerConfig> {
    if !config.alpn_protocols.is_empty() {
        return config;
    }
    let mut config = (*config).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Runs the server side of the handshake on `io`, handing what it writes to the kernel
/// after each poll through `link`. `None` if the handshake failed, took longer than
/// `timeout`, or the server is shutting down (the connection is then dropped, which
/// closes it).
pub(crate) async fn handshake(
    acceptor: &TlsAcceptor,
    io: Watched<CompatStream<TcpStream>>,
    link: &Link<TcpStream>,
    guard: &ConnGuard,
    timeout: Duration,
) -> Option<ServerTls> {
    let mut accept = pin!(acceptor.accept(CoreBound::new(io)));
    let mut deadline = pin!(ringway::time::sleep(timeout));
    poll_fn(|cx| {
        if guard.ask(cx) != Ask::Serve {
            return Poll::Ready(None);
        }
        let r = accept.as_mut().poll(cx);
        if let Ok(mut outbox) = link.try_borrow_mut() {
            outbox.poll_owner(cx);
        }
        match r {
            Poll::Ready(Ok(tls)) => Poll::Ready(Some(tls)),
            Poll::Ready(Err(e)) => {
                tracing::debug!(error = %e, "TLS handshake failed");
                Poll::Ready(None)
            }
            Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                tracing::debug!("TLS handshake timed out");
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Whether the handshake chose HTTP/2.
pub(crate) fn is_h2(tls: &ServerTls) -> bool {
    tls.get_ref().1.alpn_protocol() == Some(b"h2")
}
