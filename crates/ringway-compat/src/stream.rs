//! [`CompatStream`]: a ringway socket with readiness-style (`poll_*`) I/O.

use std::cell::{Ref, RefCell};
use std::fmt;
use std::io;
use std::ops::Deref;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use ringway::net::{TcpStream, UnixStream};
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf};

use crate::receiver::Receiver;
use crate::sender::{spawn_helper, Link, Outbox};
use crate::socket::StreamSocket;

/// A ringway [`TcpStream`] or [`UnixStream`] with tokio's `AsyncRead`, `AsyncWrite` and
/// `AsyncBufRead` (and, with the `hyper` feature, hyper's `rt::Read` and `rt::Write`;
/// with `futures-io`, the `futures_io` traits).
///
/// - **Reads** come from the socket's multishot receive, armed at the first read: the
///   kernel fills pool buffers as data arrives, a read copies from the current one into
///   the caller's buffer (`AsyncBufRead::poll_fill_buf` lends it without any copy), and
///   the buffer returns to the pool as soon as it is used up.
/// - **Writes** are copied into an output buffer, which `poll_flush` hands to the kernel
///   whole as one background send (the runtime's `send_all`: the driver owns the send
///   until the kernel has taken every byte, and wakes nobody when it has), so every
///   write before a flush goes in one send. Bytes nobody flushes go anyway, later in the
///   same loop turn, sent by the stream's helper task (a small task spawned at the
///   first write, parked when idle). One send per socket is in flight at a time: a
///   flush while one is does not wait; the helper hands over everything written
///   meanwhile, in one send, when it ends. Under [`Server`](crate::Server) the
///   server hands the bytes over after each poll of the connection instead (every
///   response of the poll in one send, no task). `poll_shutdown` waits until the kernel
///   has every byte, then shuts the write direction. A send error is reported by every
///   later write, flush and shutdown. Vectored writes gather the same way.
/// - **Cancellation**: all I/O state belongs to the stream, not to the futures that
///   poll it, so dropping a read or write future at any point loses no byte (reads
///   resume where they stopped, bytes a write accepted are still sent). Dropping the
///   stream cancels its receive (every pool buffer goes back); bytes already accepted
///   are still delivered (those behind a send in flight by the helper task, which
///   waits for it at most 30 s) before the socket closes.
/// - **Backpressure**: writes wait once 256 KiB are gathered behind a send in flight.
///
/// ```
/// use ringway::net::TcpStream;
/// use ringway_compat::CompatStream;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// # fn main() -> std::io::Result<()> {
/// # // An echo server on a thread of its own.
/// # let echo = std::net::TcpListener::bind("127.0.0.1:0")?;
/// # let addr = echo.local_addr()?;
/// # std::thread::spawn(move || -> std::io::Result<u64> {
/// #     let (conn, _) = echo.accept()?;
/// #     std::io::copy(&mut &conn, &mut &conn)
/// # });
/// ringway::start(async {
///     let tcp = TcpStream::connect(addr).await?; // e.g. "127.0.0.1:7000"
///     let mut stream = CompatStream::new(tcp);
///     stream.write_all(b"ping\n").await?;
///     stream.flush().await?;
///     let mut reply = [0u8; 5];
///     stream.read_exact(&mut reply).await?;
///     assert_eq!(&reply, b"ping\n");
///     Ok(())
/// })
/// # }
/// ```
pub struct CompatStream<S: StreamSocket> {
    receiver: Receiver,
    /// The socket and the outgoing bytes, shared with the server (which hands them
    /// over after each poll of the connection) and the helper task.
    link: Link<S>,
}

impl<S: StreamSocket> CompatStream<S> {
    /// Adapts `socket`. Nothing is submitted until the first read or write.
    pub fn new(mut socket: S) -> CompatStream<S> {
        CompatStream {
            receiver: Receiver::new(socket.recv_stream()),
            link: Rc::new(RefCell::new(Outbox::new(socket))),
        }
    }

    /// The socket (for its addresses and options). Do not hold it across an `.await`.
    pub fn get_ref(&self) -> Ref<'_, S> {
        Ref::map(self.link.borrow(), |o| &o.socket)
    }

    /// Bytes received and held in a pool buffer, not yet read.
    pub fn read_buffered(&self) -> usize {
        self.receiver.buffered()
    }

    /// Bytes accepted by writes that the kernel has not taken yet.
    pub fn write_pending(&self) -> usize {
        self.link.borrow().unsent()
    }

    pub(crate) fn receiver(&mut self) -> &mut Receiver {
        &mut self.receiver
    }

    /// Leaves the handing over of written bytes to the connection's owner, which calls
    /// [`Outbox::poll_owner`] through the returned link after each poll of the
    /// connection; `poll_flush` is then ready at once.
    #[cfg(feature = "hyper")]
    pub(crate) fn defer_to_owner(&self) -> Link<S> {
        self.link.borrow_mut().defer_to_owner();
        self.link.clone()
    }

    /// Runs `f` on the outbox, then spawns the helper task if `f` asked for it.
    fn with_outbox<R>(&self, f: impl FnOnce(&mut Outbox<S>) -> R) -> R {
        let mut outbox = self.link.borrow_mut();
        let r = f(&mut outbox);
        let spawn = outbox.take_spawn();
        drop(outbox);
        if spawn {
            spawn_helper(self.link.clone());
        }
        r
    }

    pub(crate) fn poll_write_bufs<B: Deref<Target = [u8]>>(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[B],
    ) -> Poll<io::Result<usize>> {
        self.with_outbox(|o| o.poll_write(cx, bufs))
    }

    #[inline]
    pub(crate) fn poll_flush_inner(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.link.borrow_mut().poll_flush(cx)
    }

    pub(crate) fn poll_shutdown_inner(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.link.borrow_mut().poll_shutdown(cx)
    }
}

impl From<TcpStream> for CompatStream<TcpStream> {
    fn from(s: TcpStream) -> Self {
        CompatStream::new(s)
    }
}

impl From<UnixStream> for CompatStream<UnixStream> {
    fn from(s: UnixStream) -> Self {
        CompatStream::new(s)
    }
}

impl<S: StreamSocket + fmt::Debug> fmt::Debug for CompatStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outbox = self.link.try_borrow();
        f.debug_struct("CompatStream")
            .field("socket", &outbox.as_ref().map(|o| &o.socket).ok())
            .field("read_buffered", &self.read_buffered())
            .field("write_pending", &outbox.as_ref().map(|o| o.unsent()).ok())
            .finish()
    }
}

impl<S: StreamSocket> Drop for CompatStream<S> {
    fn drop(&mut self) {
        // What is gathered goes now, or after the send in flight (the helper task).
        self.with_outbox(|o| o.close());
    }
}

impl<S: StreamSocket> AsyncRead for CompatStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().receiver().poll_read(cx, buf)
    }
}

impl<S: StreamSocket> AsyncBufRead for CompatStream<S> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.get_mut().receiver().poll_fill(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().receiver().consume(amt)
    }
}

impl<S: StreamSocket> AsyncWrite for CompatStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_bufs(cx, &[buf])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_bufs(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush_inner(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_shutdown_inner(cx)
    }
}
