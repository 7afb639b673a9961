//! The ringway stream sockets the adapter can wrap.

use std::io;
use std::net::Shutdown;

use ringway::buf::IoBuf;
use ringway::net::{RecvStream, TcpStream, UnixStream, WriteFuture};

mod sealed {
    pub trait Sealed {}
    impl Sealed for ringway::net::TcpStream {}
    impl Sealed for ringway::net::UnixStream {}
}

/// A ringway stream socket that [`CompatStream`](crate::CompatStream) can adapt:
/// [`TcpStream`] and [`UnixStream`]. Sealed: the adapter relies on what these two
/// promise (one multishot receive per socket, sends ordered by `&mut self`).
pub trait StreamSocket: sealed::Sealed + Unpin + 'static {
    /// A multishot receive over the core's buffer pool.
    #[doc(hidden)]
    fn recv_stream(&mut self) -> RecvStream;
    /// One `send` of `buf`'s bytes.
    #[doc(hidden)]
    fn send<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteFuture<B>;
    /// `shutdown(SHUT_WR)`.
    #[doc(hidden)]
    fn shutdown_write(&self) -> io::Result<()>;
}

impl StreamSocket for TcpStream {
    fn recv_stream(&mut self) -> RecvStream {
        self.recv_multishot()
    }
    fn send<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteFuture<B> {
        self.write(buf)
    }
    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

impl StreamSocket for UnixStream {
    fn recv_stream(&mut self) -> RecvStream {
        self.recv_multishot()
    }
    fn send<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteFuture<B> {
        self.write(buf)
    }
    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}
