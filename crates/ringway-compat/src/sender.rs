//! The write side: writes are gathered into an output buffer, which goes to the kernel
//! in one background send (the runtime's `send_all`), submitted by the task that wrote.
//!
//! A readiness-style `poll_write` borrows the caller's bytes only for the call, while a
//! completion-style send needs a buffer that outlives it, so the bytes are copied once,
//! into the output buffer, and the write is done. The buffer is handed to the kernel
//! whole, as a background send: the driver keeps it until the kernel has taken every
//! byte (it resubmits the rest of a short send itself), then drops it, and nobody is
//! woken. So a request costs no extra task, no poll and no wake on the write side.
//! Dropping the buffer brings it back to its stream (see [`OutBuf`]): no allocation per
//! write in steady state.
//!
//! When the buffer is handed over:
//! - for a plain tokio or hyper user, by `poll_flush`, at once; or by the stream's
//!   helper task (a small task, spawned at the first write, parked while there is
//!   nothing to do), which a write that finds the buffer empty wakes: it runs later in
//!   the same loop turn, so bytes go out even if nobody flushes (as on a kernel
//!   socket), and, while an earlier send is in flight (at most one per socket, so that
//!   two never reorder), it sends what was written meanwhile when that send ends:
//!   `poll_flush` does not wait for it, and every flush made meanwhile (a codec
//!   flushing each frame) goes in that one next send;
//! - by the owner of the connection, at the end of each poll of it, once
//!   [`Outbox::defer_to_owner`] was called (the server does this for hyper's
//!   connections): `poll_flush` is then ready at once, and every response written in
//!   one poll of the connection (16 pipelined responses, a body after its head) goes in
//!   one send. If a send is still in flight then, the owner's task is woken when it
//!   ends, and hands over the rest on that poll;
//! - by a write that finds [`MAX_GATHER`] bytes gathered (backpressure: it waits while
//!   the previous send is in flight).
//!
//! A send error is kept and reported by every later write, flush and shutdown.
//! `poll_shutdown` waits until the kernel has taken every byte, then shuts the write
//! direction. A write future dropped at any point loses nothing that `poll_write`
//! reported as written. A stream dropped with bytes not yet handed over hands them over
//! itself, or, if a send is still in flight, leaves them to the helper task, which
//! waits for it at most [`LINGER`]; the runtime closes the socket once the last send
//! has ended, as closing a kernel socket with unsent bytes does.
//!
//! Who waits for the send in flight is told by its buffer ([`OutBuf`]'s drop wakes the
//! stream's task and the helper), never through the runtime's single waiter slot, so
//! the two never take each other's place. Each tells the runtime before it waits
//! (`awaiting_send`): the buffer says its drop wakes nobody, so that on io_uring a send
//! no task waits for does not end the core's wait (one enter per request at one
//! connection, as for the runtime's own server).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::ops::Deref;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use ringway::buf::IoBuf;

use crate::socket::StreamSocket;

/// How many bytes may wait behind a send in flight before writes wait (backpressure).
pub(crate) const MAX_GATHER: usize = 256 * 1024;

/// How long the helper task of a dropped stream waits for the send in flight before it
/// gives up on the bytes behind it and lets the socket close.
pub(crate) const LINGER: Duration = Duration::from_secs(30);

/// A buffer larger than this is not kept for reuse once its send is done, so that a
/// connection that once sent a large body does not hold the memory while idle.
const KEEP_CAPACITY: usize = 64 * 1024;

/// The socket and its outgoing bytes, shared by the stream, the connection's owner (the
/// server) and the stream's helper task while it runs.
pub(crate) type Link<S> = Rc<RefCell<Outbox<S>>>;

/// Bytes accepted for sending and what became of the last send.
pub(crate) struct Outbox<S> {
    pub socket: S,
    /// Accepted, not yet handed to the kernel.
    gather: Vec<u8>,
    /// The send in flight, as its buffer reports it.
    sending: Rc<Sending>,
    /// A send failed: the bytes behind it cannot be delivered in order, so every later
    /// write, flush and shutdown reports this error.
    failed: Option<Failure>,
    /// The write direction is shut down.
    shut: bool,
    /// The connection's owner hands the bytes over after each poll (`poll_flush` does
    /// not).
    deferred: bool,
    /// The stream was dropped: only its helper task (if any) acts from now on.
    closed: bool,
    /// The helper task exists (see [`spawn_helper`]).
    helper: bool,
    /// Its waker while it is parked with nothing to do.
    helper_parked: Option<Waker>,
    /// The stream must spawn the helper task (see [`Outbox::take_spawn`]).
    spawn: bool,
}

