//! Sends that run in the background: [`send_all`] hands a buffer to the kernel and
//! returns without waiting for the send to finish; [`flush`] waits for it.
//!
//! Awaiting every send costs a completion-based runtime a wake-up and a poll of the
//! task per send (readiness I/O does a ready socket's send inline and never waits). A
//! server that answers a request and goes back to reading does not need to wait: the
//! driver keeps the buffer until the kernel is done, then drops it (a pooled buffer
//! goes back to its pool), and nobody is woken. Order is kept by having at most one
//! background send per socket in flight: a second `send_all` waits for the first to
//! finish (one loop turn on loopback), which also bounds the memory a slow peer can
//! hold to one buffer. An error (the peer reset, say) is kept and returned by the next
//! `send_all` or `flush`: the stream is broken from then on, as with a buffered
//! writer. Each send is a `SendAll` op, which completes once for the whole buffer on
//! both backends.
//!
//! Dropping the socket while a background send is in flight does not cut it short: the
//! driver closes the socket once the send has ended.
//!
//! On io_uring, a send whose buffer wakes nobody when dropped
//! ([`IoBuf::drop_wakes_nobody`]: `Vec`, a pool buffer, the HTTP server's responses)
//! ends unheard, so the core's wait does not stop for it: its first SQE never waits in
//! the kernel and completes in the enter that submits it, and that enter sleeps until
//! a completion beyond it (see `driver/uring/background.rs`). A server that answers
//! one request at a time then makes one `io_uring_enter` per request, not two. A task
//! that waits for the send (`flush`, a second `send_all`) takes it out of that count:
//! its completion wakes the task.
//!
//! [`send_all`]: crate::net::TcpStream::send_all
//! [`flush`]: crate::net::TcpStream::flush

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::buf::IoBuf;
use crate::driver::op::SendAll;
use crate::driver::{Held, OpId};
use crate::runtime::context::{try_with_driver, with_driver};

/// A socket's background send, shared with the driver's record of it. Atomics rather
/// than cells, so that a socket stays `Send` (a listener is bound on one thread and
/// adopted by a core); only its own core ever touches it while a send is in flight.
#[derive(Debug)]
pub(crate) struct Background {
    /// The send in flight (`OpId` in its user-data form), or `NONE`.
    in_flight: AtomicU64,
    /// `errno` of the first failure, 0 if none: the stream is broken from then on.
    error: AtomicI32,
    /// A task is (or may be) waiting in `waiter`: only then does a finish lock it.
    waiting: AtomicBool,
    /// The task waiting for the send in flight to end.
    waiter: Mutex<Option<Waker>>,
}

const NONE: u64 = u64::MAX;

/// How many records of dropped sockets a thread keeps for its next sockets.
const SPARES: usize = 256;

thread_local! {
    /// Records of dropped sockets, reset, for the next sockets of this thread (a
    /// server's core, where connections come and go): an allocation and a free less
    /// per connection.
    static SPARE: RefCell<Vec<Arc<Background>>> = const { RefCell::new(Vec::new()) };
}

impl Default for Background {
    fn default() -> Self {
        Background {
            in_flight: AtomicU64::new(NONE),
            error: AtomicI32::new(0),
            waiting: AtomicBool::new(false),
            waiter: Mutex::new(None),
        }
    }
}

