//! [`UnixDatagram`]: datagrams between processes on one machine, and
//! [`UnixSocketAddr`], the address of a Unix socket.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::socket::{ReadFuture, Socket, WriteFuture};
use crate::buf::{IoBuf, IoBufMut};
use crate::driver::{op as raw, Completion, Op, RawAddr};
use crate::io::ops::SendTo;
use crate::io::{OpFuture, Operation};
use crate::runtime::context::with_driver;

/// A Unix datagram socket: message boundaries kept, no connection needed, peers named
/// by path (or unnamed). Reads and writes take owned buffers, as every ringway socket.
///
/// # Examples
///
/// ```
/// use ringway::net::UnixDatagram;
///
/// #[ringway::main]
/// async fn main() -> std::io::Result<()> {
///     let dir = std::env::temp_dir().join(format!("ringway-dgram-doc-{}", std::process::id()));
///     std::fs::create_dir_all(&dir)?;
///     let server = UnixDatagram::bind(dir.join("server"))?;
///     let client = UnixDatagram::bind(dir.join("client"))?;
///     let (r, _) = client.send_to(&b"ping"[..], dir.join("server")).await;
///     r?;
///     let (r, buf) = server.recv_from(vec![0; 64]).await;
///     let (n, from) = r?;
///     assert_eq!(&buf[..n], b"ping");
///     assert_eq!(from.as_pathname(), Some(dir.join("client").as_path()));
///     std::fs::remove_dir_all(&dir)?;
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct UnixDatagram {
    socket: Socket,
}

impl UnixDatagram {
    /// A socket bound to `path` (which must not exist yet).
    ///
    /// # Errors
    ///
    /// `AddrInUse` if something is at `path`, `NotFound` if its directory is missing,
    /// `InvalidInput` if it is too long for a socket address; the path is named.
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        let path = path.as_ref();
        let addr = RawAddr::from_unix_path(path)?;
        let socket = Socket::new(libc::AF_UNIX, libc::SOCK_DGRAM)?;
        socket.bind(&addr).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot bind {}: {e}", path.display()))
        })?;
        Ok(UnixDatagram { socket })
    }

    /// A socket bound to no path: it can send (its datagrams arrive unnamed) and receive
    /// answers on a connected pair, but nobody can address it.
    pub fn unbound() -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            socket: Socket::new(libc::AF_UNIX, libc::SOCK_DGRAM)?,
        })
    }

    /// Two sockets connected to each other.
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let flags = with_driver(|d| d.socket_flags());
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two fds socketpair writes; checked below.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM | flags, 0, fds.as_mut_ptr()) }
            < 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: two fresh fds we own.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok((
            UnixDatagram {
                socket: Socket::from_fd(a),
            },
            UnixDatagram {
                socket: Socket::from_fd(b),
            },
        ))
    }

    /// Sends to and receives from `path` only, from now on ([`send`](Self::send),
    /// [`recv`](Self::recv)).
    ///
    /// # Errors
    ///
    /// `NotFound` if no socket is bound at `path` (`ECONNREFUSED` if one was and is
    /// gone); the path is named.
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        let path = path.as_ref();
        let addr = socket2::SockAddr::unix(path)?;
        self.socket
            .sock()
            .connect(&addr)
            .map_err(|e| io::Error::new(e.kind(), format!("connect to {}: {e}", path.display())))
    }

    /// Sends one datagram to the connected peer.
    pub fn send<B: IoBuf + Unpin>(&self, buf: B) -> WriteFuture<B> {
        self.socket.write(buf)
    }

    /// Receives one datagram from the connected peer (a datagram longer than `buf`'s
    /// room is cut short).
    pub fn recv<B: IoBufMut + Unpin>(&self, buf: B) -> ReadFuture<B> {
        self.socket.read(buf)
    }

    /// Sends one datagram to the socket bound at `path`.
    pub fn send_to<B: IoBuf + Unpin, P: AsRef<Path>>(&self, buf: B, path: P) -> SendToPath<B> {
        match RawAddr::from_unix_path(path.as_ref()) {
            Ok(addr) => SendToPath {
                inner: Ok(OpFuture::new(SendTo {
                    fd: self.socket.fd(),
                    buf,
                    addr,
                })),
            },
            Err(e) => SendToPath {
                inner: Err(Some((e, buf))),
            },
        }
    }

    /// Receives one datagram and the address of its sender.
    pub fn recv_from<B: IoBufMut + Unpin>(&self, buf: B) -> OpFuture<RecvFromUnix<B>> {
        OpFuture::new(RecvFromUnix {
            fd: self.socket.fd(),
            buf,
            msg: Box::new(MsgParts::new()),
        })
    }

    /// The address this socket is bound to.
    pub fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        Ok(UnixSocketAddr::from_raw(&self.socket.local_addr()?))
    }

    /// The address of the connected peer.
    pub fn peer_addr(&self) -> io::Result<UnixSocketAddr> {
        Ok(UnixSocketAddr::from_raw(&self.socket.peer_addr()?))
    }

    /// Shuts down reading, writing or both.
    pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        self.socket.shutdown(how)
    }
}

impl AsRawFd for UnixDatagram {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.fd()
    }
}