/// The background send in flight, shared by the outbox and the buffer the driver holds:
/// the buffer says when the kernel is done with it by being dropped.
#[derive(Default)]
struct Sending {
    /// Bytes of the send in flight; 0 when none is.
    len: Cell<usize>,
    /// The buffer of the last finished send, emptied, for the next gather.
    spare: Cell<Vec<u8>>,
    /// Woken when the send in flight ends: the stream's (or its owner's) task, and the
    /// helper task.
    writer: Cell<Option<Waker>>,
    helper: Cell<Option<Waker>>,
}

/// Which of [`Sending`]'s waiters a poll registers as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Waiter {
    Writer,
    Helper,
}

impl Sending {
    /// Has `waker` woken when the send in flight ends.
    fn wait(&self, who: Waiter, waker: &Waker) {
        let slot = match who {
            Waiter::Writer => &self.writer,
            Waiter::Helper => &self.helper,
        };
        let w = match slot.take() {
            Some(w) if w.will_wake(waker) => w,
            _ => waker.clone(),
        };
        slot.set(Some(w));
    }
}

/// The output buffer of one background send. The driver drops it when the kernel has
/// taken every byte (or the send failed): it then comes back to its stream as the next
/// gather buffer and marks the send finished.
struct OutBuf {
    bytes: Vec<u8>,
    sending: Rc<Sending>,
}

// SAFETY: the bytes are a `Vec`'s heap allocation, which does not move when the
// `OutBuf` does and is not touched until it is dropped; `len` and `capacity` are the
// Vec's.
unsafe impl IoBuf for OutBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.bytes.len()
    }
    fn bytes_total(&self) -> usize {
        self.bytes.capacity()
    }
    /// Its drop wakes the stream's tasks only if they wait for it, and each tells the
    /// runtime first (`Outbox::wait`): on io_uring a send no task waits for then costs
    /// the core's wait nothing (one enter per request at one connection).
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

