//! TCP: listeners (with `SO_REUSEPORT` for one listener per core, and a multishot accept
//! stream) and streams.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::background::{Flush, SendAllFuture};
use super::socket::{
    ReadFuture, RecvStream, Socket, WriteAll, WriteFuture, NODELAY_OFF, NODELAY_ON, NODELAY_UNKNOWN,
};
use crate::buf::{IoBuf, IoBufMut};
use crate::driver::op::AcceptMulti;
use crate::driver::RawAddr;
use crate::io::ops::{Accept, WriteVectored};
use crate::io::{MultiShot, OpFuture};

/// Options for [`TcpListener::bind_with`].
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// `SO_REUSEPORT`: several listeners (one per core) on one port, the kernel spreading
    /// connections among them. Default false.
    pub reuse_port: bool,
    /// `SO_REUSEADDR`. Default true.
    pub reuse_addr: bool,
    /// Listen backlog. Default 1024.
    pub backlog: i32,
    /// Only IPv6 on an IPv6 address. Default: the system's.
    pub only_v6: Option<bool>,
    /// `TCP_NODELAY` on the listener, which every accepted connection inherits (Linux
    /// copies it): a server that wants it on its connections sets it here, and then
    /// [`TcpStream::set_nodelay`]`(true)` on an accepted connection costs no syscall.
    /// Default false.
    pub nodelay: bool,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            reuse_port: false,
            reuse_addr: true,
            backlog: 1024,
            only_v6: None,
            nodelay: false,
        }
    }
}

impl ListenOptions {
    /// Sets these options on a listening socket about to be bound to `addr`
    /// (`reuse_port` separately: `bind_per_core` sets it on all but its probe).
    pub(super) fn apply(
        &self,
        sock: &socket2::SockRef<'_>,
        addr: &SocketAddr,
        reuse_port: bool,
    ) -> io::Result<()> {
        sock.set_reuse_address(self.reuse_addr)?;
        if reuse_port {
            sock.set_reuse_port(true)?;
        }
        if let (Some(v6), true) = (self.only_v6, addr.is_ipv6()) {
            sock.set_only_v6(v6)?;
        }
        if self.nodelay {
            sock.set_tcp_nodelay(true)?;
        }
        Ok(())
    }
}

fn domain_of(addr: &SocketAddr) -> i32 {
    if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    }
}

/// A TCP listener on the current core.
#[derive(Debug)]
pub struct TcpListener {
    pub(super) socket: Socket,
    /// `TCP_NODELAY` of the listener, inherited by what it accepts (a `NODELAY_*`).
    nodelay: u8,
}

impl TcpListener {
    /// Binds with default [`ListenOptions`].
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        Self::bind_with(addr, &ListenOptions::default())
    }

    /// Binds with options.
    pub fn bind_with<A: ToSocketAddrs>(addr: A, opts: &ListenOptions) -> io::Result<TcpListener> {
        let addr = super::first_addr(addr)?;
        let socket = Socket::new(domain_of(&addr), libc::SOCK_STREAM)?;
        opts.apply(&socket.sock(), &addr, opts.reuse_port)?;
        socket
            .bind(&RawAddr::from_socket_addr(&addr))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot bind {addr}: {e}")))?;
        socket.listen(opts.backlog)?;
        let nodelay = if opts.nodelay {
            NODELAY_ON
        } else {
            NODELAY_OFF
        };
        Ok(TcpListener { socket, nodelay })
    }

    /// Adopts a std listener (one of [`bind_per_core`](super::bind_per_core)'s, say).
    pub fn from_std(l: std::net::TcpListener) -> io::Result<TcpListener> {
        let socket = Socket::adopt(OwnedFd::from(l))?;
        // What its connections will inherit: asked once, here.
        let nodelay = match socket.sock().tcp_nodelay() {
            Ok(true) => NODELAY_ON,
            Ok(false) => NODELAY_OFF,
            Err(_) => NODELAY_UNKNOWN,
        };
        Ok(TcpListener { socket, nodelay })
    }

    /// Accepts one connection. Cancel-safe: if this future is dropped after the kernel
    /// accepted, the new connection is closed, not leaked.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (fd, addr) = OpFuture::new(Accept {
            fd: self.socket.fd(),
        })
        .await?;
        let stream = TcpStream {
            socket: Socket::from_fd(fd).accepted(self.nodelay),
        };
        let addr = match addr {
            Some(a) => a,
            None => stream.peer_addr()?,
        };
        Ok((stream, addr))
    }

    /// A stream of accepted connections from one multishot accept (io_uring) or one
    /// registration (epoll): no submission per connection.
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming {
            listener: self,
            shot: MultiShot::new(
                AcceptMulti {
                    fd: self.socket.fd(),
                }
                .into(),
            ),
        }
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket
            .local_addr()?
            .to_socket_addr()
            .ok_or_else(|| io::Error::other("not an IP socket"))
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.fd()
    }
}

