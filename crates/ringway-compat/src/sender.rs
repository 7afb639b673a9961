//! The write side: writes are gathered, and a small task per stream sends them, one
//! `send` at a time.
//!
//! A readiness-style `poll_write` borrows the caller's bytes only for the call, while a
//! completion-style send needs a buffer that outlives it, so the bytes are copied once,
//! into the gather buffer, and the write is done. The stream's **send task** (spawned on
//! the stream's core at its first write) submits what was gathered when it runs, which
//! is later in the same loop turn: every write made before then (pipelined responses, a
//! TLS record after a header) goes out in one `send`. While a send is in flight, writes
//! keep gathering and go together in the next one; two sends on one socket are never in
//! flight together (they could be reordered). Two buffers alternate (the one in flight
//! and the one gathering): no allocation per write in steady state.
//!
//! The send task, not the caller, owns the progress of a send: it resubmits the rest of
//! a short send and moves on to what was gathered whether or not the stream is polled
//! again. So `poll_flush` is ready as soon as every accepted byte is queued with it (the
//! way a kernel socket buffer takes bytes in tokio's model), and a caller such as hyper
//! goes on to its next request without waiting a loop turn for the completion. A send
//! error is reported by every later write, flush and shutdown. `poll_shutdown` waits
//! until the kernel has taken every byte, then shuts the write direction.
//!
//! A write future dropped at any point loses nothing that `poll_write` reported as
//! written. A stream dropped with bytes still queued leaves them to its send task, which
//! delivers them (for at most [`LINGER`]) and then closes the socket, as closing a
//! kernel socket with unsent bytes does.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::ops::Deref;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use ringway::buf::{IoBuf, Slice};
use ringway::net::WriteFuture;

use crate::socket::StreamSocket;

/// How many bytes may wait behind a send in flight before writes wait (backpressure).
pub(crate) const MAX_GATHER: usize = 256 * 1024;

/// How long the send task of a dropped stream keeps delivering its queued bytes before
/// it gives up and closes the socket.
pub(crate) const LINGER: Duration = Duration::from_secs(30);

/// A buffer larger than this is not kept for reuse once its send is done, so that a
/// connection that once sent a large body does not hold the memory while idle.
const KEEP_CAPACITY: usize = 64 * 1024;

/// The socket and its outgoing bytes, shared by the stream and its send task.
pub(crate) type Link<S> = Rc<RefCell<Outbox<S>>>;

/// Bytes accepted for sending, the send in flight, and who waits for what.
pub(crate) struct Outbox<S> {
    pub socket: S,
    gather: Vec<u8>,
    inflight: Option<WriteFuture<Slice<Vec<u8>>>>,
    /// Bytes of the send in flight.
    inflight_len: usize,
    /// The buffer of the last finished send, emptied, for the next gather.
    spare: Vec<u8>,
    /// A send failed: the bytes behind it cannot be delivered in order, so every later
    /// write, flush and shutdown reports this error.
    failed: Option<Failure>,
    /// The write direction is shut down.
    shut: bool,
    /// A caller waiting for room (a full gather buffer) or for every byte to be sent
    /// (shutdown).
    writer: Option<Waker>,
    /// The send task's waker, once it has run; `spawned` says whether it exists.
    task: Option<Waker>,
    spawned: bool,
    /// The stream was dropped: the task delivers what is left, then ends.
    closed: bool,
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

impl<S: StreamSocket> Outbox<S> {
    pub(crate) fn new(socket: S) -> Outbox<S> {
        Outbox {
            socket,
            gather: Vec::new(),
            inflight: None,
            inflight_len: 0,
            spare: Vec::new(),
            failed: None,
            shut: false,
            writer: None,
            task: None,
            spawned: false,
            closed: false,
        }
    }

    /// Bytes accepted but not yet taken by the kernel.
    pub(crate) fn unsent(&self) -> usize {
        self.gather.len() + self.inflight_len
    }

