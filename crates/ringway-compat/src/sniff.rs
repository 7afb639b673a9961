//! Telling HTTP/2 with prior knowledge from HTTP/1.1 by a connection's first bytes, for
//! `Server::auto`.
//!
//! The first bytes are looked at in the pool buffer where they arrived, without taking
//! them; only when the preface is split over several receives are its first pieces
//! taken, and then put back, so the protocol chosen reads the connection from its
//! first byte either way.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::{ready, Poll};
use std::time::Duration;

use crate::socket::StreamSocket;
use crate::stream::CompatStream;
use ringway::sync::drain::{Ask, ConnGuard};

/// What an HTTP/2 client sends first (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long a new connection may stay silent before it is closed.
pub(crate) const SNIFF_TIMEOUT: Duration = Duration::from_secs(30);

/// Waits for enough of the first bytes to decide: `Some((io, true))` for HTTP/2,
/// `Some((io, false))` for anything else (HTTP/1.1 then judges it), `None` if the
/// connection failed, stayed silent for [`SNIFF_TIMEOUT`], or the server is shutting
/// down.
pub(crate) async fn sniff_h2<S: StreamSocket>(
    mut io: CompatStream<S>,
    guard: &ConnGuard,
) -> Option<(CompatStream<S>, bool)> {
    let mut seen = Vec::new();
    let mut deadline = pin!(ringway::time::sleep(SNIFF_TIMEOUT));
    let decision = poll_fn(|cx| {
        if guard.ask(cx) != Ask::Serve || deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        let receiver = io.receiver();
        loop {
            let chunk = match ready!(receiver.poll_fill(cx)) {
                Ok(chunk) => chunk,
                Err(_) => return Poll::Ready(None),
            };
            if chunk.is_empty() {
                return Poll::Ready(Some(false));
            }
            let at = seen.len();
            let n = chunk.len().min(PREFACE.len() - at);
            if chunk[..n] != PREFACE[at..at + n] {
                return Poll::Ready(Some(false));
            }
            if at + n == PREFACE.len() {
                return Poll::Ready(Some(true));
            }
            // A prefix of the preface, and this receive holds no more: keep it aside.
            seen.extend_from_slice(&chunk[..n]);
            receiver.consume(n);
        }
    })
    .await;
    if !seen.is_empty() {
        io.receiver().unread(seen);
    }
    decision.map(|h2| (io, h2))
}
