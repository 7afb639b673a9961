//! Upgraded connections (WebSockets) in a server's drain.
//!
//! After an upgrade, hyper's connection future ends and the connection's I/O lives on in
//! `hyper::upgrade::Upgraded`, in whatever task the application gave it to: the task
//! that served the connection, and its place in the core's drain, are gone. So the I/O
//! carries a [`Watch`] ([`Watched`] wraps the stream). When the connection task ends and
//! finds its I/O still alive elsewhere, it hands its drain guard to the watch
//! ([`Upgrades::adopt`]): the connection stays counted until the application drops the
//! stream, so `Server::wait` waits for it as for any other. At the drain deadline
//! [`Upgrades::cut`] shuts the sockets of those still open (the peer sees the end, the
//! application's reads end, its writes fail) and counts them out.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll};

use ringway::sync::drain::ConnGuard;

/// What one connection's I/O carries.
#[derive(Debug)]
pub(crate) struct Watch {
    /// The connection's socket, open as long as the [`Watched`] that owns this lives.
    fd: RawFd,
    /// The drain guard, once the connection is upgraded.
    guard: RefCell<Option<ConnGuard>>,
}

impl Watch {
    /// A watch for the connection on `fd`.
    pub(crate) fn new(fd: RawFd) -> Rc<Watch> {
        Rc::new(Watch {
            fd,
            guard: RefCell::new(None),
        })
    }
}

/// A stream that carries a [`Watch`]; forwards hyper's and tokio's I/O traits.
#[derive(Debug)]
pub(crate) struct Watched<T> {
    io: T,
    _watch: Rc<Watch>,
}

impl<T> Watched<T> {
    /// `io`, carrying `watch` (made for `io`'s socket).
    pub(crate) fn new(io: T, watch: Rc<Watch>) -> Watched<T> {
        Watched { io, _watch: watch }
    }
}

/// One core's upgraded connections.
#[derive(Debug, Default)]
pub(crate) struct Upgrades {
    live: RefCell<Vec<Weak<Watch>>>,
    /// How many `live` may hold before the dead are swept out.
    sweep_at: Cell<usize>,
    /// Connections upgraded on this core.
    pub(crate) count: Cell<u64>,
}

impl Upgrades {
    /// Called when a connection's task ends, with its drain guard: if its I/O lives on
    /// (an upgrade took it), the watch keeps the guard until the I/O is dropped.
    pub(crate) fn adopt(&self, watch: Rc<Watch>, guard: ConnGuard) {
        if Rc::strong_count(&watch) == 1 {
            return; // The I/O is gone: the connection is over, and `guard` counts it out.
        }
        *watch.guard.borrow_mut() = Some(guard);
        self.count.set(self.count.get() + 1);
        let mut live = self.live.borrow_mut();
        if live.len() >= self.sweep_at.get() {
            live.retain(|w| w.strong_count() > 0);
            self.sweep_at.set((live.len() * 2).max(16));
        }
        live.push(Rc::downgrade(&watch));
    }

    /// At the drain deadline: shuts the socket of every upgraded connection still open
    /// and counts it out of the drain (the application's task drops the stream when it
    /// sees the end; the drain does not wait for that). Returns how many.
    pub(crate) fn cut(&self) -> u64 {
        let mut cut = 0;
        for watch in self.live.take().iter().filter_map(Weak::upgrade) {
            let Some(guard) = watch.guard.take() else {
                continue;
            };
            // SAFETY: `watch` is alive, so the `Watched` that owns it is (the connection
            // task's reference was given up in `adopt`), and with it the stream whose
            // socket `fd` is: a `Watched` drops its stream and its watch together, on
            // this thread, so the fd cannot have been closed (or reused) yet.
            let fd = unsafe { BorrowedFd::borrow_raw(watch.fd) };
            if let Err(e) = socket2::SockRef::from(&fd).shutdown(std::net::Shutdown::Both) {
                tracing::debug!(error = %e, "shutdown of an upgraded connection failed");
            }
            drop(guard);
            cut += 1;
        }
        cut
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
