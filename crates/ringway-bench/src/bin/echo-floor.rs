//! "The floor": the simplest echo server written straight on the `io-uring` crate.
//!
//! No runtime, no futures, no allocation per message: the physical limit that a
//! runtime's overhead is measured against. It uses the fast path the design asks every
//! io_uring driver to use, and nothing more:
//!
//! - a ring set up with `SINGLE_ISSUER | DEFER_TASKRUN`, one `submit_and_wait` per loop;
//! - one multishot accept on the listener;
//! - one multishot recv per connection over a provided-buffer ring that this program
//!   allocates (mmap) and whose tail it advances itself;
//! - the received bytes are sent straight from the provided buffer, which goes back to
//!   the ring when the send has completed (short sends are resumed first);
//! - at most one send in flight per socket, so bytes stay ordered: further buffers
//!   received meanwhile wait in a small per-connection queue of (buffer id, length);
//! - a recv CQE without `IORING_CQE_F_MORE` means the multishot ended: it is re-armed,
//!   and after `ENOBUFS` (the pool ran dry) as soon as buffers have come back.
//!
//! Per-connection state lives in a `Vec` indexed by file descriptor. A connection's fd
//! is closed only once nothing is in flight for it, so a recycled fd number can never
//! receive a completion meant for its predecessor.
//!
//! `--setup coop|plain` builds the ring with `COOP_TASKRUN | TASKRUN_FLAG` or with no
//! flags, only to measure what the setup flags are worth; the floor itself is `defer`.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;

use clap::Parser;
use io_uring::{cqueue, opcode, types, IoUring};
use ringway_bench::peers::floor_ring::{set_nodelay, BufRing, Sq};

/// Submission queue entries.
const SQ_ENTRIES: u32 = 1024;
/// Completion queue entries (multishot ops can post many CQEs per SQE).
const CQ_ENTRIES: u32 = 8192;
/// Number of provided buffers (a power of two, as the buffer ring requires).
const BUF_COUNT: u16 = 512;
/// Size of each provided buffer.
const BUF_SIZE: usize = 16 * 1024;
/// Buffer group id of the ring.
const BGID: u16 = 0;

/// Operation kinds, stored in the upper half of `user_data`; the fd is the lower half.
const OP_ACCEPT: u64 = 1;
const OP_RECV: u64 = 2;
const OP_SEND: u64 = 3;
const OP_CLOSE: u64 = 4;

fn user_data(op: u64, fd: i32) -> u64 {
    (op << 32) | u64::from(fd as u32)
}

/// Echo server straight on io_uring (the floor).
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    bind: SocketAddr,
    /// Ring setup flags: `defer` (SINGLE_ISSUER|DEFER_TASKRUN, the floor's definition),
    /// `coop` (COOP_TASKRUN|TASKRUN_FLAG) or `plain` (none); for experiments only.
    #[arg(long, default_value = "defer")]
    setup: String,
}

/// A send in flight: bytes `off..len` of buffer `bid`.
#[derive(Clone, Copy)]
struct InFlight {
    bid: u16,
    off: u32,
    len: u32,
}

/// State of one connection, indexed by its fd.
#[derive(Default)]
struct Conn {
    open: bool,
    recv_armed: bool,
    closing: bool,
    send: Option<InFlight>,
    /// Buffers received while a send was in flight, in order. Keeps its allocation when
    /// the slot is reused by a later connection on the same fd.
    queued: VecDeque<(u16, u32)>,
}

struct Server {
    conns: Vec<Conn>,
    bufs: BufRing,
    /// Connections whose multishot recv ended with ENOBUFS, waiting for buffers.
    starved: Vec<i32>,
    listen_fd: i32,
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

