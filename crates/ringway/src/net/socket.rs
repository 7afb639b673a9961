//! The socket under every net type: an owned fd that tells the driver before it closes,
//! plus the stream operations TCP and Unix streams share.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::task::{Context, Poll, Waker};

use super::background::{Background, Flush, SendAllFuture};
use crate::buf::{IoBuf, IoBufMut, PoolBuf, Slice};
use crate::driver::op::RecvMulti;
use crate::driver::{QueueWatch, RawAddr};
use crate::io::ops::{self, Read, Write, WriteVectored};
use crate::io::{MultiShot, OpFuture};
use crate::runtime::context::{try_with_driver, with_driver};

/// An owned socket fd, closed on drop (after the driver forgets it, and after its
/// background send, if one is in flight).
#[derive(Debug)]
pub(crate) struct Socket {
    fd: Option<OwnedFd>,
    /// Made at the first `send_all`.
    background: std::sync::OnceLock<std::sync::Arc<Background>>,
    /// What `TCP_NODELAY` is known to be (`NODELAY_*`): inherited from the listener
    /// that accepted the connection, or last set. A call that asks for the known value
    /// makes no syscall.
    nodelay: std::sync::atomic::AtomicU8,
    /// A connection a listener accepted: closed through the ring at drop (io_uring: the
    /// close goes with the core's next enter, no syscall of its own). The connection's
    /// task usually ends right there, and the loop turns. Everything else closes at
    /// once: a listener's or a datagram socket's address is free when the drop
    /// returns, and a client that drops its connection and then blocks (a test reading
    /// the other end with std) does not wait for a turn that cannot come.
    close_in_ring: bool,
}

/// `Socket::nodelay`: not known.
pub(super) const NODELAY_UNKNOWN: u8 = 0;
/// `Socket::nodelay`: off.
pub(super) const NODELAY_OFF: u8 = 1;
/// `Socket::nodelay`: on.
pub(super) const NODELAY_ON: u8 = 2;

