//! [`CoreBound`]: a `!Send` value that `Send`-demanding APIs accept, because it is only
//! ever used on the thread (the ringway core) that made it.
//!
//! hyper's upgrades (`hyper::upgrade::Upgraded`, `http1::Connection::with_upgrades`) box
//! the connection's I/O as `Box<dyn Io + Send>`: they ask for `Send` because a
//! work-stealing runtime may move the upgraded stream to another worker. ringway's
//! streams are `!Send` (an `Rc`-shared outbox, a multishot receive registered with the
//! core's driver, pool buffers of the core's ring), and on a thread-per-core runtime
//! they never need to move. `CoreBound` bridges the two bounds.
//!
//! # Why `Send` is sound here
//!
//! `Send` promises that moving ownership of a value to another thread cannot cause a data
//! race or break a thread-affine invariant. A `!Send` type breaks that promise only when
//! the other thread *uses* it: reads or writes through it (an `Rc`'s count, a `RefCell`'s
//! flag, the core's driver through a thread-local), or drops it (drop is a use). Moving
//! its bytes is not a use: the value's heap state is not touched by a `memcpy` of the
//! handle, and a value that is free to move on its own thread (every `Unpin` stream here
//! is) has no pointer into its own bytes that a move could break.
//!
//! `CoreBound<T>` therefore lets the value move but never lets it be used away from its
//! home thread:
//!
//! - it records the home thread when it is made (a process-unique number kept in a
//!   thread-local, never reused, unlike an address or an OS thread id);
//! - **every** access to `T` (each `poll_*` of the I/O traits, [`get_mut`], [`into_inner`],
//!   `AsyncBufRead::consume`) first compares the current thread with the home thread;
//!   away from home a poll returns an [`io::Error`] (kind `Other`, the message says which
//!   core) without touching `T`, and the other accessors panic;
//! - dropping it away from home does not drop `T` there: `T` is shipped back to its core
//!   (`ringway::Handle::spawn_on`, with nothing but a move on the way) and dropped there,
//!   so its socket closes and its pool buffers go back to the right ring. If the core is
//!   gone, or `T` would otherwise be dropped off its home thread, it is leaked instead:
//!   leaking is safe, dropping there would not be;
//! - it is not `Sync`: a `&CoreBound<T>` never reaches another thread, so no shared
//!   access can race with the home thread's (the checks above are for owned moves).
//!
//! `T` must be `Unpin` (a drop away from home moves it, which a pinned value forbids)
//! and `'static` (it travels home as a task's capture).
//!
//! With these rules the only thing another thread ever does with a `T` is move its bytes,
//! which is what `Send` has to allow and all it has to allow. The check costs a
//! thread-local read and a compare per poll.
//!
//! [`get_mut`]: CoreBound::get_mut
//! [`into_inner`]: CoreBound::into_inner

use std::cell::Cell;
use std::fmt;
use std::io;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf};

/// The next thread number to hand out (0 means "not assigned yet").
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's number: assigned at first use, unique for the process's life.
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

/// The current thread's process-unique number.
#[inline]
fn this_thread() -> u64 {
    THREAD.with(|t| {
        let id = t.get();
        if id != 0 {
            return id;
        }
        let id = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
        t.set(id);
        id
    })
}

