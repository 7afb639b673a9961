//! Unix domain stream sockets.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use super::background::{Flush, SendAllFuture};
use super::socket::{ReadFuture, RecvStream, Socket, WriteAll, WriteFuture};
use crate::buf::{IoBuf, IoBufMut};
use crate::driver::RawAddr;
use crate::io::ops::{Accept, WriteVectored};
use crate::io::OpFuture;

/// A Unix stream listener. The socket file is not removed on drop (as with std).
#[derive(Debug)]
pub struct UnixListener {
    pub(super) socket: Socket,
}

impl UnixListener {
    /// Binds to a filesystem path.
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        let path = path.as_ref();
        let addr = RawAddr::from_unix_path(path)?;
        let socket = Socket::new(libc::AF_UNIX, libc::SOCK_STREAM)?;
        socket.bind(&addr).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot bind {}: {e}", path.display()))
        })?;
        socket.listen(1024)?;
        Ok(UnixListener { socket })
    }

    /// Accepts one connection (cancel-safe, as for TCP).
    pub async fn accept(&self) -> io::Result<UnixStream> {
        let (fd, _) = OpFuture::new(Accept {
            fd: self.socket.fd(),
        })
        .await?;
        Ok(UnixStream {
            socket: Socket::from_fd(fd),
        })
    }
}

impl AsRawFd for UnixListener {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.fd()
    }
}

/// A Unix stream connection.
#[derive(Debug)]
pub struct UnixStream {
    pub(super) socket: Socket,
}

impl UnixStream {
    /// Connects to a listener's path.
    pub async fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let path = path.as_ref();
        let addr = RawAddr::from_unix_path(path)?;
        let socket = Socket::new(libc::AF_UNIX, libc::SOCK_STREAM)?;
        socket
            .connect_op(addr, None)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("connect to {}: {e}", path.display())))?;
        Ok(UnixStream { socket })
    }

    /// A connected pair.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let flags = crate::runtime::context::with_driver(|d| d.socket_flags());
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | flags,
                0,
                fds.as_mut_ptr(),
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: two fresh fds we own.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok((
            UnixStream {
                socket: Socket::from_fd(a),
            },
            UnixStream {
                socket: Socket::from_fd(b),
            },
        ))
    }

    /// Reads into `buf`; `Ok(0)` at end of stream.
    pub fn read<B: IoBufMut + Unpin>(&mut self, buf: B) -> ReadFuture<B> {
        self.socket.read(buf)
    }

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

    /// Says that a task is about to wait for the background send in flight (if any) to
    /// end by a means of its own, not [`flush`](Self::flush): its buffer's drop, as
    /// ringway-compat's writer does. On io_uring the core's wait then ends at that
    /// send's completion, which it otherwise looks beyond when the buffer's
    /// [`drop_wakes_nobody`](crate::buf::IoBuf::drop_wakes_nobody) is true. Call it
    /// before each such wait; `flush` and `send_all` need none.
    pub fn awaiting_send(&self) {
        self.socket.awaiting_send()
    }

    /// Writes several buffers in one `sendmsg`.
    pub fn write_vectored<B: IoBuf + Unpin>(&mut self, bufs: Vec<B>) -> OpFuture<WriteVectored<B>> {
        self.socket.write_vectored(bufs)
    }

    /// A multishot receive into pool buffers.
    pub fn recv_multishot(&mut self) -> RecvStream {
        self.socket.recv_multishot()
    }

    /// Borrowed halves: one that reads and one that writes, usable at the same time in
    /// one task (see [`ReadHalf`](super::ReadHalf)).
    pub fn split(&mut self) -> (super::ReadHalf<'_>, super::WriteHalf<'_>) {
        super::split::split(&self.socket)
    }

    /// Shuts down reading, writing or both.
    pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        self.socket.shutdown(how)
    }
}

impl AsRawFd for UnixStream {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.fd()
    }
}
