//! `futures_io`'s `AsyncRead` / `AsyncWrite` / `AsyncBufRead` for [`CompatStream`], with
//! the same semantics as the tokio traits.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use crate::receiver::SliceSink;
use crate::socket::StreamSocket;
use crate::stream::CompatStream;

impl<S: StreamSocket> futures_io::AsyncRead for CompatStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let receiver = self.get_mut().receiver();
        let mut sink = SliceSink { buf, filled: 0 };
        ready!(receiver.poll_read(cx, &mut sink))?;
        Poll::Ready(Ok(sink.filled))
    }
}

impl<S: StreamSocket> futures_io::AsyncBufRead for CompatStream<S> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let receiver = self.get_mut().receiver();
        receiver.poll_fill(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let receiver = self.get_mut().receiver();
        receiver.consume(amt)
    }
}

impl<S: StreamSocket> futures_io::AsyncWrite for CompatStream<S> {
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

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush_inner(cx)
    }

    /// Flushes, then shuts the write direction down.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_shutdown_inner(cx)
    }
}