impl Socket {
    /// A new socket with the flags the current backend wants.
    pub(super) fn new(domain: i32, ty: i32) -> io::Result<Socket> {
        let flags = with_driver(|d| d.socket_flags());
        // SAFETY: socket() takes no pointers; the result is checked.
        let fd = unsafe { libc::socket(domain, ty | flags, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        Ok(Socket::from_fd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(super) fn from_fd(fd: OwnedFd) -> Socket {
        Socket {
            fd: Some(fd),
            background: std::sync::OnceLock::new(),
            nodelay: std::sync::atomic::AtomicU8::new(NODELAY_UNKNOWN),
            close_in_ring: false,
        }
    }

    /// This socket as a connection a listener accepted: closed through the ring, with
    /// `TCP_NODELAY` known to be `nodelay` (a `NODELAY_*`: what the listener had).
    pub(super) fn accepted(mut self, nodelay: u8) -> Socket {
        self.close_in_ring = true;
        *self.nodelay.get_mut() = nodelay;
        self
    }

    /// This socket with `TCP_NODELAY` known to be `nodelay` (a `NODELAY_*`).
    pub(super) fn with_nodelay(mut self, nodelay: u8) -> Socket {
        *self.nodelay.get_mut() = nodelay;
        self
    }

    /// `TCP_NODELAY`, set only if it is not known to be `on` already.
    pub(super) fn set_nodelay(&self, on: bool) -> io::Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        let want = if on { NODELAY_ON } else { NODELAY_OFF };
        if self.nodelay.load(Relaxed) == want {
            return Ok(());
        }
        self.sock().set_tcp_nodelay(on)?;
        self.nodelay.store(want, Relaxed);
        Ok(())
    }

    /// What `TCP_NODELAY` is, asked of the kernel only if not known.
    pub(super) fn nodelay(&self) -> io::Result<bool> {
        match self.nodelay.load(std::sync::atomic::Ordering::Relaxed) {
            NODELAY_ON => Ok(true),
            NODELAY_OFF => Ok(false),
            _ => self.sock().tcp_nodelay(),
        }
    }

    /// Adopts a socket made elsewhere (std), setting the blocking mode the backend wants.
    pub(super) fn adopt(fd: OwnedFd) -> io::Result<Socket> {
        let nonblocking = with_driver(|d| d.socket_flags()) & libc::SOCK_NONBLOCK != 0;
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on an fd we own; no pointers.
        unsafe {
            let fl = libc::fcntl(raw, libc::F_GETFL);
            if fl < 0 {
                return Err(io::Error::last_os_error());
            }
            let want = if nonblocking {
                fl | libc::O_NONBLOCK
            } else {
                fl & !libc::O_NONBLOCK
            };
            if want != fl && libc::fcntl(raw, libc::F_SETFL, want) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Socket::from_fd(fd))
    }

    pub(super) fn fd(&self) -> RawFd {
        self.fd.as_ref().expect("socket is open").as_raw_fd()
    }

    /// The socket as socket2 sees it: every option goes through there.
    pub(super) fn sock(&self) -> socket2::SockRef<'_> {
        socket2::SockRef::from(self.fd.as_ref().expect("socket is open"))
    }

    /// True for an IPv6 socket.
    pub(super) fn is_ipv6(&self) -> io::Result<bool> {
        Ok(i32::from(self.local_addr()?.storage.ss_family) == libc::AF_INET6)
    }

    pub(super) fn borrowed(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_ref().expect("socket is open").as_fd()
    }

    pub(super) fn bind(&self, addr: &RawAddr) -> io::Result<()> {
        let (p, l) = addr.as_ptr();
        // SAFETY: p points to a live sockaddr of length l.
        if unsafe { libc::bind(self.fd(), p, l) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub(super) fn listen(&self, backlog: i32) -> io::Result<()> {
        // SAFETY: no pointers.
        if unsafe { libc::listen(self.fd(), backlog) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn name(&self, peer: bool) -> io::Result<RawAddr> {
        let mut a = RawAddr::empty();
        // SAFETY: storage and len are live and sized for the call.
        let r = unsafe {
            let p = &mut a.storage as *mut _ as *mut libc::sockaddr;
            if peer {
                libc::getpeername(self.fd(), p, &mut a.len)
            } else {
                libc::getsockname(self.fd(), p, &mut a.len)
            }
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(a)
    }

    pub(super) fn local_addr(&self) -> io::Result<RawAddr> {
        self.name(false)
    }

    pub(super) fn peer_addr(&self) -> io::Result<RawAddr> {
        self.name(true)
    }

    pub(super) fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        // SAFETY: no pointers.
        if unsafe { libc::shutdown(self.fd(), shut_how(how)) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// [`shutdown`](Self::shutdown) as an operation of the driver: on io_uring an
    /// `IORING_OP_SHUTDOWN` that enters the kernel with the turn's other requests, so it
    /// costs no syscall of its own; on epoll `shutdown(2)`, at submission.
    pub(super) async fn shutdown_op(&self, how: std::net::Shutdown) -> io::Result<()> {
        let op = crate::driver::op::Shutdown {
            fd: self.fd(),
            how: shut_how(how),
        };
        OpFuture::new(ops::ResultOnly(op.into())).await.map(drop)
    }

    pub(super) fn read<B: IoBufMut + Unpin>(&self, buf: B) -> OpFuture<Read<B>> {
        OpFuture::new(Read {
            fd: self.fd(),
            buf,
            offset: None,
        })
    }

    pub(super) fn write<B: IoBuf + Unpin>(&self, buf: B) -> OpFuture<Write<B>> {
        OpFuture::new(Write {
            fd: self.fd(),
            buf,
            offset: None,
        })
    }

    pub(super) fn write_all<B: IoBuf + Unpin>(&self, buf: B) -> WriteAll<'_, B> {
        WriteAll::new(self.fd(), buf)
    }

    pub(super) fn send_all<B: IoBuf + Unpin + 'static>(&self, buf: B) -> SendAllFuture<'_, B> {
        SendAllFuture::new(self.fd(), self.background(), buf)
    }

    pub(super) fn flush(&self) -> Flush<'_> {
        Flush::new(self.background())
    }

    pub(super) fn awaiting_send(&self) {
        if let Some(b) = self.background.get() {
            b.awaited();
        }
    }

    fn background(&self) -> &std::sync::Arc<Background> {
        self.background.get_or_init(Background::take)
    }

    pub(super) fn write_vectored<B: IoBuf + Unpin>(
        &self,
        bufs: Vec<B>,
    ) -> OpFuture<WriteVectored<B>> {
        OpFuture::new(WriteVectored {
            fd: self.fd(),
            iov: Vec::with_capacity(bufs.len()),
            bufs,
        })
    }

    pub(super) fn recv_multishot(&self) -> RecvStream {
        RecvStream {
            shot: MultiShot::new(RecvMulti { fd: self.fd() }.into()),
            done: false,
            watch: None,
            waker: None,
        }
    }

    pub(super) fn connect_op(
        &self,
        addr: RawAddr,
        timeout: Option<std::time::Duration>,
    ) -> OpFuture<ops::Connect> {
        OpFuture::new(ops::Connect {
            fd: self.fd(),
            addr,
            timeout,
        })
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let Some(fd) = self.fd.take() else { return };
        let sending = self.background.get().and_then(|b| b.in_flight());
        if let Some(b) = self.background.take() {
            Background::keep(b); // (kept only if no send is in flight)
        }
        if sending.is_some() || self.close_in_ring {
            // Closed by the driver (through the ring, after the background send if one
            // is in flight); outside a runtime (or with the driver busy) there is no
            // driver to ask.
            let mut fd = Some(fd);
            try_with_driver(|d| d.close_after(fd.take().expect("once"), sending));
            if let Some(fd) = fd {
                // No driver: no send can be in flight either. Close plainly.
                drop(fd);
            }
            return;
        }
        crate::io::forget_fd(fd.as_raw_fd());
        drop(fd);
    }
}

/// Received data as pool buffers, from a multishot receive: one armed operation serves
/// every read until end of stream. Buffers go back to the pool when dropped; an idle
/// connection holds none. If the pool runs dry the receive waits for a buffer to come
/// back and resumes where it stopped: no byte is lost or reordered.
///
/// Dropping the stream cancels the receive.
#[must_use = "streams do nothing unless polled"]
pub struct RecvStream {
    shot: MultiShot,
    done: bool,
    /// The queue the driver pushes this receive's completions to, shared with it; set
    /// at the first `Pending` (before that they wait in the driver's slot).
    watch: Option<QueueWatch>,
    /// The waker the driver's slot holds (the one of the last `Pending`).
    waker: Option<Waker>,
}

impl RecvStream {
    /// The next chunk of bytes, `None` at end of stream. After an error the stream ends.
    /// (A named future rather than an `async fn`: one call per poll, no state machine
    /// around it; awaited the same way.)
    // An async stream's `next`, as futures' StreamExt names it; not an iterator.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> RecvNext<'_> {
        RecvNext { stream: self }
    }

    /// Poll form of [`next`](Self::next).
    #[inline(always)]
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<PoolBuf>>> {
        if let Some(shared) = &self.watch {
            let Ok(mut items) = shared.items.try_borrow_mut() else {
                return self.poll_taking(cx);
            };
            // Bytes waiting first in line, the commonest answer after `Pending`: taken
            // here, inline (a backlogged receive wants to hear of it: the slow way).
            if !self.done && !shared.backlogged.get() {
                if let Some((_, Some(b))) = items.take_first_if(|(r, b)| *r > 0 && b.is_some()) {
                    return Poll::Ready(Some(Ok(b)));
                }
            }
            let empty = items.is_empty();
            drop(items);
            if empty
                && !shared.done.get()
                && !self.done
                && self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
            {
                // Nothing waits, the operation goes on, and the driver's slot holds this
                // task's waker, armed: asking the driver would only find that out. It
                // wakes the task when it queues something. (The `Pending` a stream
                // mostly answers: inline, with no call and no stack frame.)
                return Poll::Pending;
            }
        }
        self.poll_taking(cx)
    }

    /// `poll_next` when something may be waiting (or the fast `Pending` does not hold).
    #[inline(never)]
    fn poll_taking(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<PoolBuf>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(shared) = &self.watch {
            let popped = shared.items.borrow_mut().pop_front();
            if let Some(item) = popped {
                if shared.backlogged.get() {
                    self.took_while_backlogged();
                }
                return self.taken(Poll::Ready(Some(item)), cx);
            }
            // Empty: `poll_next` has seen that it cannot answer `Pending` by itself.
        }
        self.poll_driver(cx)
    }

    /// `poll_next` past what needs no driver. Kept out of line so that the `Pending` a
    /// stream mostly answers costs no stack frame of this size.
    #[inline(never)]
    fn poll_driver(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<PoolBuf>>> {
        let polled = match self.shot.id() {
            // Armed: only the result and the buffer come back from the driver.
            Some(id) => with_driver(|d| d.poll_recv(id, cx)),
            None => self
                .shot
                .poll_next(cx)
                .map(|c| c.map(|c| (c.result, c.buf))),
        };
        self.taken(polled, cx)
    }

    /// What a poll's outcome means to the reader.
    #[inline(always)]
    fn taken(
        &mut self,
        polled: Poll<Option<(i32, Option<PoolBuf>)>>,
        cx: &Context<'_>,
    ) -> Poll<Option<io::Result<PoolBuf>>> {
        match polled {
            Poll::Pending => {
                // The driver has just registered `cx`'s waker: note it.
                match &self.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => self.registered(cx),
                }
                Poll::Pending
            }
            Poll::Ready(Some((r, Some(b)))) if r > 0 => Poll::Ready(Some(Ok(b))),
            Poll::Ready(other) => {
                self.done = true;
                Poll::Ready(Self::ended(other))
            }
        }
    }

    /// Took a completion while the receive is stopped for backlog: the driver resumes it
    /// once the stream has caught up.
    #[cold]
    fn took_while_backlogged(&self) {
        if let Some(id) = self.shot.id() {
            with_driver(|d| d.stream_took(id));
        }
    }

    /// The driver's slot holds `cx`'s waker from now on; the first time, the stream
    /// takes its queue over from the driver (completions are pushed there from now on).
    #[cold]
    fn registered(&mut self, cx: &Context<'_>) {
        self.waker = Some(cx.waker().clone());
        if self.watch.is_none() {
            if let Some(id) = self.shot.id() {
                self.watch = with_driver(|d| d.watch_queue(id));
            }
        }
    }

    /// What a completion without bytes means to the reader: end of stream (also when the
    /// operation has ended), or an error. The stream ends either way.
    #[cold]
    fn ended(last: Option<(i32, Option<PoolBuf>)>) -> Option<io::Result<PoolBuf>> {
        match last {
            None | Some((0, _)) => None,
            Some((r, _)) if r < 0 => Some(Err(io::Error::from_raw_os_error(-r))),
            Some(_) => Some(Err(io::Error::other("receive completed without a buffer"))),
        }
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        let Some(queue) = self.watch.take() else {
            return; // (the multishot detaches itself)
        };
        // The operation detached first (the slot's share of the queue goes with it),
        // then the queue kept by the driver for the next stream, if it can be.
        let id = self.shot.take_id();
        let mut queue = Some(queue);
        try_with_driver(|d| {
            if let Some(id) = id {
                d.detach(id, None);
            }
            queue = d.keep_queue(queue.take().expect("once"));
        });
        drop(queue); // not kept: dropped outside the driver (its buffers go back)
    }
}

/// Future of [`RecvStream::next`]: the next chunk, `None` at end of stream.
#[must_use = "futures do nothing unless awaited"]
#[derive(Debug)]
pub struct RecvNext<'a> {
    stream: &'a mut RecvStream,
}

impl std::future::Future for RecvNext<'_> {
    type Output = Option<io::Result<PoolBuf>>;

    #[inline(always)]
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().stream.poll_next(cx)
    }
}

impl std::fmt::Debug for RecvStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvStream")
            .field("done", &self.done)
            .finish()
    }
}

