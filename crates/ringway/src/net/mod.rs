//! Networking: TCP, UDP and Unix sockets (streams and datagrams) on the current core's
//! driver. Socket options go through socket2 (`options.rs`); every type is `AsFd`.
//!
//! Every I/O method takes and returns owned buffers (see [`crate::buf`]). Stream reads
//! and writes take `&mut self`: one reader and one writer at a time per socket, so two
//! sends on one socket can never be in flight out of order.

mod background;
mod options;
mod per_core;
mod socket;
mod split;
mod tcp;
mod udp;
mod unix;
mod unix_datagram;

pub use background::{Flush, SendAllFuture};
pub use per_core::bind_per_core;
pub use socket::{ReadFuture, RecvNext, RecvStream, WriteAll, WriteFuture};
pub use split::{ReadHalf, WriteHalf};
pub use tcp::{Incoming, ListenOptions, OwnedReadHalf, OwnedWriteHalf, TcpListener, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixListener, UnixStream};
pub use unix_datagram::{RecvFromUnix, SendToPath, UnixDatagram, UnixSocketAddr};

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

/// Resolves `addr` to its first address. Literal addresses (`"127.0.0.1:80"`,
/// `SocketAddr`) cost nothing; a host name is looked up synchronously, so on a busy core
/// prefer [`lookup_host`] first.
pub(crate) fn first_addr<A: ToSocketAddrs>(addr: A) -> io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "address resolved to nothing"))
}

/// Looks up a host name on the blocking pool, so the core keeps running meanwhile.
pub async fn lookup_host<A: ToSocketAddrs + Send + 'static>(
    addr: A,
) -> io::Result<Vec<SocketAddr>> {
    crate::runtime::spawn_blocking(move || addr.to_socket_addrs().map(|i| i.collect::<Vec<_>>()))
        .await
        .map_err(|e| io::Error::other(format!("address lookup failed: {e}")))?
}