/// A value bound to the thread (the ringway core) that made it: `Send`, so that APIs
/// which ask for `Send` I/O (hyper's upgrades, `Box<dyn Io + Send>`) accept it, yet used
/// only on that thread. See the [module docs](self) for why that is sound.
///
/// It forwards tokio's `AsyncRead` / `AsyncWrite` / `AsyncBufRead`, hyper's `rt::Read` /
/// `rt::Write` (feature `hyper`) and `futures_io`'s traits (feature `futures-io`) to the
/// value, after checking the thread. Away from its home thread:
///
/// - every `poll_*` returns `Err` (kind [`io::ErrorKind::Other`]) and leaves the value
///   untouched: bring the stream back to its core and it works again;
/// - [`get_mut`](Self::get_mut) and [`into_inner`](Self::into_inner) panic
///   ([`try_get_mut`](Self::try_get_mut) does not);
/// - drop sends the value back to its core and drops it there (its socket closes on its
///   core), or leaks it if that core is gone.
///
/// [`Server`](crate::Server) serves every connection over one, so hyper's upgrades (and
/// WebSockets, see [`ws`](crate::ws)) work; a task that receives the upgraded stream on
/// the same core (any task spawned with [`ringway::spawn`]) uses it as usual.
///
/// ```
/// use ringway_compat::{CompatStream, CoreBound};
///
/// fn needs_send<T: Send>(_: &T) {}
///
/// # fn main() -> std::io::Result<()> {
/// # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// # let addr = listener.local_addr()?;
/// ringway::start(async move {
///     let tcp = ringway::net::TcpStream::connect(addr).await?;
///     let stream = CoreBound::new(CompatStream::new(tcp));
///     needs_send(&stream); // CompatStream alone is !Send
///     assert!(stream.is_home());
///     Ok(())
/// })
/// # }
/// ```
pub struct CoreBound<T: Unpin + 'static> {
    value: ManuallyDrop<T>,
    /// The home thread's number ([`this_thread`]).
    home: u64,
    /// The home core's index and runtime, to send the value back for its drop.
    core: Option<(usize, ringway::Handle)>,
}

// SAFETY: another thread can only move a `CoreBound<T>`: every access to the `T` inside
// checks that it runs on the home thread first (`check`/`home_only`), and a drop away
// from home moves the `T` back to its core or leaks it, never drops it there. Moving
// `T`'s bytes is not a use of `T` (see the module docs). `CoreBound` is not `Sync`, so
// no `&T` is ever reachable from two threads. The home thread number and the
// `ringway::Handle` are `Send` themselves.
unsafe impl<T: Unpin + 'static> Send for CoreBound<T> {}

/// What the `Send` impl above relies on for the fields other than `T`: a drop away from
/// home calls `Handle::spawn_on` there.
const _: fn() = || {
    fn send_and_sync<H: Send + Sync>() {}
    send_and_sync::<ringway::Handle>();
};

impl<T: Unpin + 'static> CoreBound<T> {
    /// Binds `value` to the current thread. Inside a ringway runtime, a drop on another
    /// thread sends the value back to this core; outside one, it leaks it.
    pub fn new(value: T) -> CoreBound<T> {
        let core = ringway::Handle::try_current().map(|h| (ringway::runtime::current_core(), h));
        CoreBound {
            value: ManuallyDrop::new(value),
            home: this_thread(),
            core,
        }
    }

    /// Whether the current thread is the value's home thread.
    #[inline]
    pub fn is_home(&self) -> bool {
        this_thread() == self.home
    }

    /// The value, on its home thread; `None` elsewhere.
    pub fn try_get_mut(&mut self) -> Option<&mut T> {
        if self.is_home() {
            Some(&mut self.value)
        } else {
            None
        }
    }

    /// The value.
    ///
    /// # Panics
    ///
    /// Away from the home thread.
    pub fn get_mut(&mut self) -> &mut T {
        self.home_only();
        &mut self.value
    }

    /// Unwraps the value.
    ///
    /// # Panics
    ///
    /// Away from the home thread (the value is then sent home and dropped there, as by
    /// a drop).
    pub fn into_inner(self) -> T {
        self.home_only();
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used again and its drop does not run, so the value is
        // taken exactly once; the handle is dropped in place below.
        let value = unsafe { ManuallyDrop::take(&mut this.value) };
        // SAFETY: as above, `core` is read out once and `this` is forgotten.
        drop(unsafe { std::ptr::read(&this.core) });
        value
    }

    #[track_caller]
    fn home_only(&self) {
        if !self.is_home() {
            panic!("{}", self.away_message());
        }
    }

    /// The error every poll away from home returns; the value is untouched.
    #[cold]
    fn away(&self) -> io::Error {
        io::Error::other(self.away_message())
    }

    fn away_message(&self) -> String {
        let core = match &self.core {
            Some((core, _)) => format!("core {core} of its ringway runtime"),
            None => "the thread that made it".to_string(),
        };
        format!(
            "a ringway stream was used on another thread: it belongs to {core} and cannot \
             leave it (thread-per-core); poll it from a task spawned on that core"
        )
    }

    /// `Ok(&mut T)` on the home thread, the error otherwise.
    #[inline]
    fn check(self: Pin<&mut Self>) -> Result<Pin<&mut T>, io::Error> {
        let this = self.get_mut();
        if this.is_home() {
            Ok(Pin::new(&mut *this.value))
        } else {
            Err(this.away())
        }
    }
}

