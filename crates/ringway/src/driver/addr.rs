//! Socket addresses in the kernel's layout, kept in an operation's own memory while the
//! kernel reads or writes them.

use std::net::SocketAddr;

/// A socket address in the kernel's layout, copyable into a slot.
#[derive(Clone, Copy)]
pub struct RawAddr {
    pub(crate) storage: libc::sockaddr_storage,
    pub(crate) len: libc::socklen_t,
}

impl std::fmt::Debug for RawAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_socket_addr() {
            Some(a) => write!(f, "{a}"),
            None => write!(f, "RawAddr(family {})", self.storage.ss_family),
        }
    }
}

impl RawAddr {
    /// An empty address for the kernel to fill in.
    pub fn empty() -> Self {
        // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
        let storage = unsafe { std::mem::zeroed() };
        RawAddr {
            storage,
            len: std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    /// The kernel layout of an IP socket address.
    pub fn from_socket_addr(addr: &SocketAddr) -> Self {
        let mut raw = RawAddr::empty();
        match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
                unsafe {
                    std::ptr::write(&mut raw.storage as *mut _ as *mut libc::sockaddr_in, sin)
                };
                raw.len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
                unsafe {
                    std::ptr::write(&mut raw.storage as *mut _ as *mut libc::sockaddr_in6, sin6)
                };
                raw.len = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        raw
    }

    /// A Unix socket path address. Fails if the path is too long.
    pub fn from_unix_path(path: &std::path::Path) -> std::io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let mut raw = RawAddr::empty();
        // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_un.
        let sun = unsafe { &mut *(&mut raw.storage as *mut _ as *mut libc::sockaddr_un) };
        if bytes.len() >= sun.sun_path.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "unix socket path is {} bytes; at most {} fit",
                    bytes.len(),
                    sun.sun_path.len() - 1
                ),
            ));
        }
        sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (dst, src) in sun.sun_path.iter_mut().zip(bytes) {
            *dst = *src as libc::c_char;
        }
        raw.len = (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
        Ok(raw)
    }

    /// The IP address this holds, if it is one.
    pub fn to_socket_addr(&self) -> Option<SocketAddr> {
        match self.storage.ss_family as i32 {
            libc::AF_INET => {
                // SAFETY: the family says this is a sockaddr_in.
                let sin = unsafe { &*(&self.storage as *const _ as *const libc::sockaddr_in) };
                let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::new(ip.into(), u16::from_be(sin.sin_port)))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says this is a sockaddr_in6.
                let sin6 = unsafe { &*(&self.storage as *const _ as *const libc::sockaddr_in6) };
                let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                    ip,
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }

    /// Pointer and length for the kernel to read.
    pub(crate) fn as_ptr(&self) -> (*const libc::sockaddr, libc::socklen_t) {
        (&self.storage as *const _ as *const libc::sockaddr, self.len)
    }

    /// Pointers for the kernel to write an address and its length into (`accept`,
    /// `recvfrom`); start from [`RawAddr::empty`], whose length is the room there is.
    pub(crate) fn as_out_ptr(&mut self) -> (*mut libc::sockaddr, *mut libc::socklen_t) {
        (
            &mut self.storage as *mut _ as *mut libc::sockaddr,
            &mut self.len,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_addr_round_trips_ip_addresses() {
        for a in ["127.0.0.1:80", "[::1]:8080", "[fe80::1%2]:9"] {
            let sa: SocketAddr = a.parse().unwrap();
            assert_eq!(RawAddr::from_socket_addr(&sa).to_socket_addr(), Some(sa));
        }
        let long = std::path::PathBuf::from("/".repeat(200));
        assert!(RawAddr::from_unix_path(&long).is_err());
    }
}
