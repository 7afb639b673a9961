//! The ringway stream sockets the adapter can wrap.

use std::io;
use std::net::Shutdown;

use ringway::buf::IoBuf;
use ringway::net::{Flush, RecvStream, SendAllFuture, TcpStream, UnixStream};

mod sealed {
    pub trait Sealed {}
    impl Sealed for ringway::net::TcpStream {}
    impl Sealed for ringway::net::UnixStream {}
}

/// A ringway stream socket that [`CompatStream`](crate::CompatStream) can adapt:
/// [`TcpStream`] and [`UnixStream`]. Sealed: the adapter relies on what these two
/// promise (one multishot receive per socket, background sends in order, one in flight
/// at a time).
pub trait StreamSocket: sealed::Sealed + Unpin + 'static {
    /// A multishot receive over the core's buffer pool.
    #[doc(hidden)]
    fn recv_stream(&mut self) -> RecvStream;
    /// A background send of all of `buf` (after the one in flight, if any).
    #[doc(hidden)]
    fn send_all<B: IoBuf + Unpin>(&mut self, buf: B) -> SendAllFuture<'_, B>;
    /// Waits for the background send in flight; the error that broke the stream.
    #[doc(hidden)]
    fn flush(&mut self) -> Flush<'_>;
    /// `shutdown(SHUT_WR)`.
    #[doc(hidden)]
    fn shutdown_write(&self) -> io::Result<()>;
    /// A task is about to wait for the send in flight through its buffer's drop.
    #[doc(hidden)]
    fn awaiting_send(&self);
}

impl StreamSocket for TcpStream {
    fn recv_stream(&mut self) -> RecvStream {
        self.recv_multishot()
    }
    fn send_all<B: IoBuf + Unpin>(&mut self, buf: B) -> SendAllFuture<'_, B> {
        self.send_all(buf)
    }
    fn flush(&mut self) -> Flush<'_> {
        self.flush()
    }
    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
    fn awaiting_send(&self) {
        self.awaiting_send()
    }
}

impl StreamSocket for UnixStream {
    fn recv_stream(&mut self) -> RecvStream {
        self.recv_multishot()
    }
    fn send_all<B: IoBuf + Unpin>(&mut self, buf: B) -> SendAllFuture<'_, B> {
        self.send_all(buf)
    }
    fn flush(&mut self) -> Flush<'_> {
        self.flush()
    }
    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
    fn awaiting_send(&self) {
        self.awaiting_send()
    }
}