impl Drop for OutBuf {
    fn drop(&mut self) {
        self.sending.len.set(0);
        if self.bytes.capacity() <= KEEP_CAPACITY {
            let mut bytes = std::mem::take(&mut self.bytes);
            bytes.clear();
            // Whatever was there (nothing, in steady state) is dropped.
            drop(self.sending.spare.replace(bytes));
        }
        if let Some(w) = self.sending.writer.take() {
            w.wake();
        }
        if let Some(w) = self.sending.helper.take() {
            w.wake();
        }
    }
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
            sending: Rc::default(),
            failed: None,
            shut: false,
            deferred: false,
            closed: false,
            helper: false,
            helper_parked: None,
            spawn: false,
        }
    }

    /// Whether the helper task must be spawned now (by the stream, which holds the
    /// link); asked after every call that may need it.
    pub(crate) fn take_spawn(&mut self) -> bool {
        std::mem::take(&mut self.spawn)
    }

    /// Has the helper task run: wakes it if parked, or asks for it to be spawned.
    fn poke_helper(&mut self) {
        if !self.helper {
            self.helper = true;
            self.spawn = true;
        } else if let Some(w) = self.helper_parked.take() {
            w.wake();
        }
    }

    /// Bytes accepted but not yet taken by the kernel.
    pub(crate) fn unsent(&self) -> usize {
        self.gather.len() + self.sending.len.get()
    }

    /// From now on the connection's owner calls [`poll_owner`](Self::poll_owner) after
    /// each poll of the connection, and `poll_flush` leaves the handing over to it.
    #[cfg(feature = "hyper")]
    pub(crate) fn defer_to_owner(&mut self) {
        self.deferred = true;
    }

    fn busy(&self) -> bool {
        self.sending.len.get() > 0
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
    /// [`MAX_GATHER`] bytes already wait behind a send in flight).
    pub(crate) fn poll_write<B: Deref<Target = [u8]>>(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[B],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        if self.gather.len() >= MAX_GATHER {
            // Full: hand it over (after the send in flight, if one is).
            std::task::ready!(self.submit(cx, Waiter::Writer))?;
        }
        let room = MAX_GATHER - self.gather.len();
        if self.gather.is_empty() && !self.deferred && bufs.iter().any(|b| !b.is_empty()) {
            // Bytes to move: the helper sends them later in this turn unless a flush
            // does first.
            self.poke_helper();
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

    /// Hands the gathered bytes to the kernel, unless the connection's owner does that
    /// after its poll. Ready at once: with a send in flight, the helper task (woken by
    /// the write that gathered them) hands them over when it ends.
    #[inline]
    pub(crate) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.deferred && self.failed.is_none() && !self.shut {
            // The owner hands the bytes over after this poll: nothing to do (the path
            // of every hyper response under `Server`).
            return Poll::Ready(Ok(()));
        }
        self.poll_flush_slow(cx)
    }

    #[inline(never)]
    fn poll_flush_slow(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.deferred || (self.busy() && !self.gather.is_empty() && self.failed.is_none()) {
            return Poll::Ready(self.check());
        }
        self.submit(cx, Waiter::Writer)
    }

    /// Waits until the kernel has taken every byte, then shuts the write direction.
    pub(crate) fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.shut {
            return Poll::Ready(Ok(()));
        }
        std::task::ready!(self.submit(cx, Waiter::Writer))?;
        if self.busy() {
            self.wait(Waiter::Writer, cx.waker());
            return Poll::Pending;
        }
        // How the last send ended.
        std::task::ready!(self.submit(cx, Waiter::Writer))?;
        match self.socket.shutdown_write() {
            Ok(()) => {}
            // The peer is already gone: there is nothing left to shut.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
        self.shut = true;
        self.gather = Vec::new();
        drop(self.sending.spare.take());
        Poll::Ready(Ok(()))
    }

    /// The owner's end-of-poll step ([`defer_to_owner`](Self::defer_to_owner)): hands
    /// what the poll wrote to the kernel, or, with a send still in flight, has `cx`
    /// woken when it ends. An error is kept for the stream's next write or flush.
    #[cfg(feature = "hyper")]
    pub(crate) fn poll_owner(&mut self, cx: &mut Context<'_>) {
        if !self.closed && !self.gather.is_empty() {
            let _ = self.submit(cx, Waiter::Writer);
        }
    }

    /// Has `waker` woken, as `who`, when the send in flight ends (its buffer's drop),
    /// and tells the runtime so: [`OutBuf`] says its drop wakes nobody, which holds
    /// only for sends no task waits for this way.
    fn wait(&self, who: Waiter, waker: &Waker) {
        self.socket.awaiting_send();
        self.sending.wait(who, waker);
    }

    /// Hands the gathered bytes to the kernel as one background send. Pending (with
    /// `cx` woken, as `who`, at its end) while the previous send is in flight. Ready
    /// with nothing to do once every accepted byte is the kernel's; with the stream's
    /// error if a send failed.
    fn submit(&mut self, cx: &mut Context<'_>, who: Waiter) -> Poll<io::Result<()>> {
        if let Some(f) = &self.failed {
            return Poll::Ready(Err(f.error()));
        }
        if self.gather.is_empty() {
            if self.busy() {
                return Poll::Ready(Ok(()));
            }
            // Nothing to send: only how the last send ended (nothing is in flight, so
            // this does not wait).
            return Pin::new(&mut self.socket.flush())
                .poll(cx)
                .map_err(|e| self.fail(e));
        }
        if self.busy() {
            // After the send in flight: its buffer wakes `cx` when it is done.
            self.wait(who, cx.waker());
            return Poll::Pending;
        }
        let bytes = std::mem::replace(&mut self.gather, self.sending.spare.take());
        self.sending.len.set(bytes.len());
        let buf = OutBuf {
            bytes,
            sending: self.sending.clone(),
        };
        // Nothing is in flight (our buffer would still be out), so the send starts on
        // this poll (or reports how the last one failed), and the future, done, holds
        // nothing: the driver has the buffer.
        match Pin::new(&mut self.socket.send_all(buf)).poll(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.fail(e))),
            // Only if the runtime dropped our buffer without ending its record of the
            // send (its driver shutting down): the stream is broken, not the process.
            Poll::Pending => Poll::Ready(Err(self.fail(io::Error::other(
                "the runtime still has a send in flight on this socket",
            )))),
        }
    }

    /// Called by the stream's drop: hands over what is gathered now, or leaves it to the
    /// helper task (woken to finish, or spawned if a send is in flight).
    pub(crate) fn close(&mut self) {
        self.closed = true;
        if self.helper {
            // It hands over what is left, then ends.
            if let Some(w) = self.helper_parked.take() {
                w.wake();
            }
            return;
        }
        if self.gather.is_empty() || self.failed.is_some() || self.shut {
            return;
        }
        if self.busy() {
            self.poke_helper();
            return;
        }
        // Nothing is in flight: the send starts now and nobody waits for it.
        let nobody = Waker::from(Arc::new(Nobody));
        let _ = self.submit(&mut Context::from_waker(&nobody), Waiter::Writer);
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed = Some(Failure::of(&e));
        self.gather = Vec::new();
        e
    }
}