/// Future type of `read`: await it for `(io::Result<usize>, buf)`; `cancel()` it to get
/// the buffer back early.
pub type ReadFuture<B> = OpFuture<Read<B>>;
/// Future type of `write`.
pub type WriteFuture<B> = OpFuture<Write<B>>;

/// Future of `write_all`: sends the whole buffer, one send after another until every
/// byte is taken, then gives the buffer back. Written by hand rather than as an
/// `async fn`, so that it stays one small state machine that moves no nested futures.
#[must_use = "futures do nothing unless awaited"]
pub struct WriteAll<'a, B: IoBuf + Unpin> {
    fd: std::os::fd::RawFd,
    /// The send in flight: always `Some` until the future returns.
    send: Option<OpFuture<Write<Slice<B>>>>,
    total: usize,
    done: usize,
    _stream: std::marker::PhantomData<&'a ()>,
}

impl<B: IoBuf + Unpin> WriteAll<'_, B> {
    pub(crate) fn new(fd: std::os::fd::RawFd, buf: B) -> Self {
        let total = buf.bytes_init();
        WriteAll {
            fd,
            send: Some(Self::send(fd, Slice::new(buf, 0, total))),
            total,
            done: 0,
            _stream: std::marker::PhantomData,
        }
    }

    fn send(fd: std::os::fd::RawFd, buf: Slice<B>) -> OpFuture<Write<Slice<B>>> {
        OpFuture::new(Write {
            fd,
            buf,
            offset: None,
        })
    }
}

