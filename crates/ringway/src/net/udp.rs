//! UDP sockets.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::socket::{ReadFuture, Socket, WriteFuture};
use crate::buf::{IoBuf, IoBufMut};
use crate::driver::RawAddr;
use crate::io::ops::{RecvFrom, SendTo};
use crate::io::OpFuture;

/// A UDP socket on the current core. Datagram operations take `&self`: datagrams are
/// independent, so several may be in flight at once.
#[derive(Debug)]
pub struct UdpSocket {
    pub(super) socket: Socket,
}

impl UdpSocket {
    /// Binds to `addr` (port 0 for any free port).
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        let addr = super::first_addr(addr)?;
        let domain = if addr.is_ipv4() {
            libc::AF_INET
        } else {
            libc::AF_INET6
        };
        let socket = Socket::new(domain, libc::SOCK_DGRAM)?;
        socket
            .bind(&RawAddr::from_socket_addr(&addr))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot bind {addr}: {e}")))?;
        Ok(UdpSocket { socket })
    }

    /// Adopts a std socket.
    pub fn from_std(s: std::net::UdpSocket) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            socket: Socket::adopt(OwnedFd::from(s))?,
        })
    }

    /// Sets the default peer for [`send`](Self::send) and [`recv`](Self::recv), and
    /// filters incoming datagrams to it. Does no I/O, so it is synchronous.
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        let addr = RawAddr::from_socket_addr(&super::first_addr(addr)?);
        let (p, l) = addr.as_ptr();
        // SAFETY: p points to a live sockaddr of length l.
        if unsafe { libc::connect(self.socket.fd(), p, l) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends one datagram to `addr`.
    pub fn send_to<B: IoBuf + Unpin>(&self, buf: B, addr: SocketAddr) -> OpFuture<SendTo<B>> {
        OpFuture::new(SendTo {
            fd: self.socket.fd(),
            buf,
            addr: RawAddr::from_socket_addr(&addr),
        })
    }

    /// Receives one datagram and its source.
    pub fn recv_from<B: IoBufMut + Unpin>(&self, buf: B) -> OpFuture<RecvFrom<B>> {
        OpFuture::new(RecvFrom {
            fd: self.socket.fd(),
            buf,
        })
    }

    /// Sends one datagram to the connected peer.
    pub fn send<B: IoBuf + Unpin>(&self, buf: B) -> WriteFuture<B> {
        self.socket.write(buf)
    }

    /// Receives one datagram from the connected peer.
    pub fn recv<B: IoBufMut + Unpin>(&self, buf: B) -> ReadFuture<B> {
        self.socket.read(buf)
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket
            .local_addr()?
            .to_socket_addr()
            .ok_or_else(|| io::Error::other("not an IP socket"))
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.fd()
    }
}