    fn idle(&self) -> bool {
        self.gather.is_empty() && self.inflight.is_none()
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

    /// Accepts as many of `bufs`' bytes as there is room for (all of them unless
    /// [`MAX_GATHER`] bytes already wait), or registers `cx` for room.
    pub(crate) fn poll_write<B: Deref<Target = [u8]>>(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[B],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        let room = MAX_GATHER.saturating_sub(self.gather.len());
        if room == 0 {
            set_waker(&mut self.writer, cx.waker());
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
        Poll::Ready(Ok(taken))
    }

    /// Ready once every accepted byte is queued with the send task (which the caller
    /// then kicks); an earlier send error if there was one.
    pub(crate) fn poll_flush(&mut self) -> Poll<io::Result<()>> {
        match &self.failed {
            Some(f) => Poll::Ready(Err(f.error())),
            None => Poll::Ready(Ok(())),
        }
    }

    /// Waits until the kernel has taken every byte, then shuts the write direction.
    pub(crate) fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.shut {
            return Poll::Ready(Ok(()));
        }
        if let Some(f) = &self.failed {
            return Poll::Ready(Err(f.error()));
        }
        if !self.idle() {
            set_waker(&mut self.writer, cx.waker());
            return Poll::Pending;
        }
        match self.socket.shutdown_write() {
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

    /// What the stream must do so that queued bytes move: `Spawn` the send task, `Wake`
    /// it, or nothing (no bytes waiting, or a send in flight whose completion will wake
    /// it).
    pub(crate) fn kick(&mut self) -> Kick {
        if self.gather.is_empty() || self.inflight.is_some() {
            return Kick::None;
        }
        if !self.spawned {
            self.spawned = true;
            return Kick::Spawn;
        }
        match &self.task {
            Some(w) => Kick::Wake(w.clone()),
            // Spawned, not yet run: it will find the bytes when it does.
            None => Kick::None,
        }
    }

    /// Called by the stream's drop: the task finishes what is queued and ends.
    pub(crate) fn close(&mut self) -> Option<Waker> {
        self.closed = true;
        if !self.idle() && !self.spawned {
            // Bytes were written but never kicked (cannot happen through the stream's
            // API, which kicks after each write): nothing will send them.
            tracing::debug!(unsent = self.unsent(), "stream dropped with unsent bytes");
        }
        self.task.take()
    }

    /// Moves sends along with `cx` (the send task's): reaps the one in flight
    /// (resubmitting the rest of a short send), then submits what was gathered. Ready
    /// once the kernel has taken every accepted byte, or at the first error.
    fn pump(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
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
                    Ok(n) if n > 0 && begin + n < end => self.start(buf, begin + n, end),
                    Ok(n) if n > 0 => self.recycle(buf),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => self.start(buf, begin, end),
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
                self.start(buf, 0, len);
            } else {
                return Poll::Ready(Ok(()));
            }
        }
    }

    /// Puts `buf[begin..end]` in flight (submitted at its first poll, in `pump`).
    fn start(&mut self, buf: Vec<u8>, begin: usize, end: usize) {
        self.inflight_len = end - begin;
        self.inflight = Some(self.socket.send(Slice::new(buf, begin, end)));
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
}

/// What [`Outbox::kick`] asks the stream to do.
pub(crate) enum Kick {
    None,
    Spawn,
    Wake(Waker),
}

fn set_waker(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(w) if w.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

/// Starts the send task of `link` on the current core.
pub(crate) fn spawn_send_task<S: StreamSocket>(link: &Link<S>) {
    ringway::spawn(SendTask {
        link: link.clone(),
        linger: None,
    })
    .detach();
}

/// The send task: runs whenever bytes were gathered with no send in flight, and at each
/// send's completion; ends when its stream is gone and everything is sent (or failed,
/// or the linger time ran out). Holding the link, it keeps the socket open until then.
struct SendTask<S> {
    link: Link<S>,
    linger: Option<ringway::time::Sleep>,
}

impl<S: StreamSocket> Future for SendTask<S> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        // The stream's owner may hold the socket (`get_ref`) across an await: try again
        // on the next turn rather than wait on it.
        let Ok(mut outbox) = this.link.try_borrow_mut() else {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        };
        set_waker(&mut outbox.task, cx.waker());
        let done = outbox.pump(cx).is_ready();
        if let Some(w) = outbox.writer.take() {
            // Room again, or everything sent (shutdown), or an error to report.
            if done || outbox.gather.len() < MAX_GATHER {
                w.wake();
            } else {
                outbox.writer = Some(w);
            }
        }
        if !outbox.closed {
            return Poll::Pending;
        }
        if done {
            return Poll::Ready(());
        }
        drop(outbox);
        let linger = this
            .linger
            .get_or_insert_with(|| ringway::time::sleep(LINGER));
        if Pin::new(linger).poll(cx).is_ready() {
            tracing::debug!("a dropped stream's last bytes were not taken in time; closing");
            // Dropping the link cancels the send in flight and closes the socket.
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