impl Background {
    /// The record of a socket's first background send: one a dropped socket left on
    /// this thread, or a new one.
    pub(crate) fn take() -> Arc<Background> {
        SPARE
            .try_with(|s| s.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Keeps a dropped socket's record for this thread's next socket, reset, if
    /// nothing else holds it (the driver holds it while a send is in flight).
    pub(crate) fn keep(mut state: Arc<Background>) {
        let Some(b) = Arc::get_mut(&mut state) else {
            return;
        };
        if *b.in_flight.get_mut() != NONE {
            return;
        }
        *b.error.get_mut() = 0;
        *b.waiting.get_mut() = false;
        let waiter = b.waiter.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        drop(waiter);
        let _ = SPARE.try_with(|s| {
            let mut spare = s.borrow_mut();
            if spare.len() < SPARES {
                spare.push(state);
            }
        });
    }

    /// The send in flight (for closing after it).
    pub(crate) fn in_flight(&self) -> Option<OpId> {
        match self.in_flight.load(Ordering::Acquire) {
            NONE => None,
            id => Some(OpId::from_user_data(id)),
        }
    }

    fn error(&self) -> Option<io::Error> {
        match self.error.load(Ordering::Acquire) {
            0 => None,
            errno => Some(io::Error::from_raw_os_error(errno)),
        }
    }

    /// Ready once nothing is in flight: with the kept error, if any.
    #[inline]
    fn poll_idle(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.in_flight.load(Ordering::Acquire) == NONE && self.error.load(Ordering::Acquire) == 0
        {
            return Poll::Ready(Ok(()));
        }
        self.poll_idle_slow(cx)
    }

    /// `poll_idle` when a send is in flight or the stream is broken.
    #[cold]
    fn poll_idle_slow(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.in_flight().is_some() {
            {
                let mut waiter = self.waiter.lock().unwrap_or_else(|e| e.into_inner());
                match waiter.as_ref() {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *waiter = Some(cx.waker().clone()),
                }
            }
            self.waiting.store(true, Ordering::SeqCst);
            // It may have finished between the check and the store: look again.
            if self.in_flight().is_some() {
                self.awaited();
                return Poll::Pending;
            }
        }
        Poll::Ready(self.error().map_or(Ok(()), Err))
    }

    /// A task waits for the send in flight (if any) to end: its completion must end the
    /// core's wait, which does not count it among those it looks beyond (`Uring::turn`).
    pub(crate) fn awaited(&self) {
        if let Some(id) = self.in_flight() {
            let _ = try_with_driver(|d| d.awaiting_background(id));
        }
    }

    /// The send in flight has ended, with `error` (0 if none). The rare parts (an
    /// error, a task waiting) are out of line: a send ends once per message.
    #[inline(always)]
    fn finish(&self, error: i32) {
        if error != 0 {
            self.keep_error(error);
        }
        self.in_flight.store(NONE, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) {
            self.wake_waiter();
        }
    }

    #[cold]
    #[inline(never)]
    fn keep_error(&self, error: i32) {
        let _ = self
            .error
            .compare_exchange(0, error, Ordering::AcqRel, Ordering::Acquire);
    }

    #[cold]
    #[inline(never)]
    fn wake_waiter(&self) {
        if self.waiting.swap(false, Ordering::SeqCst) {
            let waker = self.waiter.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

/// What the driver keeps of a background send: its buffer, and the socket's record to
/// tell how it ended.
struct InFlight<B> {
    buf: B,
    len: usize,
    state: Arc<Background>,
}

impl<B: 'static> Held for InFlight<B> {
    fn finished(self, result: i32) {
        let InFlight { buf, len, state } = self;
        // The buffer first: nothing about it depends on how the send ended.
        drop(buf);
        // Every byte went (the commonest end by far): no error to work out.
        let error = if result as usize == len {
            0
        } else {
            send_error(result, len)
        };
        state.finish(error);
    }
}

/// The errno a `SendAll` of `len` bytes that ended with `result` leaves, 0 if none.
#[inline]
fn send_error(result: i32, len: usize) -> i32 {
    match result {
        r if r < 0 => -r,
        // Only an error stops a SendAll part way; say so if the kernel did not.
        r if (r as usize) < len => libc::EIO,
        _ => 0,
    }
}

/// Future of `send_all`: ready as soon as the send has started (after the previous
/// background send, if one is in flight, has finished).
#[must_use = "futures do nothing unless awaited"]
pub struct SendAllFuture<'a, B> {
    fd: RawFd,
    state: &'a Arc<Background>,
    buf: Option<B>,
}

impl<B> std::fmt::Debug for SendAllFuture<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendAllFuture")
            .field("fd", &self.fd)
            .field("started", &self.buf.is_none())
            .finish()
    }
}

impl<'a, B: IoBuf + Unpin + 'static> SendAllFuture<'a, B> {
    /// The send of `len` bytes that does not start: nothing to send, or more than one
    /// op takes. Out of line: the poll's common path stays short.
    #[cold]
    #[inline(never)]
    fn not_sent(&mut self, len: usize) -> io::Result<()> {
        self.buf = None;
        if len == 0 {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "send_all takes at most 4 GiB at a time",
        ))
    }

    pub(crate) fn new(fd: RawFd, state: &'a Arc<Background>, buf: B) -> Self {
        SendAllFuture {
            fd,
            state,
            buf: Some(buf),
        }
    }

    /// The buffer back, if the send has not started (a poll that was pending): for a
    /// caller that tries a send without keeping its future.
    pub fn into_unsent(self) -> Option<B> {
        self.buf
    }
}

impl<B: IoBuf + Unpin + 'static> Future for SendAllFuture<'_, B> {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        std::task::ready!(this.state.poll_idle(cx))?;
        let buf = this
            .buf
            .as_ref()
            .expect("SendAllFuture polled after completion");
        let len = buf.bytes_init();
        let quiet = buf.drop_wakes_nobody();
        let Some(len32) = u32::try_from(len).ok().filter(|&n| n > 0) else {
            return Poll::Ready(this.not_sent(len));
        };
        let op = SendAll {
            fd: this.fd,
            buf: buf.stable_ptr(),
            len: len32,
        };
        let state = this.state;
        // The buffer stays in the future until the driver keeps it: moved once, from
        // here into the driver's record (what the closures capture is references).
        let kept = &mut this.buf;
        let held = || InFlight {
            buf: kept.take().unwrap_or_else(|| unreachable!("checked above")),
            len,
            state: state.clone(),
        };
        // SAFETY: the op points at `buf`'s bytes, which the `InFlight` keeps alive (and
        // which do not move when it does: `IoBuf::stable_ptr`) until the final
        // completion; if the send goes at once, `buf` is still in the future meanwhile.
        let started = with_driver(|d| unsafe { d.send_all_detached(op, quiet, held) });
        // Sent at once (epoll), if it is still here: done with.
        this.buf = None;
        match started {
            Ok(Some(id)) => state.in_flight.store(id.to_user_data(), Ordering::Release),
            // It has ended already, and `state` has heard how.
            Ok(None) => {}
            // Sent at once (epoll, a ready socket): no record was made.
            Err(result) => match send_error(result, len) {
                0 => {}
                error => state.finish(error),
            },
        }
        Poll::Ready(Ok(()))
    }
}

/// Future of `flush`: ready once the background send in flight (if any) has finished,
/// with the error that broke the stream, if one did.
#[must_use = "futures do nothing unless awaited"]
#[derive(Debug)]
pub struct Flush<'a> {
    state: &'a Background,
}

impl<'a> Flush<'a> {
    pub(crate) fn new(state: &'a Background) -> Self {
        Flush { state }
    }
}

impl Future for Flush<'_> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.state.poll_idle(cx)
    }
}