impl<B: IoBuf + Unpin> std::future::Future for WriteAll<'_, B> {
    type Output = (io::Result<()>, B);

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            let send = this
                .send
                .as_mut()
                .expect("WriteAll polled after completion");
            let (r, slice) = std::task::ready!(std::pin::Pin::new(send).poll(cx));
            this.send = None;
            let buf = slice.into_inner();
            match r {
                Ok(0) if this.done < this.total => {
                    let e = io::Error::new(io::ErrorKind::WriteZero, "peer took no bytes");
                    return Poll::Ready((Err(e), buf));
                }
                Ok(n) => this.done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready((Err(e), buf)),
            }
            if this.done >= this.total {
                return Poll::Ready((Ok(()), buf));
            }
            this.send = Some(Self::send(this.fd, Slice::new(buf, this.done, this.total)));
        }
    }
}

impl<B: IoBuf + Unpin> std::fmt::Debug for WriteAll<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteAll")
            .field("total", &self.total)
            .field("done", &self.done)
            .finish()
    }
}

/// `how` as `shutdown(2)` takes it.
fn shut_how(how: std::net::Shutdown) -> i32 {
    match how {
        std::net::Shutdown::Read => libc::SHUT_RD,
        std::net::Shutdown::Write => libc::SHUT_WR,
        std::net::Shutdown::Both => libc::SHUT_RDWR,
    }
}
