//! One listener per core on one port, and no stranger on it.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};

use super::ListenOptions;

/// Binds `count` listening sockets on `addr` that share its port with `SO_REUSEPORT`
/// (one per core: the kernel spreads connections among them), after checking that no
/// other socket holds the port.
///
/// The check is a first bind without `SO_REUSEPORT` (with `SO_REUSEADDR` if `opts`
/// asks, so that connections of an earlier run waiting in TIME_WAIT do not count): if
/// another server listens on the port, even one that uses `SO_REUSEPORT` itself, it
/// fails with `AddrInUse`, as nginx does. `SO_REUSEPORT` is for the cores of one
/// server, not for strangers. Port 0 becomes one free port, the same for every
/// listener.
///
/// The listeners are made on the calling thread, so that every error is reported
/// here; each core adopts its own with [`TcpListener::from_std`](super::TcpListener::from_std).
/// (`opts.reuse_port` is implied.)
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use ringway::net::{bind_per_core, ListenOptions};
///
/// let ls = bind_per_core("127.0.0.1:0".parse().unwrap(), 2, &ListenOptions::default())?;
/// let addr = ls[0].local_addr()?;
/// assert_eq!(ls[1].local_addr()?, addr);
/// // A second server on the same port is refused, even with SO_REUSEPORT.
/// let e = bind_per_core(addr, 2, &ListenOptions::default()).unwrap_err();
/// assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
/// # Ok(())
/// # }
/// ```
pub fn bind_per_core(
    addr: SocketAddr,
    count: usize,
    opts: &ListenOptions,
) -> io::Result<Vec<std::net::TcpListener>> {
    // A std listener only for its `local_addr`: the probe never listens.
    let probe = std::net::TcpListener::from(bound(addr, opts, false)?);
    let addr = probe.local_addr()?;
    drop(probe);
    (0..count.max(1))
        .map(|_| {
            let fd = bound(addr, opts, true)?;
            // SAFETY: no pointers.
            if unsafe { libc::listen(fd.as_raw_fd(), opts.backlog) } < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(std::net::TcpListener::from(fd))
        })
        .collect()
}

/// A TCP socket bound to `addr`, with `SO_REUSEPORT` if `reuse_port`.
fn bound(addr: SocketAddr, opts: &ListenOptions, reuse_port: bool) -> io::Result<OwnedFd> {
    // Blocking and close-on-exec, as std makes its sockets: each core adopts its
    // listener with `TcpListener::from_std`, which sets the mode its backend wants.
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    opts.apply(&socket2::SockRef::from(&socket), &addr, reuse_port)?;
    socket
        .bind(&addr.into())
        .map_err(|e| io::Error::new(e.kind(), format!("cannot bind {addr}: {e}")))?;
    Ok(socket.into())
}
