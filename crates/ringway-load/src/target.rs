//! Target URLs: `http://`, `https://` and (for echo) `tcp://`, parsed and resolved once,
//! before the run, so that a bad URL or an unknown host is a clear error up front.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::error::LoadError;

/// The protocol spoken to a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// HTTP/1.1 over TCP.
    Http,
    /// HTTP/1.1 over TLS.
    Https,
    /// Raw bytes (echo modes).
    Tcp,
}

/// One parsed, resolved target.
#[derive(Debug, Clone)]
pub struct Target {
    /// The protocol.
    pub scheme: Scheme,
    /// Host as written (without brackets for IPv6): the TLS server name.
    pub host: String,
    /// Port (default 80 / 443).
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
    /// What the `Host` header says: `host` or `host:port` as written in the URL.
    pub authority: String,
    /// The resolved address (the first the resolver returned).
    pub addr: SocketAddr,
}

impl Target {
    /// Parses and resolves `url`. A bare `host:port` means `tcp://host:port`.
    pub fn parse(url: &str) -> Result<Target, LoadError> {
        let bad = |why: &str| LoadError::BadUrl(format!("{url:?}: {why}"));
        let (scheme, rest) = match url.split_once("://") {
            Some((s, r)) => {
                let scheme = match s.to_ascii_lowercase().as_str() {
                    "http" => Scheme::Http,
                    "https" => Scheme::Https,
                    "tcp" => Scheme::Tcp,
                    _ => return Err(bad("scheme must be http, https or tcp")),
                };
                (scheme, r)
            }
            None => (Scheme::Tcp, url),
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        if authority.contains('@') {
            return Err(bad("user information in URLs is not supported"));
        }
        if path.contains('#') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("the path has a fragment, spaces or control characters"));
        }
        let (host, port) = split_host_port(authority).map_err(|w| bad(&w))?;
        let port = match (port, scheme) {
            (Some(p), _) => p,
            (None, Scheme::Http) => 80,
            (None, Scheme::Https) => 443,
            (None, Scheme::Tcp) => return Err(bad("a tcp target needs a port")),
        };
        let addr = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| bad(&format!("cannot resolve {host}: {e}")))?
            .next()
            .ok_or_else(|| bad(&format!("{host} resolves to no address")))?;
        Ok(Target {
            scheme,
            host,
            port,
            path,
            authority: authority.to_string(),
            addr,
        })
    }
}

fn split_host_port(authority: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address needs a closing ']'")?;
        match after {
            "" => (h, None),
            p if p.starts_with(':') => (h, Some(&p[1..])),
            _ => return Err("junk after the IPv6 address".into()),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err(format!("bad port {p:?}")),
            Ok(n) => Some(n),
        },
    };
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?c=d").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8080));
        assert_eq!(t.path, "/a/b?c=d");
        assert_eq!(t.authority, "127.0.0.1:8080");
        let t = Target::parse("https://127.0.0.1").unwrap();
        assert_eq!((t.port, t.path.as_str()), (443, "/"));
        let t = Target::parse("http://[::1]:9000?x").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("::1", 9000, "/?x")
        );
        let t = Target::parse("127.0.0.1:7000").unwrap();
        assert_eq!(t.scheme, Scheme::Tcp);
    }

    #[test]
    fn rejects_bad_urls_clearly() {
        for (url, why) in [
            ("ftp://x/", "scheme"),
            ("http://", "no host"),
            ("http://127.0.0.1:99999/", "bad port"),
            ("http://127.0.0.1:0/", "bad port"),
            ("http://127.0.0.1/a b", "spaces"),
            ("tcp://127.0.0.1", "needs a port"),
            ("http://no-such-host.invalid/", "cannot resolve"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
        }
    }
}
