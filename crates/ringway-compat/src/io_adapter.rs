//! [`IoAdapter`]: tokio's I/O traits as hyper's, and hyper's as tokio's (what
//! hyper-util's `TokioIo` does, without hyper-util's runtime parts): a TLS stream from
//! tokio-rustls served by hyper, an upgraded hyper connection read by a WebSocket codec.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

/// tokio's I/O traits as hyper's.
#[cfg(feature = "tls")]
#[derive(Debug)]
pub(crate) struct IoAdapter<T>(pub T);

#[cfg(feature = "tls")]
impl<T: tokio::io::AsyncRead + Unpin> hyper::rt::Read for IoAdapter<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: tokio's `ReadBuf` only writes initialised bytes into the unfilled part
        // and never de-initialises any; `filled` counts the bytes it wrote.
        let filled = unsafe {
            let mut tbuf = tokio::io::ReadBuf::uninit(buf.as_mut());
            ready!(Pin::new(&mut self.get_mut().0).poll_read(cx, &mut tbuf))?;
            tbuf.filled().len()
        };
        // SAFETY: the first `filled` bytes of the cursor's unfilled part were just
        // written by the read above.
        unsafe { buf.advance(filled) };
        Poll::Ready(Ok(()))
    }
}

#[cfg(feature = "tls")]
impl<T: tokio::io::AsyncWrite + Unpin> hyper::rt::Write for IoAdapter<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// The other direction: hyper's I/O (an `Upgraded`) as tokio's.
#[cfg(feature = "ws")]
#[derive(Debug)]
pub(crate) struct TokioIo<T>(pub T);

#[cfg(feature = "ws")]
impl<T: hyper::rt::Read + Unpin> tokio::io::AsyncRead for TokioIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        tbuf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: hyper's `ReadBuf` only writes initialised bytes into the unfilled part
        // and never de-initialises any; `n` counts the bytes it wrote.
        let n = unsafe {
            let mut hbuf = hyper::rt::ReadBuf::uninit(tbuf.unfilled_mut());
            ready!(Pin::new(&mut self.get_mut().0).poll_read(cx, hbuf.unfilled()))?;
            hbuf.filled().len()
        };
        // SAFETY: the first `n` unfilled bytes were just written by the read above.
        unsafe { tbuf.assume_init(n) };
        tbuf.advance(n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(feature = "ws")]
impl<T: hyper::rt::Write + Unpin> tokio::io::AsyncWrite for TokioIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}
