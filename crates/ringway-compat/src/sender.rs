//! The write side: writes are gathered and go out in one `send` at a time.
//!
//! A readiness-style `poll_write` borrows the caller's bytes only for the call, while a
//! completion-style send needs a buffer that outlives it, so the bytes are copied once,
//! into the gather buffer. When no send is in flight the gathered bytes are submitted at
//! once (the driver passes them to the kernel at the end of this loop turn); while one
//! is, every write appends to the gather buffer and the whole lot goes out in the next
//! single send. So a burst of writes within a turn (pipelined responses, a TLS record
//! after a header) costs one send, and two sends on one socket are never in flight
//! together (they could be reordered).
//!
//! Two buffers alternate (the one in flight and the one gathering): no allocation per
//! write in steady state.
//!
//! Like a `BufWriter`, accepted bytes are only guaranteed to reach the kernel once
//! `poll_flush` (or `poll_shutdown`) returns ready. A write future dropped at any point
//! loses nothing that `poll_write` reported as written: those bytes belong to the
//! stream, not to the future.

use std::future::Future;
use std::io;
use std::ops::Deref;
use std::pin::Pin;
use std::task::{Context, Poll};

use ringway::buf::{IoBuf, Slice};
use ringway::net::WriteFuture;

use crate::socket::StreamSocket;

/// How many bytes may wait behind a send in flight before writes wait (backpressure).
pub(crate) const MAX_GATHER: usize = 256 * 1024;

/// A buffer larger than this is not kept for reuse once its send is done, so that a
/// connection that once sent a large body does not hold the memory while idle.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Bytes accepted for sending, and the send in flight.
pub(crate) struct Sender {
    gather: Vec<u8>,
    inflight: Option<WriteFuture<Slice<Vec<u8>>>>,
    /// Bytes of the send in flight.
    inflight_len: usize,
    /// The buffer of the last finished send, emptied, for the next gather.
    spare: Vec<u8>,
    /// A send failed: the bytes behind it cannot be delivered in order, so every later
    /// write, flush and shutdown reports this error.
    failed: Option<Failure>,
    shut: bool,
}

/// A copy of a send error (io::Error is not Clone).
#[derive(Debug, Clone)]
struct Failure {
    kind: io::ErrorKind,
    os: Option<i32>,
    text: String,
}

impl Failure {
    fn of(e: &io::Error) -> Failure {
        Failure {
            kind: e.kind(),
            os: e.raw_os_error(),
            text: e.to_string(),
        }
    }

    fn error(&self) -> io::Error {
        match self.os {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(self.kind, self.text.clone()),
        }
    }
}

impl Sender {
    pub fn new() -> Sender {
        Sender {
            gather: Vec::new(),
            inflight: None,
            inflight_len: 0,
            spare: Vec::new(),
            failed: None,
            shut: false,
        }
    }

    /// Bytes accepted but not yet acknowledged by the kernel.
    pub fn unsent(&self) -> usize {
        self.gather.len() + self.inflight_len
    }

    fn check(&self) -> io::Result<()> {
        if let Some(f) = &self.failed {
            return Err(f.error());
        }
        if self.shut {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "write after shutdown",
            ));
        }
        Ok(())
    }

    /// Moves sends along: reaps the one in flight (resubmitting the rest of a short
    /// send), then submits what was gathered. Ready once the kernel has taken every
    /// accepted byte.
    fn pump<S: StreamSocket>(
        &mut self,
        cx: &mut Context<'_>,
        socket: &mut S,
    ) -> Poll<io::Result<()>> {
        loop {
            if let Some(send) = &mut self.inflight {
                let (res, slice) = match Pin::new(send).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(out) => out,
                };
                self.inflight = None;
                self.inflight_len = 0;
                let (begin, end) = (slice.begin(), slice.begin() + slice.bytes_init());
                let buf = slice.into_inner();
                match res {
                    Ok(n) if n > 0 && begin + n < end => {
                        // A short send: the rest goes next, before anything gathered.
                        self.start(socket, buf, begin + n, end);
                    }
                    Ok(n) if n > 0 => self.recycle(buf),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                        self.start(socket, buf, begin, end);
                    }
                    Ok(_) => {
                        return Poll::Ready(Err(self.fail(io::Error::new(
                            io::ErrorKind::WriteZero,
                            "the socket took no bytes",
                        ))))
                    }
                    Err(e) => return Poll::Ready(Err(self.fail(e))),
                }
            } else if !self.gather.is_empty() {
                let buf = std::mem::replace(&mut self.gather, std::mem::take(&mut self.spare));
                let len = buf.len();
                self.start(socket, buf, 0, len);
            } else {
                return Poll::Ready(Ok(()));
            }
        }
    }

    /// Puts `buf[begin..end]` in flight (submitted at the next poll of the send).
    fn start<S: StreamSocket>(&mut self, socket: &mut S, buf: Vec<u8>, begin: usize, end: usize) {
        self.inflight_len = end - begin;
        self.inflight = Some(socket.send(Slice::new(buf, begin, end)));
    }

    fn recycle(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() <= KEEP_CAPACITY && self.spare.capacity() == 0 {
            buf.clear();
            self.spare = buf;
        }
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed = Some(Failure::of(&e));
        self.gather = Vec::new();
        self.spare = Vec::new();
        e
    }

    /// Accepts as many of `bufs`' bytes as there is room for (all of them unless
    /// [`MAX_GATHER`] bytes already wait behind a send in flight), and starts a send if
    /// none is in flight.
    pub fn poll_write<S: StreamSocket, B: Deref<Target = [u8]>>(
        &mut self,
        cx: &mut Context<'_>,
        socket: &mut S,
        bufs: &[B],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        // Reap a finished send first: its completion may free room, or carry an error.
        if let Poll::Ready(Err(e)) = self.pump(cx, socket) {
            return Poll::Ready(Err(e));
        }
        let room = MAX_GATHER.saturating_sub(self.gather.len());
        if room == 0 {
            // Full behind a send in flight; `pump` registered for its completion.
            return Poll::Pending;
        }
        let mut taken = 0;
        for b in bufs {
            let n = b.len().min(room - taken);
            self.gather.extend_from_slice(&b[..n]);
            taken += n;
            if taken == room {
                break;
            }
        }
        if let Poll::Ready(Err(e)) = self.pump(cx, socket) {
            // The bytes were accepted; the error is the socket's and every later call
            // reports it.
            tracing::debug!(error = %e, "send failed right after a write");
        }
        Poll::Ready(Ok(taken))
    }

    /// Ready once every accepted byte has been taken by the kernel.
    pub fn poll_flush<S: StreamSocket>(
        &mut self,
        cx: &mut Context<'_>,
        socket: &mut S,
    ) -> Poll<io::Result<()>> {
        if let Some(f) = &self.failed {
            return Poll::Ready(Err(f.error()));
        }
        self.pump(cx, socket)
    }

    /// Flushes, then shuts the write direction down (the peer reads end of stream).
    pub fn poll_shutdown<S: StreamSocket>(
        &mut self,
        cx: &mut Context<'_>,
        socket: &mut S,
    ) -> Poll<io::Result<()>> {
        if self.shut {
            return Poll::Ready(Ok(()));
        }
        std::task::ready!(self.poll_flush(cx, socket))?;
        match socket.shutdown_write() {
            Ok(()) => {}
            // The peer is already gone: there is nothing left to shut.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
        self.shut = true;
        self.gather = Vec::new();
        self.spare = Vec::new();
        Poll::Ready(Ok(()))
    }
}
