//! What a connection reads from and writes to: plain TCP (multishot receive into pool
//! buffers, one send per batch) or TLS over TCP (see [`crate::tls`]).
//!
//! Sends run in the background (`TcpStream::send_all`): a connection hands its batch of
//! responses to the kernel and goes back to reading without waiting for the send to
//! end, so nobody is woken when it does. At most one is in flight per connection (the
//! next waits for it); the connection bounds how long one may take (the send timeout)
//! by looking at [`Transport::poll_flush`] only when that time has come.

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::task::{Context, Poll};

use ringway::net::{RecvStream, TcpStream};

use crate::buffers::PooledBuf;
use crate::input::Input;

/// A byte stream the connection state machine drives.
pub(crate) trait Transport {
    /// Whether [`poll_recv`](Self::poll_recv) receives (plain TCP): the connection then
    /// waits for input without a future per wait. Transports whose receive must await
    /// other work (TLS sends handshake records) leave it false.
    const POLL_RECV: bool = false;
    /// Waits for input and adds it to `input`; returns how many bytes came, 0 at the end.
    fn recv(&mut self, input: &mut Input) -> impl std::future::Future<Output = io::Result<usize>>;
    /// The poll form of [`recv`](Self::recv), where [`POLL_RECV`](Self::POLL_RECV) says
    /// there is one (never called otherwise).
    fn poll_recv(&mut self, _cx: &mut Context<'_>, _input: &mut Input) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(io::Error::other("no poll form of receive")))
    }
    /// Starts sending all of `buf` in the background (one send where the peer takes it
    /// all): ready once the send has started, after the one in flight, if any, ended.
    /// The buffer goes back to its pool when the kernel is done with it.
    fn send(&mut self, buf: PooledBuf) -> impl std::future::Future<Output = io::Result<()>>;
    /// [`send`](Self::send) without a future, when it can start at once (nothing sent
    /// is in flight): `Ok` with what starting it gave. Otherwise `buf` comes back, and
    /// the caller awaits `send`. (The serve loop's common case: a future kept for it
    /// would be part of every connection's state.) Transports whose send must await
    /// other work always give it back.
    fn try_send(
        &mut self,
        _cx: &mut Context<'_>,
        buf: PooledBuf,
    ) -> Result<io::Result<()>, PooledBuf> {
        Err(buf)
    }
    /// Ready once nothing sent is in flight, with the error that broke the stream, if
    /// one did.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    /// Ends both directions at once: a send in flight to a peer that does not read
    /// fails instead of holding the socket.
    fn abort(&self);
    /// Ends the write direction (after a TLS `close_notify` where there is one).
    fn close_write(&mut self) -> impl std::future::Future<Output = ()>;
    /// The socket, if bytes spliced into it go to the peer unchanged (not under TLS).
    fn splice_target(&self) -> Option<RawFd> {
        None
    }
    /// Whether the peer sent bytes that no receive has delivered yet (still in the
    /// socket, or decrypted and not yet read). Asked only when the server stops: a
    /// request waiting there is answered before the connection closes.
    fn bytes_waiting(&mut self) -> bool;
}

/// Whether bytes wait in the receive queue of socket `fd` (`FIONREAD`).
pub(crate) fn socket_has_input(fd: RawFd) -> bool {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one `c_int` through its argument, which points at `n`,
    // alive for the call; an fd that is not a socket fails with an error, not a write.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    r == 0 && n > 0
}

/// Plain TCP.
pub(crate) struct Tcp {
    stream: TcpStream,
    rx: RecvStream,
}

impl Tcp {
    pub(crate) fn new(mut stream: TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        let rx = stream.recv_multishot();
        Tcp { stream, rx }
    }
}

impl Transport for Tcp {
    const POLL_RECV: bool = true;

    async fn recv(&mut self, input: &mut Input) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_recv(cx, input)).await
    }

    // Always inline: called twice per request from the serve loop (the receive that
    // completes, then the one that registers), a call and its moves each.
    #[inline(always)]
    fn poll_recv(&mut self, cx: &mut Context<'_>, input: &mut Input) -> Poll<io::Result<usize>> {
        self.rx.poll_next(cx).map(|next| match next {
            Some(Ok(buf)) => {
                let n = buf.len();
                input.push_pool(buf);
                Ok(n)
            }
            Some(Err(e)) => Err(e),
            None => Ok(0),
        })
    }

    // The runtime's send future itself, not an async wrapper around it.
    fn send(&mut self, buf: PooledBuf) -> impl Future<Output = io::Result<()>> {
        self.stream.send_all(buf)
    }

    // Always inline: once per request, from the serve loop.
    #[inline(always)]
    fn try_send(
        &mut self,
        cx: &mut Context<'_>,
        buf: PooledBuf,
    ) -> Result<io::Result<()>, PooledBuf> {
        let mut send = self.stream.send_all(buf);
        match std::pin::Pin::new(&mut send).poll(cx) {
            Poll::Ready(r) => Ok(r),
            // Waiting for the send in flight: it has not taken the buffer.
            Poll::Pending => Err(send.into_unsent().expect("a pending send keeps its buffer")),
        }
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.stream.flush()).poll(cx)
    }

    fn abort(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    async fn close_write(&mut self) {
        let _ = self.stream.close_write().await;
    }

    fn splice_target(&self) -> Option<RawFd> {
        Some(self.stream.as_raw_fd())
    }

    fn bytes_waiting(&mut self) -> bool {
        socket_has_input(self.stream.as_raw_fd())
    }
}
