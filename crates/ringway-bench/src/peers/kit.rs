//! What the HTTP peers written here share: their command line (`--bind`, `--threads`,
//! `--app`), the listener every core binds, the `listening on` line the harness waits
//! for, and the raw HTTP loop's answer (count the heads of what arrived, append that
//! many canned responses).
//!
//! Each peer binary keeps only what is its runtime's own: how it spawns, reads and
//! writes. So the peers differ in the runtime, never in the HTTP work they do.

use std::cell::RefCell;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};

use clap::Args;

use crate::peers::canned::{App, Canned};
use crate::peers::heads::HeadCounter;
use crate::peers::listen::bind_listener;

/// The listen backlog of every peer written here (the kernel caps it at somaxconn).
pub const BACKLOG: i32 = 4096;
/// Read buffer per connection of the raw loops.
pub const READ_BUF: usize = 16 * 1024;

/// The arguments every HTTP peer takes.
#[derive(Debug, Clone, Args)]
pub struct PeerArgs {
    /// Address to listen on (port 0: the kernel picks; every core shares it).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Threads (one per server core).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Which canned response: `hello` or `body`.
    #[arg(long, default_value = "hello", value_parser = App::parse)]
    pub app: App,
}

/// One `SO_REUSEPORT` listener per thread on one port: the first resolves port 0, the
/// others bind the port it got.
pub fn listeners(addr: SocketAddr, threads: usize) -> io::Result<Vec<TcpListener>> {
    let first = bind_listener(addr, BACKLOG, true)?;
    let addr = first.local_addr()?;
    let mut all = vec![first];
    for _ in 1..threads.max(1) {
        all.push(bind_listener(addr, BACKLOG, true)?);
    }
    Ok(all)
}

/// Prints the line the harness waits for, flushed.
pub fn announce(name: &str, addr: SocketAddr, threads: usize) -> io::Result<()> {
    let mut out = io::stdout();
    writeln!(out, "{name} listening on {addr} ({threads} threads)")?;
    out.flush()
}

thread_local! {
    static CANNED: RefCell<Option<Canned>> = const { RefCell::new(None) };
}

/// Appends `n` canned responses of `app` to `out`, dated this second. The response is
/// built once per thread and re-dated at most once a second.
#[inline]
pub fn respond(app: App, n: u32, out: &mut Vec<u8>) {
    CANNED.with(|c| {
        let mut c = c.borrow_mut();
        let canned = c.get_or_insert_with(|| Canned::new(app));
        canned.refresh();
        canned.append(n, out);
    })
}

/// The raw HTTP loop's state for one connection: the heads seen so far.
#[derive(Debug, Clone)]
pub struct RawConn {
    heads: HeadCounter,
    app: App,
}

impl RawConn {
    /// A connection answering `app`.
    pub fn new(app: App) -> RawConn {
        RawConn {
            heads: HeadCounter::new(),
            app,
        }
    }

    /// Feeds what arrived; appends the responses it completes to `out`; returns how
    /// many requests it completed.
    #[inline]
    pub fn on_bytes(&mut self, data: &[u8], out: &mut Vec<u8>) -> u32 {
        let n = self.heads.feed(data);
        if n > 0 {
            respond(self.app, n, out);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_conn_answers_each_head_once() {
        let mut c = RawConn::new(App::Hello);
        let mut out = Vec::new();
        assert_eq!(c.on_bytes(b"GET / HTTP/1.1\r\n", &mut out), 0);
        assert!(out.is_empty());
        assert_eq!(c.on_bytes(b"\r\nGET / HTTP/1.1\r\n\r\n", &mut out), 2);
        assert_eq!(out.len(), 2 * Canned::new(App::Hello).as_bytes().len());
    }

    #[test]
    fn listeners_share_one_port() {
        let l = listeners("127.0.0.1:0".parse().unwrap(), 3).unwrap();
        let port = l[0].local_addr().unwrap().port();
        assert!(l.iter().all(|x| x.local_addr().unwrap().port() == port));
    }
}