/// Connections from [`TcpListener::incoming`].
pub struct Incoming<'a> {
    listener: &'a TcpListener,
    shot: MultiShot,
}

impl std::fmt::Debug for Incoming<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming").finish_non_exhaustive()
    }
}

impl Incoming<'_> {
    /// The next connection. An error (e.g. `EMFILE`) is returned once and accepting
    /// resumes on the next call; `None` only if the listener is unusable.
    pub async fn next(&mut self) -> Option<io::Result<TcpStream>> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Poll form of [`next`](Self::next).
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<TcpStream>>> {
        loop {
            match self.shot.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                // Ended without an error in hand (e.g. re-armed by the driver, or the
                // error was already returned): start again.
                Poll::Ready(None) => continue,
                Poll::Ready(Some(c)) if c.result >= 0 => {
                    // SAFETY: the kernel created this fd for us.
                    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(c.result) };
                    return Poll::Ready(Some(Ok(TcpStream {
                        socket: Socket::from_fd(fd).accepted(self.listener.nodelay),
                    })));
                }
                Poll::Ready(Some(c)) => {
                    let e = io::Error::from_raw_os_error(-c.result);
                    if matches!(-c.result, libc::EBADF | libc::EINVAL | libc::ENOTSOCK) {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

/// A TCP connection.
///
/// Dropping a connection that a [`TcpListener`] accepted closes it with the core's next
/// turn: on io_uring through the ring (no syscall of its own, after any operation
/// started before), on epoll at once. Code that blocks the core's thread right after
/// such a drop (a test reading the peer's end with std, say) lets the loop turn first
/// ([`yield_now`](crate::runtime::yield_now)). A connection made by
/// [`connect`](Self::connect) or adopted with [`from_std`](Self::from_std) closes at
/// once.
#[derive(Debug)]
pub struct TcpStream {
    pub(super) socket: Socket,
}

impl TcpStream {
    /// Connects to `addr`.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        Self::connect_inner(super::first_addr(addr)?, None).await
    }

    /// Connects, failing with `TimedOut` after `timeout` (an io_uring linked timeout, or
    /// a driver deadline on epoll).
    pub async fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        Self::connect_inner(*addr, Some(timeout)).await
    }

    async fn connect_inner(addr: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
        let socket = Socket::new(domain_of(&addr), libc::SOCK_STREAM)?;
        socket
            .connect_op(RawAddr::from_socket_addr(&addr), timeout)
            .await
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ETIMEDOUT) {
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("connect to {addr} timed out"),
                    )
                } else {
                    io::Error::new(e.kind(), format!("connect to {addr}: {e}"))
                }
            })?;
        Ok(TcpStream {
            socket: socket.with_nodelay(NODELAY_OFF),
        })
    }

    /// Adopts a connected std stream.
    pub fn from_std(s: std::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            socket: Socket::adopt(OwnedFd::from(s))?,
        })
    }

    /// Reads into `buf` (up to its capacity); `Ok(0)` at end of stream.
    pub fn read<B: IoBufMut + Unpin>(&mut self, buf: B) -> ReadFuture<B> {
        self.socket.read(buf)
    }

    /// Writes some of `buf`'s bytes; returns how many.
    pub fn write<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteFuture<B> {
        self.socket.write(buf)
    }

    /// Writes all of `buf`.
    pub fn write_all<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteAll<'_, B> {
        self.socket.write_all(buf)
    }

    /// Starts sending all of `buf` in the background and returns as soon as it has
    /// started, without waiting for the kernel to finish (the driver keeps `buf` until
    /// then and drops it after). If an earlier background send on this stream is still
    /// in flight, waits for it first: they go out in order, one at a time. An error
    /// from an earlier one is returned here, and from then on (the stream is broken).
    /// [`flush`](Self::flush) waits for the send in flight. See the `net::background`
    /// module docs for why this exists: a completion runtime otherwise pays a wake-up
    /// and a poll per awaited send.
    ///
    /// # Examples
    ///
    /// ```
    /// # ringway::start(async {
    /// # let listener = ringway::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// # let addr = listener.local_addr().unwrap();
    /// # ringway::spawn(async move {
    /// #     let (mut s, _) = listener.accept().await.unwrap();
    /// #     let (r, b) = s.read(vec![0u8; 64]).await;
    /// #     let n = r.unwrap();
    /// #     s.write_all(b[..n].to_vec()).await.0.unwrap();
    /// # }).detach();
    /// let mut stream = ringway::net::TcpStream::connect(addr).await?;
    /// stream.send_all(b"ping".to_vec()).await?; // started; nobody waits for it
    /// let (n, reply) = stream.read(vec![0u8; 64]).await;
    /// assert_eq!(&reply[..n?], b"ping");
    /// stream.flush().await?; // long done by now
    /// # Ok::<_, std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn send_all<B: IoBuf + Unpin + 'static>(&mut self, buf: B) -> SendAllFuture<'_, B> {
        self.socket.send_all(buf)
    }

    /// Waits until the background send in flight (from [`send_all`](Self::send_all)),
    /// if any, has finished; returns the error that broke the stream, if one did.
    pub fn flush(&mut self) -> Flush<'_> {
        self.socket.flush()
    }

    /// Says that a task is about to wait for the background send in flight (if any) to
    /// end by a means of its own, not [`flush`](Self::flush): its buffer's drop, as
    /// ringway-compat's writer does. On io_uring the core's wait then ends at that
    /// send's completion, which it otherwise looks beyond when the buffer's
    /// [`drop_wakes_nobody`](crate::buf::IoBuf::drop_wakes_nobody) is true. Call it
    /// before each such wait; `flush` and `send_all` need none.
    pub fn awaiting_send(&self) {
        self.socket.awaiting_send()
    }

    /// Writes several buffers in one `sendmsg`; returns how many bytes went.
    pub fn write_vectored<B: IoBuf + Unpin>(&mut self, bufs: Vec<B>) -> OpFuture<WriteVectored<B>> {
        self.socket.write_vectored(bufs)
    }

    /// A multishot receive: see [`RecvStream`].
    pub fn recv_multishot(&mut self) -> RecvStream {
        self.socket.recv_multishot()
    }

    /// Borrowed halves: one that reads and one that writes, usable at the same time in
    /// one task (see [`ReadHalf`](super::ReadHalf)). For halves that two tasks own,
    /// [`into_split`](Self::into_split).
    pub fn split(&mut self) -> (super::ReadHalf<'_>, super::WriteHalf<'_>) {
        super::split::split(&self.socket)
    }

    /// Splits into a read half and a write half that can live in different tasks (of
    /// the same core). The socket closes when both are dropped.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let s = Rc::new(self.socket);
        (
            OwnedReadHalf { socket: s.clone() },
            OwnedWriteHalf { socket: s },
        )
    }

    /// `TCP_NODELAY`. No syscall if it is known to be set that way already (a
    /// connection accepted by a listener with [`ListenOptions::nodelay`] has it on).
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.socket.set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is set.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.socket.nodelay()
    }

    /// Shuts down reading, writing or both, now (`shutdown(2)`).
    pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        self.socket.shutdown(how)
    }

    /// Shuts down the write direction through the driver: the peer reads end of stream
    /// after everything sent before. On io_uring it is an `IORING_OP_SHUTDOWN` that goes
    /// into the kernel with the turn's other requests, so a server that closes politely
    /// makes no syscall outside the ring for it; on epoll it is `shutdown(2)`. A send
    /// started with [`send_all`](Self::send_all) may still be in flight: await
    /// [`flush`](Self::flush) first.
    ///
    /// ```
    /// # ringway::start(async {
    /// let listener = ringway::net::TcpListener::bind("127.0.0.1:0")?;
    /// let addr = listener.local_addr()?;
    /// ringway::spawn(async move {
    ///     let (mut conn, _) = listener.accept().await.unwrap();
    ///     conn.write_all(b"bye".to_vec()).await.0.unwrap();
    ///     conn.close_write().await.unwrap();
    /// })
    /// .detach();
    /// let mut client = ringway::net::TcpStream::connect(addr).await?;
    /// let mut got = Vec::new();
    /// loop {
    ///     let (n, buf) = client.read(vec![0u8; 64]).await;
    ///     match n? {
    ///         0 => break, // end of stream: the server's direction is shut down
    ///         n => got.extend_from_slice(&buf[..n]),
    ///     }
    /// }
    /// assert_eq!(got, b"bye");
    /// # Ok::<_, std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn close_write(&self) -> io::Result<()> {
        self.socket.shutdown_op(std::net::Shutdown::Write).await
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.socket
            .peer_addr()?
            .to_socket_addr()
            .ok_or_else(|| io::Error::other("not an IP socket"))
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket
            .local_addr()?
            .to_socket_addr()
            .ok_or_else(|| io::Error::other("not an IP socket"))
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.fd()
    }
}

