//! Picking a free loopback port for a server under test.
//!
//! Each peer gets a fresh port so that a server still lingering in TIME_WAIT from the
//! previous round can never be confused with the next one. The port is found by binding
//! port 0 and reading back what the kernel chose; the listener is then released so that
//! the server can bind it. The race (another process grabbing the port in between) is
//! handled by the harness: a server that exits before saying `listening on` is retried
//! on a fresh port a couple of times before the round is reported failed.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};

/// Returns a TCP port on 127.0.0.1 that was free at the time of the call.
/// In a network namespace whose `127.0.0.1` is elsewhere (`--net veth`: the client's
/// namespace reaches the server's `127.0.0.1` across a veth) the port comes from the
/// unspecified address instead.
pub fn pick_free_port() -> io::Result<u16> {
    let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .or_else(|_| TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)))?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picked_port_is_nonzero_and_released() {
        // Another process on the machine may take the port as an ephemeral source port
        // between the pick and the re-bind (the very race the harness retries on), so
        // allow a few attempts; if the listener were not released, all would fail.
        let mut rebound = false;
        for _ in 0..5 {
            let port = pick_free_port().unwrap();
            assert_ne!(port, 0);
            if let Ok(again) = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)) {
                assert_eq!(again.local_addr().unwrap().port(), port);
                rebound = true;
                break;
            }
        }
        assert!(rebound, "a picked port could never be bound again");
    }
}