/// Ends [`Outbox::defer_to_owner`]: the connection's owner stops handing the bytes over
/// (an upgraded connection has left it), so `poll_flush` does again, and what is
/// gathered now goes out through the helper task.
#[cfg(feature = "hyper")]
pub(crate) fn end_deferral<S: StreamSocket>(link: &Link<S>) {
    let Ok(mut outbox) = link.try_borrow_mut() else {
        return;
    };
    if !outbox.deferred {
        return;
    }
    outbox.deferred = false;
    if !outbox.closed && !outbox.gather.is_empty() && outbox.failed.is_none() {
        outbox.poke_helper();
    }
    let spawn = outbox.take_spawn();
    drop(outbox);
    if spawn {
        spawn_helper(link.clone());
    }
}

/// A waker that wakes nobody (`Waker::noop` is newer than this crate's MSRV).
struct Nobody;

impl Wake for Nobody {
    fn wake(self: Arc<Self>) {}
}

/// Starts the helper task of `link`: whenever woken (by a write that found the buffer
/// empty, by the end of a send it waits for, by the stream's drop), it hands the
/// gathered bytes over, waiting for the send in flight if there is one, then parks. It
/// ends once the stream is dropped and everything is handed over; for a dropped stream
/// it waits for the send in flight at most [`LINGER`]. It holds the link, so the socket
/// closes (after the last send) when it ends.
pub(crate) fn spawn_helper<S: StreamSocket>(link: Link<S>) {
    if ringway::runtime::Handle::try_current().is_none() {
        tracing::debug!("a stream used outside its runtime cannot send");
        if let Ok(mut outbox) = link.try_borrow_mut() {
            outbox.helper = false;
        }
        return;
    }
    ringway::spawn(Helper {
        link,
        deadline: None,
    })
    .detach();
}

/// See [`spawn_helper`].
struct Helper<S> {
    link: Link<S>,
    deadline: Option<ringway::time::Sleep>,
}

impl<S: StreamSocket> Future for Helper<S> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        // The stream's owner may hold the socket (`get_ref`) across an await: try again
        // on the next turn rather than wait on it.
        let Ok(mut outbox) = this.link.try_borrow_mut() else {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        };
        if outbox.submit(cx, Waiter::Helper).is_ready() {
            // Handed over (or failed): the runtime finishes the send.
            if outbox.closed {
                outbox.helper = false;
                return Poll::Ready(());
            }
            // Parked until a write finds the buffer empty again.
            match &outbox.helper_parked {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => outbox.helper_parked = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        // Waiting for the send in flight.
        if !outbox.closed {
            return Poll::Pending;
        }
        drop(outbox);
        let deadline = this
            .deadline
            .get_or_insert_with(|| ringway::time::sleep(LINGER));
        if Pin::new(deadline).poll(cx).is_ready() {
            tracing::debug!("a dropped stream's last bytes were not taken in time; closing");
            this.link.borrow_mut().helper = false;
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
