//! Signals as streams: [`ctrl_c`], and [`signal`] for any catchable signal.
//!
//! Each [`Signal`] reads a signalfd of its own through the core's driver (io_uring: a
//! read in the ring; epoll: readiness, then a read), so waiting costs nothing per turn
//! and nothing runs in a signal handler. The first listener of a signal blocks it in
//! its thread (cores and blocking threads started afterwards inherit that) and
//! installs a handler that reroutes the signal away from any thread that does not
//! block it, so it always ends pending for the signalfds; listeners on several cores
//! all hear of each signal, whichever one read it. A signal the process already
//! blocks (a program that used `sigwait` before, or an inherited mask) works the same.
//!
//! Like tokio's, a registration lasts for the life of the process: once a signal has
//! had a listener, its default action (ending the process, for `SIGINT`) no longer
//! runs, even after the last listener is dropped. Signals that come while no listener
//! waits are kept (by the kernel, as pending) for the next read; several that come
//! between two reads may be merged into one notification.
//!
//! # Examples
//!
//! ```no_run
//! #[ringway::main]
//! async fn main() -> std::io::Result<()> {
//!     // ... start the service ...
//!     ringway::signal::ctrl_c().await?;
//!     println!("ctrl-c: shutting down");
//!     Ok(())
//! }
//! ```
//!
//! `examples/signal.rs` listens for `SIGUSR1` and `SIGTERM` on two cores.

mod hub;
mod kind;

pub use kind::SignalKind;

use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use self::hub::{Hub, Listener};
use crate::io::{FdRead, OpFuture, StreamFd};

/// How many `signalfd_siginfo` records one read takes at most.
const RECORDS_PER_READ: usize = 8;
const RECORD: usize = std::mem::size_of::<libc::signalfd_siginfo>();

/// Starts listening for `kind`; the returned stream yields once per signal (or group of
/// signals that came close together).
///
/// May be called outside a runtime (before building it, say, so that the cores
/// inherit the blocked mask); the stream must be polled on a runtime core, and stays on
/// the core that first polls it.
///
/// # Errors
///
/// `InvalidInput`, with a message naming the signal, for a signal that cannot be
/// listened for: `SIGKILL` and `SIGSTOP` (the kernel never lets a process catch them),
/// the fault signals (`SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGTRAP`), the two the C
/// library keeps for itself, and numbers that are not signals. Otherwise whatever
/// `signalfd` or `sigaction` answer (`EMFILE`, say).
///
/// # Examples
///
/// ```
/// use ringway::signal::{signal, SignalKind};
///
/// let err = signal(SignalKind::from_raw(libc::SIGKILL)).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// assert!(err.to_string().contains("SIGKILL"));
/// ```
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    kind.check()?;
    let signum = kind.as_raw();
    let hub = Hub::of(signum);
    hub::block_here(signum)?;
    hub.install(signum)?;
    // SAFETY: `set` is plain data initialised by sigemptyset; signalfd reads it for the
    // call only, and its result is checked before being owned.
    let fd = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signum);
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("ringway::signal: signalfd for signal {kind}: {e}"),
            ));
        }
        OwnedFd::from_raw_fd(fd)
    };
    Ok(Signal {
        kind,
        hub,
        seen: hub.delivered(),
        listener: hub.listen(),
        fd: StreamFd::new(fd)?,
        read: None,
        buf: None,
        _core: PhantomData,
    })
}

/// Completes at the next `SIGINT` (ctrl-c at a terminal).
///
/// Listening starts when the future is first polled (this is an `async fn`: calling it
/// does nothing yet): a ctrl-c before that takes the signal's default action (it ends
/// the process), unless something already listens for or blocks `SIGINT`. To listen
/// from a given point on, make the stream there: `signal(SignalKind::interrupt())`.
///
/// # Errors
///
/// As [`signal`]'s (a `signalfd` the system refuses).
pub async fn ctrl_c() -> io::Result<()> {
    let mut s = signal(SignalKind::interrupt())?;
    s.recv().await;
    Ok(())
}

/// A stream of one signal's arrivals. See the [module docs](self).
///
/// `!Send`: its read is in flight on the core that polled it.
pub struct Signal {
    kind: SignalKind,
    hub: &'static Hub,
    /// `hub.delivered()` when this listener last answered.
    seen: u64,
    listener: Arc<Listener>,
    fd: StreamFd,
    /// The read in flight on this listener's signalfd.
    read: Option<OpFuture<FdRead<Box<[u8]>>>>,
    /// The read's buffer between reads.
    buf: Option<Box<[u8]>>,
    _core: PhantomData<*const ()>,
}

impl Signal {
    /// Waits for the next arrival: `Some(())`. The stream does not end; `None` would
    /// mean its signalfd read failed, which a signalfd has no reason to (the error is
    /// logged). The `Option` is tokio's shape, for code that loops with `while let`.
    pub async fn recv(&mut self) -> Option<()> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Poll form of [`recv`](Self::recv).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        loop {
            let delivered = self.hub.delivered();
            if delivered != self.seen {
                self.seen = delivered;
                return Poll::Ready(Some(()));
            }
            self.listener.waker.register(cx.waker());
            if self.hub.delivered() != self.seen {
                continue; // another listener read one between the two looks
            }
            let read = match &mut self.read {
                Some(r) => r,
                None => {
                    let buf = self
                        .buf
                        .take()
                        .unwrap_or_else(|| vec![0; RECORD * RECORDS_PER_READ].into());
                    self.read.insert(self.fd.read(buf))
                }
            };
            let (r, buf) = std::task::ready!(Pin::new(read).poll(cx));
            self.read = None;
            self.buf = Some(buf);
            match r {
                Ok(n) if n >= RECORD => self.hub.deliver((n / RECORD) as u64),
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                Err(e) => {
                    // A signalfd read has no failure mode of its own; say so loudly and
                    // end rather than spin.
                    tracing::error!(signal = %self.kind, error = %e, "signalfd read failed");
                    return Poll::Ready(None);
                }
            }
        }
    }

    /// The signal this stream listens for.
    pub fn kind(&self) -> SignalKind {
        self.kind
    }
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal")
            .field("kind", &self.kind)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}
