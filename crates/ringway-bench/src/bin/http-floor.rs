//! The HTTP floor: the simplest HTTP server written straight on the `io-uring` crate.
//!
//! No runtime, no futures, no parsing, no allocation per request: it counts complete
//! request heads (`\r\n\r\n`) and answers each with the canned response of
//! [`ringway_bench::peers::canned`] (the bytes `ringway serve --hello` sends, or with
//! `--app body` those of `ringway serve --static` for the nuclei body; `Date` refreshed
//! once per second). It is the physical limit a runtime's HTTP overhead is measured
//! against, and uses the fast path the design asks of every io_uring driver:
//!
//! - one thread, a ring set up with `SINGLE_ISSUER | DEFER_TASKRUN`, one
//!   `io_uring_enter` (`submit_and_wait`) per loop turn;
//! - one multishot accept on the listener;
//! - one multishot recv per connection over a provided-buffer ring; a buffer goes back
//!   to the ring as soon as its bytes are counted (nothing is kept from a request);
//! - all the responses one receive asks for leave in one send, from a per-connection
//!   output buffer whose capacity is kept across requests; at most one send in flight
//!   per connection (responses owed meanwhile go out together when it completes), and a
//!   short send is resumed where the kernel stopped;
//! - a recv CQE without `IORING_CQE_F_MORE` re-arms the receive, after `ENOBUFS` as soon
//!   as buffers have come back.
//!
//! Per-connection state lives in a `Vec` indexed by file descriptor; a connection's fd is
//! closed only once nothing is in flight for it, so a recycled fd number never receives
//! a completion meant for its predecessor.
//!
//! With `--tls-cert` and `--tls-key` it serves HTTPS the simplest right way (S11): each
//! connection's bytes go through a rustls `ServerConnection` with the configuration
//! `ringway serve` uses (`ringway_http::tls::server_config`: TLS 1.2 and 1.3, ALPN,
//! resumption by tickets and session id), the plaintext's heads are counted, the canned
//! responses written into it, and what it has to send (handshake or records) leaves in
//! one send per turn, as the plain responses do.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use ringway_bench::peers::canned::{App, Canned};
use ringway_bench::peers::floor_ring::{set_nodelay, BufRing, Sq};
use ringway_bench::peers::heads::HeadCounter;
use ringway_bench::peers::listen::bind_listener;
use rustls::{ServerConfig, ServerConnection};

/// Submission queue entries.
const SQ_ENTRIES: u32 = 1024;
/// Completion queue entries (multishot ops can post many CQEs per SQE).
const CQ_ENTRIES: u32 = 8192;
/// Number of provided buffers (a power of two, as the buffer ring requires).
const BUF_COUNT: u16 = 1024;
/// Size of each provided buffer: requests are small, and a buffer is returned at once.
const BUF_SIZE: usize = 4096;
/// Buffer group id of the ring.
const BGID: u16 = 0;
/// Listen backlog (the kernel caps it at `net.core.somaxconn`).
const BACKLOG: i32 = 4096;

/// Operation kinds, stored in the upper half of `user_data`; the fd is the lower half.
const OP_ACCEPT: u64 = 1;
const OP_RECV: u64 = 2;
const OP_SEND: u64 = 3;
const OP_CLOSE: u64 = 4;

fn user_data(op: u64, fd: i32) -> u64 {
    (op << 32) | u64::from(fd as u32)
}

/// HTTP server straight on io_uring (the floor): counts request heads and answers each
/// with the canned `Hello, World!`.
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Which canned response: `hello` (13-byte text) or `body` (the 11,587-byte file).
    #[arg(long, default_value = "hello", value_parser = App::parse)]
    app: App,
    /// Serve HTTPS with this certificate chain (PEM); needs `--tls-key`.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

/// State of one connection, indexed by its fd.
#[derive(Default)]
struct Conn {
    open: bool,
    recv_armed: bool,
    closing: bool,
    heads: HeadCounter,
    /// Responses asked for but not yet in `out` (a send was in flight).
    owed: u32,
    /// Responses being sent; keeps its capacity when reused.
    out: Vec<u8>,
    /// Bytes of `out` the kernel has taken so far.
    sent: usize,
    sending: bool,
    /// The TLS session, when serving HTTPS.
    tls: Option<ServerConnection>,
}

