//! Listening sockets for the peers written here, made the same way for all of them.
//!
//! `std::net::TcpListener::bind` picks its own backlog; a saturation scenario opens 1000
//! connections at once, and a backlog smaller than that turns part of the connects into
//! SYN retransmits a second later, which would measure the backlog instead of the server.
//! So every peer of this crate binds through [`bind_listener`] with an explicit backlog
//! (nginx gets the same through its generated configuration).

use std::io;
use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

/// Binds a TCP listener on `addr` with `SO_REUSEADDR`, the given `backlog` and, when
/// `reuse_port` is set, `SO_REUSEPORT` (one listener per core, the kernel spreading the
/// connections between them).
pub fn bind_listener(addr: SocketAddr, backlog: i32, reuse_port: bool) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_port_zero_and_shares_a_port_with_reuse_port() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let a = bind_listener(any, 1024, true).unwrap();
        let port = a.local_addr().unwrap();
        assert_ne!(port.port(), 0);
        let b = bind_listener(port, 1024, true).expect("a second SO_REUSEPORT listener");
        assert_eq!(b.local_addr().unwrap(), port);
        assert!(
            bind_listener(port, 1024, false).is_err(),
            "without SO_REUSEPORT the port is taken"
        );
    }
}