/// A value on its way home to be dropped there (see `CoreBound`'s drop).
struct Homeward<T> {
    value: ManuallyDrop<T>,
    home: u64,
}

// SAFETY: a `Homeward` only moves its value: its drop drops the value on the home thread
// and leaks it anywhere else, and nothing else touches it.
unsafe impl<T> Send for Homeward<T> {}

impl<T> Drop for Homeward<T> {
    fn drop(&mut self) {
        if this_thread() == self.home {
            // SAFETY: dropped once, here, on its home thread.
            unsafe { ManuallyDrop::drop(&mut self.value) }
        } else {
            tracing::error!("a ringway stream could not go back to its core; leaking it");
        }
    }
}

impl<T: Unpin + 'static> Drop for CoreBound<T> {
    fn drop(&mut self) {
        if self.is_home() {
            // SAFETY: dropped once, here, on its home thread; never used after.
            unsafe { ManuallyDrop::drop(&mut self.value) };
            return;
        }
        // SAFETY: the value is taken once; `self.value` is not used after this.
        let value = unsafe { ManuallyDrop::take(&mut self.value) };
        let homeward = Homeward {
            value: ManuallyDrop::new(value),
            home: self.home,
        };
        match &self.core {
            Some((core, handle)) => {
                tracing::debug!(
                    core,
                    "a ringway stream was dropped off its core; sending it home"
                );
                // The closure runs on the home core, where `homeward` drops its value; if
                // that core is gone the closure is dropped wherever that happens, and
                // `Homeward` leaks the value there instead.
                handle
                    .spawn_on(*core, move || async move { drop(homeward) })
                    .detach();
            }
            None => drop(homeward),
        }
    }
}

impl<T: Unpin + 'static + fmt::Debug> fmt::Debug for CoreBound<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("CoreBound");
        if self.is_home() {
            d.field("value", &*self.value);
        } else {
            d.field("value", &"<on another thread>");
        }
        d.field("core", &self.core.as_ref().map(|(c, _)| c))
            .finish()
    }
}

impl<T: AsyncRead + Unpin + 'static> AsyncRead for CoreBound<T> {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check()?.poll_read(cx, buf)
    }
}

impl<T: AsyncBufRead + Unpin + 'static> AsyncBufRead for CoreBound<T> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        self.check()?.poll_fill_buf(cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        match self.check() {
            Ok(inner) => inner.consume(amt),
            Err(e) => panic!("{e}"),
        }
    }
}

impl<T: AsyncWrite + Unpin + 'static> AsyncWrite for CoreBound<T> {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check()?.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        // Answered without touching the value away from home (a write there fails anyway).
        self.is_home() && self.value.is_write_vectored()
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?.poll_shutdown(cx)
    }
}

#[cfg(feature = "hyper")]
impl<T: hyper::rt::Read + Unpin + 'static> hyper::rt::Read for CoreBound<T> {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        self.check()?.poll_read(cx, buf)
    }
}

#[cfg(feature = "hyper")]
impl<T: hyper::rt::Write + Unpin + 'static> hyper::rt::Write for CoreBound<T> {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check()?.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.is_home() && self.value.is_write_vectored()
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?.poll_shutdown(cx)
    }
}

#[cfg(feature = "futures-io")]
impl<T: futures_io::AsyncRead + Unpin + 'static> futures_io::AsyncRead for CoreBound<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?.poll_read(cx, buf)
    }
}

#[cfg(feature = "futures-io")]
impl<T: futures_io::AsyncWrite + Unpin + 'static> futures_io::AsyncWrite for CoreBound<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?.poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?.poll_close(cx)
    }
}