    fn start_send(&mut self, sq: &mut Sq<'_>, fd: i32, f: InFlight) -> io::Result<()> {
        // SAFETY: off < len <= BUF_SIZE, so the pointer stays inside buffer `bid`.
        let ptr = unsafe { self.bufs.buffer(f.bid).add(f.off as usize) };
        let sqe = opcode::Send::new(types::Fd(fd), ptr, f.len - f.off)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data(OP_SEND, fd));
        // SAFETY: buffer `bid` stays out of the ring (so unwritten) until this send's
        // completion gives it back.
        unsafe { sq.push(sqe)? };
        self.conn(fd).send = Some(f);
        Ok(())
    }

    fn on_accept(&mut self, sq: &mut Sq<'_>, res: i32, flags: u32) -> io::Result<()> {
        if res >= 0 {
            let fd = res;
            // TCP_NODELAY came with it from the listener (see `main`).
            let idx = fd as usize;
            if idx >= self.conns.len() {
                self.conns.resize_with(idx + 1, Conn::default);
            }
            let conn = self.conn(fd);
            conn.open = true;
            conn.closing = false;
            conn.send = None;
            conn.queued.clear();
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
            let conn = self.conn(fd);
            if conn.closing {
                self.bufs.give_back(bid);
            } else if conn.send.is_some() {
                conn.queued.push_back((bid, res as u32));
            } else {
                let f = InFlight {
                    bid,
                    off: 0,
                    len: res as u32,
                };
                self.start_send(sq, fd, f)?;
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
        let mut f = self
            .conn(fd)
            .send
            .take()
            .expect("a send completion for a socket with a send in flight");
        if res < 0 {
            self.bufs.give_back(f.bid);
            let conn = &mut self.conns[fd as usize];
            for (bid, _) in conn.queued.drain(..) {
                self.bufs.give_back(bid);
            }
            conn.closing = true;
            if conn.recv_armed {
                // Make the multishot recv finish (with 0) so that the fd can be closed.
                // SAFETY: shutdown takes no pointers; fd is an open socket of ours.
                unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            }
            return self.maybe_close(sq, fd);
        }
        f.off += res as u32;
        if f.off < f.len {
            // Short send: resume where the kernel stopped, still one send in flight.
            return self.start_send(sq, fd, f);
        }
        self.bufs.give_back(f.bid);
        if let Some((bid, len)) = self.conn(fd).queued.pop_front() {
            return self.start_send(sq, fd, InFlight { bid, off: 0, len });
        }
        self.maybe_close(sq, fd)
    }

    /// Closes a closing connection once nothing is in flight for it.
    fn maybe_close(&mut self, sq: &mut Sq<'_>, fd: i32) -> io::Result<()> {
        let conn = self.conn(fd);
        if !conn.closing || conn.recv_armed || conn.send.is_some() || !conn.open {
            return Ok(());
        }
        if let Some((bid, len)) = conn.queued.pop_front() {
            // Echo what the peer sent before it closed; close after that.
            return self.start_send(sq, fd, InFlight { bid, off: 0, len });
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

fn run(listener: &TcpListener, setup: &str) -> io::Result<()> {
    // Declared before the ring so that it is dropped after it: the kernel may use the
    // buffer ring's memory for as long as the ring exists.
    let mut server = Server {
        conns: Vec::new(),
        bufs: BufRing::new(BUF_COUNT, BUF_SIZE)?,
        starved: Vec::new(),
        listen_fd: listener.as_raw_fd(),
    };
    let mut builder = IoUring::builder();
    builder.setup_cqsize(CQ_ENTRIES);
    match setup {
        "defer" => builder.setup_single_issuer().setup_defer_taskrun(),
        "coop" => builder.setup_coop_taskrun().setup_taskrun_flag(),
        "plain" => &mut builder,
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unknown --setup {other:?} (defer, coop or plain)"),
            ))
        }
    };
    let mut ring: IoUring = builder
        .build(SQ_ENTRIES)
        .map_err(|e| io::Error::new(e.kind(), format!("io_uring setup: {e}")))?;
    // SAFETY: `server` owns the buffer ring and is dropped after `ring` (see above).
    unsafe { server.bufs.register(&ring.submitter(), BGID)? };
    event_loop(&mut ring, &mut server, listener)
}

fn event_loop(ring: &mut IoUring, server: &mut Server, listener: &TcpListener) -> io::Result<()> {
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
        cq.sync();
        for cqe in &mut cq {
            server.handle(&mut sq, &cqe)?;
        }
        server.rearm_starved(&mut sq)?;
    }
}

fn main() {
    let args = Args::parse();
    let listener = match TcpListener::bind(args.bind) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("echo-floor: bind {}: {e}", args.bind);
            std::process::exit(1);
        }
    };
    // Every accepted connection inherits it: no setsockopt per connection.
    set_nodelay(listener.as_raw_fd());
    if let Err(e) = run(&listener, &args.setup) {
        eprintln!("echo-floor: {e}");
        std::process::exit(1);
    }
}
