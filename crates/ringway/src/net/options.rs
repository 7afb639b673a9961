//! Socket options of the TCP and UDP types, set and read through socket2 (the one
//! place ringway's sockets meet `setsockopt`). Anything not named here is one
//! `socket2::SockRef::from(&socket)` away: every net type implements `AsFd`.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use socket2::TcpKeepalive;

use super::{TcpListener, TcpStream, UdpSocket, UnixListener, UnixStream};

/// Options every socket has: TTL and buffer sizes.
macro_rules! common_options {
    ($ty:ty) => {
        impl $ty {
            /// Sets the time-to-live of packets sent from this socket (`IP_TTL`; on
            /// an IPv6 socket the hop limit, `IPV6_UNICAST_HOPS`).
            pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
                if self.socket.is_ipv6()? {
                    self.socket.sock().set_unicast_hops_v6(ttl)
                } else {
                    self.socket.sock().set_ttl_v4(ttl)
                }
            }

            /// The time-to-live (`IP_TTL`, or `IPV6_UNICAST_HOPS` on IPv6).
            pub fn ttl(&self) -> io::Result<u32> {
                if self.socket.is_ipv6()? {
                    self.socket.sock().unicast_hops_v6()
                } else {
                    self.socket.sock().ttl_v4()
                }
            }

            /// Sets the send buffer size (`SO_SNDBUF`; the kernel doubles it and caps
            /// it at `net.core.wmem_max`).
            pub fn set_send_buffer_size(&self, bytes: usize) -> io::Result<()> {
                self.socket.sock().set_send_buffer_size(bytes)
            }

            /// The send buffer size (`SO_SNDBUF`), as the kernel keeps it.
            pub fn send_buffer_size(&self) -> io::Result<usize> {
                self.socket.sock().send_buffer_size()
            }

            /// Sets the receive buffer size (`SO_RCVBUF`; doubled and capped at
            /// `net.core.rmem_max` by the kernel).
            pub fn set_recv_buffer_size(&self, bytes: usize) -> io::Result<()> {
                self.socket.sock().set_recv_buffer_size(bytes)
            }

            /// The receive buffer size (`SO_RCVBUF`), as the kernel keeps it.
            pub fn recv_buffer_size(&self) -> io::Result<usize> {
                self.socket.sock().recv_buffer_size()
            }
        }
    };
}

/// `AsFd`, for `socket2::SockRef::from(&socket)` and other fd-taking APIs.
macro_rules! as_fd {
    ($($ty:ty),*) => {$(
        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                self.socket.borrowed()
            }
        }
    )*};
}

as_fd!(TcpStream, TcpListener, UdpSocket, UnixStream, UnixListener);

common_options!(TcpStream);
common_options!(TcpListener);
common_options!(UdpSocket);

impl TcpStream {
    /// Turns TCP keepalive on (`SO_KEEPALIVE`), with the first probe after `idle`
    /// without traffic (`TCP_KEEPIDLE`), or off with `None`.
    pub fn set_keepalive(&self, idle: Option<Duration>) -> io::Result<()> {
        let sock = self.socket.sock();
        match idle {
            Some(idle) => sock.set_tcp_keepalive(&TcpKeepalive::new().with_time(idle)),
            None => sock.set_keepalive(false),
        }
    }

    /// The keepalive idle time if keepalive is on, `None` if it is off.
    pub fn keepalive(&self) -> io::Result<Option<Duration>> {
        let sock = self.socket.sock();
        if !sock.keepalive()? {
            return Ok(None);
        }
        sock.tcp_keepalive_time().map(Some)
    }

    /// Sets `SO_LINGER`: with `Some(d)`, closing waits up to `d` for unsent data
    /// (`Some(0)` resets the connection at close); `None` restores the default.
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        self.socket.sock().set_linger(linger)
    }

    /// `SO_LINGER`.
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        self.socket.sock().linger()
    }
}

impl UdpSocket {
    /// Allows sending to broadcast addresses (`SO_BROADCAST`).
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.socket.sock().set_broadcast(on)
    }

    /// `SO_BROADCAST`.
    pub fn broadcast(&self) -> io::Result<bool> {
        self.socket.sock().broadcast()
    }

    /// Joins the IPv4 multicast group `group` on the interface with address
    /// `interface` (`0.0.0.0`: the kernel's choice).
    pub fn join_multicast_v4(&self, group: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()> {
        self.socket.sock().join_multicast_v4(&group, &interface)
    }

    /// Leaves an IPv4 multicast group.
    pub fn leave_multicast_v4(&self, group: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()> {
        self.socket.sock().leave_multicast_v4(&group, &interface)
    }

    /// Joins the IPv6 multicast group `group` on interface index `interface` (0: any).
    pub fn join_multicast_v6(&self, group: Ipv6Addr, interface: u32) -> io::Result<()> {
        self.socket.sock().join_multicast_v6(&group, interface)
    }

    /// Leaves an IPv6 multicast group.
    pub fn leave_multicast_v6(&self, group: Ipv6Addr, interface: u32) -> io::Result<()> {
        self.socket.sock().leave_multicast_v6(&group, interface)
    }

    /// Whether this socket's own IPv4 multicast datagrams loop back to it
    /// (`IP_MULTICAST_LOOP`).
    pub fn set_multicast_loop_v4(&self, on: bool) -> io::Result<()> {
        self.socket.sock().set_multicast_loop_v4(on)
    }

    /// `IP_MULTICAST_LOOP`.
    pub fn multicast_loop_v4(&self) -> io::Result<bool> {
        self.socket.sock().multicast_loop_v4()
    }

    /// The TTL of IPv4 multicast datagrams (`IP_MULTICAST_TTL`; 1 keeps them on the
    /// local network).
    pub fn set_multicast_ttl_v4(&self, ttl: u32) -> io::Result<()> {
        self.socket.sock().set_multicast_ttl_v4(ttl)
    }

    /// `IP_MULTICAST_TTL`.
    pub fn multicast_ttl_v4(&self) -> io::Result<u32> {
        self.socket.sock().multicast_ttl_v4()
    }

    /// Whether this socket's own IPv6 multicast datagrams loop back to it
    /// (`IPV6_MULTICAST_LOOP`).
    pub fn set_multicast_loop_v6(&self, on: bool) -> io::Result<()> {
        self.socket.sock().set_multicast_loop_v6(on)
    }

    /// `IPV6_MULTICAST_LOOP`.
    pub fn multicast_loop_v6(&self) -> io::Result<bool> {
        self.socket.sock().multicast_loop_v6()
    }
}
