//! The read side: bytes come from the multishot receive's pool buffers.
//!
//! The receive is armed once, at the first read, and then fills pool buffers on its own;
//! a read copies out of the current buffer straight into the caller's (one copy: the
//! kernel wrote into the pool buffer, the read moves the bytes to where the caller
//! wants them). [`Receiver::poll_fill`] lends the buffer itself, for `AsyncBufRead`
//! callers that parse in place: no copy at all. A buffer goes back to the pool the
//! moment its last byte is consumed.
//!
//! All state lives here, not in the caller's future, so a read future dropped at any
//! point loses nothing: the bytes wait for the next read.

use std::io;
use std::task::{ready, Context, Poll};

use ringway::buf::PoolBuf;
use ringway::net::RecvStream;

/// Where a read puts its bytes (tokio's `ReadBuf`, hyper's `ReadBufCursor`, a slice).
pub(crate) trait ReadSink {
    /// Bytes the sink can still take.
    fn room(&self) -> usize;
    /// Appends `bytes` (never more than `room()`).
    fn put(&mut self, bytes: &[u8]);
}

impl ReadSink for tokio::io::ReadBuf<'_> {
    fn room(&self) -> usize {
        self.remaining()
    }
    fn put(&mut self, bytes: &[u8]) {
        self.put_slice(bytes)
    }
}

/// A plain slice and how much of it is filled.
#[cfg(feature = "futures-io")]
pub(crate) struct SliceSink<'a> {
    pub buf: &'a mut [u8],
    pub filled: usize,
}

#[cfg(feature = "futures-io")]
impl ReadSink for SliceSink<'_> {
    fn room(&self) -> usize {
        self.buf.len() - self.filled
    }
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.filled..self.filled + bytes.len()].copy_from_slice(bytes);
        self.filled += bytes.len();
    }
}

/// Received bytes not yet read.
pub(crate) struct Receiver {
    rx: RecvStream,
    /// The pool buffer being read, and how much of it is consumed.
    held: Option<PoolBuf>,
    pos: usize,
    /// The receive ended (end of stream, or after an error was returned).
    eof: bool,
    /// Bytes read and put back ([`Receiver::unread`]), served before anything else.
    replay: Vec<u8>,
    replay_pos: usize,
}

impl Receiver {
    pub(crate) fn new(rx: RecvStream) -> Receiver {
        Receiver {
            rx,
            held: None,
            pos: 0,
            eof: false,
            replay: Vec::new(),
            replay_pos: 0,
        }
    }

    /// The unread bytes of the current pool buffer, receiving the next one if it is
    /// used up. An empty slice means end of stream.
    pub(crate) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        if self.replay_pos < self.replay.len() {
            return Poll::Ready(Ok(&self.replay[self.replay_pos..]));
        }
        if self.held.as_ref().is_some_and(|b| self.pos < b.len()) {
            let b = self.held.as_ref().expect("checked");
            return Poll::Ready(Ok(&b[self.pos..]));
        }
        // Used up: back to the pool before waiting for the next one.
        self.held = None;
        self.pos = 0;
        if self.eof {
            return Poll::Ready(Ok(&[]));
        }
        match ready!(self.rx.poll_next(cx)) {
            Some(Ok(buf)) => {
                let b = self.held.insert(buf);
                Poll::Ready(Ok(&b[..]))
            }
            Some(Err(e)) => {
                self.eof = true;
                Poll::Ready(Err(e))
            }
            None => {
                self.eof = true;
                Poll::Ready(Ok(&[]))
            }
        }
    }

    /// Marks `n` bytes of what [`poll_fill`](Self::poll_fill) returned as read.
    pub(crate) fn consume(&mut self, n: usize) {
        if self.replay_pos < self.replay.len() {
            self.replay_pos = (self.replay_pos + n).min(self.replay.len());
            if self.replay_pos == self.replay.len() {
                self.replay = Vec::new();
                self.replay_pos = 0;
            }
            return;
        }
        if let Some(b) = &self.held {
            self.pos = (self.pos + n).min(b.len());
            if self.pos == b.len() {
                self.held = None;
                self.pos = 0;
            }
        }
    }

    /// Copies received bytes into `sink`: those of the current pool buffer (or of the
    /// next one, waiting for it only if none is at hand). `Ready(Ok(()))` with nothing
    /// copied means end of stream.
    ///
    /// One buffer per call, never a look at the next: a request fits in one, and asking
    /// the receive again right away would find it empty (a wasted poll per read).
    #[inline]
    pub(crate) fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        sink: &mut impl ReadSink,
    ) -> Poll<io::Result<()>> {
        let room = sink.room();
        if room == 0 {
            return Poll::Ready(Ok(()));
        }
        if self.held.is_some() || self.replay_pos < self.replay.len() || self.eof {
            return self.poll_read_held(cx, sink);
        }
        // Nothing at hand (the usual case: the last read used its buffer up): the next
        // buffer goes straight to the sink, and back to the pool at once if it fits.
        match ready!(self.rx.poll_next(cx)) {
            Some(Ok(buf)) => {
                let n = buf.len().min(room);
                sink.put(&buf[..n]);
                if n < buf.len() {
                    self.held = Some(buf);
                    self.pos = n;
                }
                Poll::Ready(Ok(()))
            }
            Some(Err(e)) => {
                self.eof = true;
                Poll::Ready(Err(e))
            }
            None => {
                self.eof = true;
                Poll::Ready(Ok(()))
            }
        }
    }

    /// [`poll_read`](Self::poll_read) from what is held (a partly read buffer, bytes put
    /// back) or after the end.
    #[inline(never)]
    fn poll_read_held(
        &mut self,
        cx: &mut Context<'_>,
        sink: &mut impl ReadSink,
    ) -> Poll<io::Result<()>> {
        let bytes = ready!(self.poll_fill(cx))?;
        let n = bytes.len().min(sink.room());
        sink.put(&bytes[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }

    /// Bytes received and held (in a pool buffer, or put back), not yet read.
    pub(crate) fn buffered(&self) -> usize {
        self.replay.len() - self.replay_pos + self.held.as_ref().map_or(0, |b| b.len() - self.pos)
    }

    /// Puts `bytes` back in front of everything not yet read (a protocol sniffer that
    /// needed more than one pool buffer to decide).
    #[cfg(feature = "http2")]
    pub(crate) fn unread(&mut self, mut bytes: Vec<u8>) {
        bytes.extend_from_slice(&self.replay[self.replay_pos..]);
        self.replay = bytes;
        self.replay_pos = 0;
    }
}