impl AsFd for UnixDatagram {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.borrowed()
    }
}

/// Future of [`UnixDatagram::send_to`]: the send, or the bad path's error with the
/// buffer back.
#[must_use = "futures do nothing unless awaited"]
pub struct SendToPath<B: IoBuf + Unpin> {
    inner: Result<OpFuture<SendTo<B>>, Option<(io::Error, B)>>,
}

impl<B: IoBuf + Unpin> std::future::Future for SendToPath<B> {
    type Output = (io::Result<usize>, B);

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match &mut self.inner {
            Ok(send) => std::pin::Pin::new(send).poll(cx),
            Err(bad) => {
                let (e, buf) = bad.take().expect("polled after completion");
                std::task::Poll::Ready((Err(e), buf))
            }
        }
    }
}

impl<B: IoBuf + Unpin> fmt::Debug for SendToPath<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendToPath").finish_non_exhaustive()
    }
}

/// A `msghdr` with its iovec and the room for the sender's address, boxed: the kernel
/// writes into it until the final completion, wherever the future moves.
struct MsgParts {
    msg: libc::msghdr,
    iov: libc::iovec,
    addr: RawAddr,
}

impl MsgParts {
    fn new() -> MsgParts {
        MsgParts {
            msg: raw::empty_msghdr(),
            iov: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            },
            addr: RawAddr::empty(),
        }
    }
}

/// Receive one datagram and its sender's Unix address (`recvmsg`).
pub struct RecvFromUnix<B> {
    fd: RawFd,
    buf: B,
    msg: Box<MsgParts>,
}

impl<B: IoBufMut + Unpin> Operation for RecvFromUnix<B> {
    type Output = (io::Result<(usize, UnixSocketAddr)>, B);
    fn op(&mut self) -> Op {
        let parts = &mut *self.msg;
        parts.addr = RawAddr::empty();
        parts.iov = libc::iovec {
            iov_base: self.buf.stable_mut_ptr().cast(),
            iov_len: self.buf.bytes_total(),
        };
        let (name, len) = parts.addr.as_out_ptr();
        parts.msg.msg_name = name.cast();
        // SAFETY: `len` points at the address's length field, just set.
        parts.msg.msg_namelen = unsafe { *len };
        parts.msg.msg_iov = &mut parts.iov;
        parts.msg.msg_iovlen = 1;
        raw::RecvMsg {
            fd: self.fd,
            msg: &mut parts.msg,
        }
        .into()
    }
    fn complete(mut self, c: Completion) -> Self::Output {
        let r = c.io_result().map(|n| {
            // SAFETY: the kernel wrote `n` bytes at the start of the buffer.
            unsafe { self.buf.set_init(n) };
            let mut addr = self.msg.addr;
            addr.len = self.msg.msg.msg_namelen;
            (n, UnixSocketAddr::from_raw(&addr))
        });
        (r, self.buf)
    }
}

impl<B> fmt::Debug for RecvFromUnix<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFromUnix")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

/// The address of a Unix socket: a path, an abstract name (Linux), or none (an unbound
/// socket's).
#[derive(Clone, PartialEq, Eq)]
pub struct UnixSocketAddr {
    kind: AddrKind,
}

#[derive(Clone, PartialEq, Eq)]
enum AddrKind {
    Unnamed,
    Path(std::path::PathBuf),
    Abstract(Vec<u8>),
}

impl UnixSocketAddr {
    fn from_raw(raw: &RawAddr) -> UnixSocketAddr {
        // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_un; the bytes
        // past `len` are not read.
        let sun = unsafe { &*(&raw.storage as *const _ as *const libc::sockaddr_un) };
        let header = std::mem::size_of::<libc::sa_family_t>();
        let len = (raw.len as usize)
            .saturating_sub(header)
            .min(sun.sun_path.len());
        let bytes: Vec<u8> = sun.sun_path[..len].iter().map(|&c| c as u8).collect();
        let kind = match bytes.first() {
            None => AddrKind::Unnamed,
            Some(0) => AddrKind::Abstract(bytes[1..].to_vec()),
            Some(_) => {
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                AddrKind::Path(Path::new(OsStr::from_bytes(&bytes[..end])).to_owned())
            }
        };
        UnixSocketAddr { kind }
    }

    /// The path, for a socket bound to one.
    pub fn as_pathname(&self) -> Option<&Path> {
        match &self.kind {
            AddrKind::Path(p) => Some(p),
            _ => None,
        }
    }

    /// The name, for a socket in the abstract namespace.
    pub fn as_abstract_name(&self) -> Option<&[u8]> {
        match &self.kind {
            AddrKind::Abstract(n) => Some(n),
            _ => None,
        }
    }

    /// True for an unbound socket's address.
    pub fn is_unnamed(&self) -> bool {
        self.kind == AddrKind::Unnamed
    }
}

impl fmt::Debug for UnixSocketAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            AddrKind::Unnamed => write!(f, "(unnamed)"),
            AddrKind::Path(p) => write!(f, "{p:?} (pathname)"),
            AddrKind::Abstract(n) => write!(f, "{:?} (abstract)", String::from_utf8_lossy(n)),
        }
    }
}