impl Conn {
    /// `true` when something is owed to the peer: responses, or TLS bytes (handshake,
    /// alerts) rustls wants sent.
    fn has_output(&self) -> bool {
        self.owed > 0 || self.tls.as_ref().is_some_and(|t| t.wants_write())
    }
}

/// Feeds received TLS bytes to `tls` and counts the request heads of the plaintext they
/// carry; `Err` when the peer broke the protocol.
fn tls_feed(
    tls: &mut ServerConnection,
    heads: &mut HeadCounter,
    mut bytes: &[u8],
    plain: &mut [u8],
) -> io::Result<u32> {
    let mut n = 0;
    while !bytes.is_empty() {
        tls.read_tls(&mut bytes)?;
        tls.process_new_packets().map_err(io::Error::other)?;
        loop {
            match tls.reader().read(plain) {
                Ok(0) => break,
                Ok(got) => n += heads.feed(&plain[..got]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(n)
}

struct Server {
    conns: Vec<Conn>,
    bufs: BufRing,
    response: Canned,
    /// Connections whose multishot recv ended with ENOBUFS, waiting for buffers.
    starved: Vec<i32>,
    listen_fd: i32,
    /// The TLS configuration when serving HTTPS.
    tls: Option<Arc<ServerConfig>>,
    /// Scratch for decrypted bytes and for responses on their way into rustls, kept
    /// across requests.
    scratch: Vec<u8>,
}

fn arm_accept(sq: &mut Sq<'_>, listen_fd: i32) -> io::Result<()> {
    let sqe = opcode::AcceptMulti::new(types::Fd(listen_fd))
        .flags(libc::SOCK_CLOEXEC)
        .build()
        .user_data(user_data(OP_ACCEPT, listen_fd));
    // SAFETY: the accept takes no pointers of ours.
    unsafe { sq.push(sqe) }
}

impl Server {
    fn conn(&mut self, fd: i32) -> &mut Conn {
        &mut self.conns[fd as usize]
    }

    fn arm_recv(&mut self, sq: &mut Sq<'_>, fd: i32) -> io::Result<()> {
        let sqe = opcode::RecvMulti::new(types::Fd(fd), BGID)
            .build()
            .user_data(user_data(OP_RECV, fd));
        // SAFETY: the receive writes only into provided buffers, which stay in `bufs`
        // (untouched by us) until the kernel hands them over in a completion.
        unsafe { sq.push(sqe)? };
        self.conn(fd).recv_armed = true;
        Ok(())
    }

    /// Sends what is left of the connection's output buffer.
    fn push_send(&mut self, sq: &mut Sq<'_>, fd: i32) -> io::Result<()> {
        let conn = &mut self.conns[fd as usize];
        let rest = &conn.out[conn.sent..];
        let sqe = opcode::Send::new(types::Fd(fd), rest.as_ptr(), rest.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data(OP_SEND, fd));
        conn.sending = true;
        // SAFETY: `out` is neither touched nor reallocated while `sending` is set, which
        // lasts until this send's completion; the `Conn` itself may move when `conns`
        // grows, but the heap buffer of `out` does not.
        unsafe { sq.push(sqe) }
    }

    /// Puts every owed response in the output buffer (through rustls when serving
    /// HTTPS, with whatever else it has to send) and sends them in one send.
    fn flush(&mut self, sq: &mut Sq<'_>, fd: i32) -> io::Result<()> {
        let conn = &mut self.conns[fd as usize];
        conn.out.clear();
        match &mut conn.tls {
            None => self.response.append(conn.owed, &mut conn.out),
            Some(tls) => {
                self.scratch.clear();
                self.response.append(conn.owed, &mut self.scratch);
                tls.writer().write_all(&self.scratch)?;
                while tls.wants_write() {
                    tls.write_tls(&mut conn.out)?;
                }
            }
        }
        conn.owed = 0;
        conn.sent = 0;
        if conn.out.is_empty() {
            return Ok(());
        }
        self.push_send(sq, fd)
    }

    fn on_accept(&mut self, sq: &mut Sq<'_>, res: i32, flags: u32) -> io::Result<()> {
        if res >= 0 {
            let fd = res;
            // TCP_NODELAY came with it from the listener (see `main`).
            let idx = fd as usize;
            if idx >= self.conns.len() {
                self.conns.resize_with(idx + 1, Conn::default);
            }
            let tls = match &self.tls {
                Some(cfg) => {
                    Some(ServerConnection::new(Arc::clone(cfg)).map_err(io::Error::other)?)
                }
                None => None,
            };
            let conn = self.conn(fd);
            conn.open = true;
            conn.closing = false;
            conn.heads = HeadCounter::new();
            conn.owed = 0;
            conn.sending = false;
            conn.tls = tls;
            self.arm_recv(sq, fd)?;
        } else {
            eprintln!("accept: {}", io::Error::from_raw_os_error(-res));
        }
        if !cqueue::more(flags) {
            arm_accept(sq, self.listen_fd)?;
        }
        Ok(())
    }

    fn on_recv(&mut self, sq: &mut Sq<'_>, fd: i32, res: i32, flags: u32) -> io::Result<()> {
        let more = cqueue::more(flags);
        if !more {
            self.conn(fd).recv_armed = false;
        }
        let bid = cqueue::buffer_select(flags);
        if res > 0 {
            let bid = bid.expect("a successful recv from a buffer ring names its buffer");
            self.bufs.taken(bid);
            let conn = &mut self.conns[fd as usize];
            let bytes = self.bufs.bytes(bid, res as usize);
            let heads = match (&mut conn.tls, conn.closing) {
                (_, true) => Ok(0),
                (None, false) => Ok(conn.heads.feed(bytes)),
                (Some(tls), false) => {
                    self.scratch.resize(16 * 1024, 0);
                    tls_feed(tls, &mut conn.heads, bytes, &mut self.scratch)
                }
            };
            self.bufs.give_back(bid);
            let Ok(heads) = heads else {
                // A TLS protocol error: send the alert rustls prepared, then close.
                return self.fail(sq, fd);
            };
            let conn = self.conn(fd);
            conn.owed += heads;
            if conn.has_output() && !conn.sending {
                self.flush(sq, fd)?;
            }
            if !more && !self.conn(fd).closing {
                self.arm_recv(sq, fd)?;
            }
            return Ok(());
        }
        if let Some(bid) = bid {
            // Not expected for res <= 0, but a buffer handed to us must never leak.
            self.bufs.taken(bid);
            self.bufs.give_back(bid);
        }
        if res == -libc::ENOBUFS {
            if !more {
                if self.bufs.available() > 0 {
                    self.arm_recv(sq, fd)?;
                } else {
                    self.starved.push(fd);
                }
            }
            return Ok(());
        }
        // 0: the peer closed its side; < 0: the connection failed.
        self.conn(fd).closing = true;
        if more {
            // Cannot happen for EOF or errors, but if it did, end the recv for good.
            // SAFETY: shutdown takes no pointers; fd is an open socket of ours.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
        self.maybe_close(sq, fd)
    }

    fn on_send(&mut self, sq: &mut Sq<'_>, fd: i32, res: i32) -> io::Result<()> {
        let conn = self.conn(fd);
        conn.sending = false;
        if res < 0 {
            conn.owed = 0;
            conn.closing = true;
            if conn.recv_armed {
                // Make the multishot recv finish (with 0) so that the fd can be closed.
                // SAFETY: shutdown takes no pointers; fd is an open socket of ours.
                unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            }
            return self.maybe_close(sq, fd);
        }
        conn.sent += res as usize;
        if conn.sent < conn.out.len() {
            // Short send: resume where the kernel stopped, still one send in flight.
            return self.push_send(sq, fd);
        }
        if conn.has_output() {
            return self.flush(sq, fd);
        }
        self.maybe_close(sq, fd)
    }

    /// Ends a connection whose peer broke the TLS protocol: what rustls has to say (its
    /// alert) goes out if nothing else is in flight, then the connection closes.
    fn fail(&mut self, sq: &mut Sq<'_>, fd: i32) -> io::Result<()> {
        let conn = self.conn(fd);
        conn.closing = true;
        conn.owed = 0;
        if conn.recv_armed {
            // SAFETY: shutdown takes no pointers; fd is an open socket of ours.
            unsafe { libc::shutdown(fd, libc::SHUT_RD) };
        }
        if !conn.sending && conn.has_output() {
            return self.flush(sq, fd);
        }
        self.maybe_close(sq, fd)
    }

    /// Closes a closing connection once nothing is in flight for it (after answering
    /// the heads that arrived before the peer closed).
    fn maybe_close(&mut self, sq: &mut Sq<'_>, fd: i32) -> io::Result<()> {
        let conn = self.conn(fd);
        if !conn.closing || conn.recv_armed || conn.sending || !conn.open {
            return Ok(());
        }
        if conn.has_output() {
            return self.flush(sq, fd);
        }
        conn.open = false;
        let sqe = opcode::Close::new(types::Fd(fd))
            .build()
            .user_data(user_data(OP_CLOSE, fd));
        // SAFETY: close takes no pointers.
        unsafe { sq.push(sqe) }
    }

    fn handle(&mut self, sq: &mut Sq<'_>, cqe: &cqueue::Entry) -> io::Result<()> {
        let op = cqe.user_data() >> 32;
        let fd = cqe.user_data() as u32 as i32;
        let (res, flags) = (cqe.result(), cqe.flags());
        match op {
            OP_ACCEPT => self.on_accept(sq, res, flags),
            OP_RECV => self.on_recv(sq, fd, res, flags),
            OP_SEND => self.on_send(sq, fd, res),
            OP_CLOSE => {
                if res < 0 {
                    eprintln!("close({fd}): {}", io::Error::from_raw_os_error(-res));
                }
                Ok(())
            }
            _ => unreachable!("unknown user_data {:#x}", cqe.user_data()),
        }
    }

    fn rearm_starved(&mut self, sq: &mut Sq<'_>) -> io::Result<()> {
        while self.bufs.available() > 0 {
            let Some(fd) = self.starved.pop() else { break };
            let conn = self.conn(fd);
            if conn.open && !conn.closing && !conn.recv_armed {
                self.arm_recv(sq, fd)?;
            }
        }
        Ok(())
    }
}

fn run(listener: &TcpListener, app: App, tls: Option<Arc<ServerConfig>>) -> io::Result<()> {
    // Declared before the ring so that it is dropped after it: the kernel may use the
    // buffer ring's memory for as long as the ring exists.
    let mut server = Server {
        conns: Vec::new(),
        bufs: BufRing::new(BUF_COUNT, BUF_SIZE)?,
        response: Canned::new(app),
        starved: Vec::new(),
        listen_fd: listener.as_raw_fd(),
        tls,
        scratch: Vec::new(),
    };
    let mut ring: IoUring<squeue::Entry, cqueue::Entry> = IoUring::builder()
        .setup_cqsize(CQ_ENTRIES)
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(SQ_ENTRIES)
        .map_err(|e| io::Error::new(e.kind(), format!("io_uring setup: {e}")))?;
    // SAFETY: `server` owns the buffer ring and is dropped after `ring` (see above).
    unsafe { server.bufs.register(&ring.submitter(), BGID)? };

    let (submitter, queue, mut cq) = ring.split();
    let mut sq = Sq { submitter, queue };
    arm_accept(&mut sq, server.listen_fd)?;

    let mut out = io::stdout();
    writeln!(out, "listening on {}", listener.local_addr()?)?;
    out.flush()?;

    loop {
        server.bufs.publish();
        sq.queue.sync();
        match sq.submitter.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        // Once per turn: the responses of this turn all carry the current second.
        server.response.refresh();
        cq.sync();
        for cqe in &mut cq {
            server.handle(&mut sq, &cqe)?;
        }
        server.rearm_starved(&mut sq)?;
    }
}

fn main() {
    let args = Args::parse();
    let listener = match bind_listener(args.bind, BACKLOG, false) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("http-floor: bind {}: {e}", args.bind);
            std::process::exit(1);
        }
    };
    // Every accepted connection inherits it: no setsockopt per connection.
    set_nodelay(listener.as_raw_fd());
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => match ringway_http::tls::server_config(cert, key) {
            Ok(cfg) => Some(cfg),
            Err(e) => {
                eprintln!("http-floor: TLS configuration: {e}");
                std::process::exit(1);
            }
        },
        _ => None,
    };
    if let Err(e) = run(&listener, args.app, tls) {
        eprintln!("http-floor: {e}");
        std::process::exit(1);
    }
}