/// The reading half of [`TcpStream::into_split`].
#[derive(Debug)]
pub struct OwnedReadHalf {
    socket: Rc<Socket>,
}

impl OwnedReadHalf {
    /// Reads into `buf`; `Ok(0)` at end of stream.
    pub fn read<B: IoBufMut + Unpin>(&mut self, buf: B) -> ReadFuture<B> {
        self.socket.read(buf)
    }

    /// A multishot receive: see [`RecvStream`].
    pub fn recv_multishot(&mut self) -> RecvStream {
        self.socket.recv_multishot()
    }
}

/// The writing half of [`TcpStream::into_split`]. Only one exists, so sends stay ordered.
#[derive(Debug)]
pub struct OwnedWriteHalf {
    socket: Rc<Socket>,
}

impl OwnedWriteHalf {
    /// Writes some of `buf`.
    pub fn write<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteFuture<B> {
        self.socket.write(buf)
    }

    /// Writes all of `buf`.
    pub fn write_all<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteAll<'_, B> {
        self.socket.write_all(buf)
    }

    /// Starts sending all of `buf` in the background and returns as soon as it has
    /// started, without waiting for the kernel to finish (the driver keeps `buf` until
    /// then and drops it after). If an earlier background send on this stream is still
    /// in flight, waits for it first: they go out in order, one at a time. An error
    /// from an earlier one is returned here, and from then on (the stream is broken).
    /// [`flush`](Self::flush) waits for the send in flight. See the `net::background`
    /// module docs for why this exists: a completion runtime otherwise pays a wake-up
    /// and a poll per awaited send.
    ///
    /// # Examples
    ///
    /// ```
    /// # ringway::start(async {
    /// # let listener = ringway::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// # let addr = listener.local_addr().unwrap();
    /// # ringway::spawn(async move {
    /// #     let (mut s, _) = listener.accept().await.unwrap();
    /// #     let (r, b) = s.read(vec![0u8; 64]).await;
    /// #     let n = r.unwrap();
    /// #     s.write_all(b[..n].to_vec()).await.0.unwrap();
    /// # }).detach();
    /// let mut stream = ringway::net::TcpStream::connect(addr).await?;
    /// stream.send_all(b"ping".to_vec()).await?; // started; nobody waits for it
    /// let (n, reply) = stream.read(vec![0u8; 64]).await;
    /// assert_eq!(&reply[..n?], b"ping");
    /// stream.flush().await?; // long done by now
    /// # Ok::<_, std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn send_all<B: IoBuf + Unpin + 'static>(&mut self, buf: B) -> SendAllFuture<'_, B> {
        self.socket.send_all(buf)
    }

    /// Waits until the background send in flight (from [`send_all`](Self::send_all)),
    /// if any, has finished; returns the error that broke the stream, if one did.
    pub fn flush(&mut self) -> Flush<'_> {
        self.socket.flush()
    }

    /// Says that a task is about to wait for the background send in flight by a means
    /// of its own (see [`TcpStream::awaiting_send`](super::TcpStream::awaiting_send)).
    pub fn awaiting_send(&self) {
        self.socket.awaiting_send()
    }

    /// Shuts down the write direction (the peer reads end of stream).
    pub fn shutdown(&self) -> io::Result<()> {
        self.socket.shutdown(std::net::Shutdown::Write)
    }
}
