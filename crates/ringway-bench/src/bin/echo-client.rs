//! A cheap, native echo load client: one thread, epoll, ping-pong per connection.
//!
//! The harness needs a client whose own cost is small and known, so that the server is
//! what gets measured: this one is written straight on epoll (edge-triggered, each socket
//! registered once) with no runtime in between. Each connection writes SIZE bytes, waits
//! until SIZE bytes have come back, checks them against what it sent, and repeats.
//! Every connection sends a pattern of its own, shifted by one byte from one message to
//! the next, so that a byte echoed to the wrong socket or echoed twice is caught.
//!
//! After `--warmup` seconds the client prints a line `measuring` (flushed) so that a
//! harness can sample the server's CPU time, then counts round trips for `--duration`
//! seconds and prints its result, including its own CPU time over the measured window.
//! It exits with status 1 on any verification failure or lost connection, and 2 if a
//! connection cannot be made.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

/// Echo load client (epoll, one thread).
#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long)]
    addr: SocketAddr,
    /// Number of connections.
    #[arg(long, default_value_t = 50)]
    conns: usize,
    /// Message size in bytes.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Seconds of load before measuring starts.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Distinct message offsets into the pattern before it repeats.
const SHIFTS: usize = 251;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `n` bytes of the current message written so far.
    Writing(usize),
    /// `n` bytes of the echo received so far.
    Reading(usize),
}

struct Conn {
    fd: Option<OwnedFd>,
    /// Pattern of SIZE + SHIFTS bytes; message k is `pattern[k % SHIFTS..][..SIZE]`.
    pattern: Vec<u8>,
    received: Vec<u8>,
    phase: Phase,
    sent_messages: u64,
    /// An EPOLLIN edge arrived while we were still writing.
    readable: bool,
}

impl Conn {
    fn message(&self, size: usize) -> &[u8] {
        let shift = (self.sent_messages % SHIFTS as u64) as usize;
        &self.pattern[shift..shift + size]
    }
}

fn pattern(conn: usize, len: usize) -> Vec<u8> {
    // Consecutive bytes differ by 7 (mod 256), so every shift gives a different message.
    (0..len)
        .map(|j| (j.wrapping_mul(7).wrapping_add(conn.wrapping_mul(13)) % 256) as u8)
        .collect()
}

fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage for the duration of the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

enum Progress {
    /// Completed round trips during this call.
    Ok(u64),
    /// The connection failed; the message says how.
    Failed(String),
}

/// Advances one connection as far as it goes without blocking.
fn drive(c: &mut Conn, size: usize) -> Progress {
    let fd =
        c.fd.as_ref()
            .expect("driven connections are open")
            .as_raw_fd();
    let mut done = 0;
    loop {
        match c.phase {
            Phase::Writing(n) => {
                let msg = &c.message(size)[n..];
                // SAFETY: msg is a live slice; send reads at most msg.len() bytes from it.
                let r =
                    unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL) };
                if r < 0 {
                    let e = io::Error::last_os_error();
                    return match e.kind() {
                        io::ErrorKind::WouldBlock => Progress::Ok(done),
                        io::ErrorKind::Interrupted => continue,
                        _ => Progress::Failed(format!("send: {e}")),
                    };
                }
                let n = n + r as usize;
                if n < size {
                    c.phase = Phase::Writing(n);
                    continue;
                }
                c.phase = Phase::Reading(0);
                // With edge-triggered epoll a new EPOLLIN edge follows the echo of this
                // message, unless part of it already arrived during a partial write.
                if !std::mem::take(&mut c.readable) {
                    return Progress::Ok(done);
                }
            }
            Phase::Reading(n) => {
                let buf = &mut c.received[n..size];
                // SAFETY: buf is a live, writable slice; recv writes at most buf.len() bytes.
                let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
                if r < 0 {
                    let e = io::Error::last_os_error();
                    return match e.kind() {
                        io::ErrorKind::WouldBlock => Progress::Ok(done),
                        io::ErrorKind::Interrupted => continue,
                        _ => Progress::Failed(format!("recv: {e}")),
                    };
                }
                if r == 0 {
                    return Progress::Failed(format!(
                        "server closed the connection after {n} of {size} echoed bytes"
                    ));
                }
                let n = n + r as usize;
                if n < size {
                    c.phase = Phase::Reading(n);
                    continue;
                }
                if c.received[..size] != *c.message(size) {
                    let expected = c.message(size);
                    let at = (0..size)
                        .find(|&i| c.received[i] != expected[i])
                        .unwrap_or(0);
                    return Progress::Failed(format!(
                        "echo mismatch in message {} at byte {at}: got {:#04x}, expected {:#04x}",
                        c.sent_messages, c.received[at], expected[at]
                    ));
                }
                c.sent_messages += 1;
                done += 1;
                c.phase = Phase::Writing(0);
            }
        }
    }
}

fn epoll_add(epfd: i32, fd: i32, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
        u64: token,
    };
    // SAFETY: ev is a valid epoll_event that lives for the duration of the call.
    if unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

struct Outcome {
    messages: u64,
    duration_s: f64,
    errors: u64,
    client_cpu_s: f64,
}

fn run(args: &Args, epfd: &OwnedFd) -> io::Result<Outcome> {
    let size = args.size;
    let mut conns = Vec::with_capacity(args.conns);
    for i in 0..args.conns {
        let stream = TcpStream::connect(args.addr)
            .map_err(|e| io::Error::new(e.kind(), format!("connect to {}: {e}", args.addr)))?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        // SAFETY: into_raw_fd hands over sole ownership of a valid open fd.
        let fd = unsafe { OwnedFd::from_raw_fd(stream.into_raw_fd()) };
        epoll_add(epfd.as_raw_fd(), fd.as_raw_fd(), i as u64)?;
        conns.push(Conn {
            fd: Some(fd),
            pattern: pattern(i, size + SHIFTS),
            received: vec![0; size],
            phase: Phase::Writing(0),
            sent_messages: 0,
            readable: false,
        });
    }

    let mut messages = 0u64;
    let mut errors = 0u64;
    let mut live = conns.len();
    let fail =
        |conns: &mut Vec<Conn>, i: usize, why: String, errors: &mut u64, live: &mut usize| {
            if *errors < 10 {
                eprintln!("echo-client: connection {i}: {why}");
            }
            *errors += 1;
            *live -= 1;
            conns[i].fd = None; // closing the fd also removes it from the epoll set
        };
    // Start every connection's first message.
    for i in 0..conns.len() {
        match drive(&mut conns[i], size) {
            Progress::Ok(n) => messages += n,
            Progress::Failed(why) => fail(&mut conns, i, why, &mut errors, &mut live),
        }
    }

    let start = Instant::now();
    let warmup_end = start + Duration::from_secs_f64(args.warmup.max(0.0));
    let mut measure: Option<(Instant, u64, f64)> = None;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut out = io::stdout();
    loop {
        let now = Instant::now();
        if measure.is_none() && now >= warmup_end {
            writeln!(out, "measuring")?;
            out.flush()?;
            measure = Some((now, messages, cpu_seconds()));
        }
        let deadline = match measure {
            None => warmup_end,
            Some((t0, _, _)) => t0 + Duration::from_secs_f64(args.duration.max(0.0)),
        };
        if measure.is_some() && now >= deadline || live == 0 {
            break;
        }
        let wait = deadline.saturating_duration_since(now);
        let timeout_ms = wait.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: events is a live buffer of events.len() epoll_event structs.
        let n = unsafe {
            libc::epoll_wait(
                epfd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in &events[..n as usize] {
            let i = ev.u64 as usize;
            let flags = ev.events as i32;
            let c = &mut conns[i];
            if c.fd.is_none() {
                continue;
            }
            if flags & libc::EPOLLERR != 0 {
                let why = "socket error (EPOLLERR)".to_string();
                fail(&mut conns, i, why, &mut errors, &mut live);
                continue;
            }
            if flags & libc::EPOLLIN != 0 {
                c.readable = true;
            }
            let wants = match c.phase {
                Phase::Writing(_) => flags & libc::EPOLLOUT != 0,
                Phase::Reading(_) => {
                    flags & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP) != 0
                }
            };
            if !wants {
                continue;
            }
            if matches!(c.phase, Phase::Reading(_)) {
                c.readable = false;
            }
            match drive(c, size) {
                Progress::Ok(k) => messages += k,
                Progress::Failed(why) => fail(&mut conns, i, why, &mut errors, &mut live),
            }
        }
    }
    let end = Instant::now();
    let (t0, m0, cpu0) = measure.unwrap_or((end, messages, cpu_seconds()));
    Ok(Outcome {
        messages: messages - m0,
        duration_s: end.duration_since(t0).as_secs_f64(),
        errors,
        client_cpu_s: cpu_seconds() - cpu0,
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.size == 0 || args.conns == 0 {
        eprintln!("echo-client: --size and --conns must be positive");
        return ExitCode::from(2);
    }
    // SAFETY: epoll_create1 takes no pointers; the result is checked before use.
    let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if epfd < 0 {
        eprintln!("echo-client: epoll_create1: {}", io::Error::last_os_error());
        return ExitCode::from(2);
    }
    // SAFETY: epfd is a fresh fd that nothing else owns.
    let epfd = unsafe { OwnedFd::from_raw_fd(epfd) };
    let o = match run(&args, &epfd) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("echo-client: {e}");
            return ExitCode::from(2);
        }
    };
    let rate = if o.duration_s > 0.0 {
        o.messages as f64 / o.duration_s
    } else {
        0.0
    };
    if args.json {
        let v = serde_json::json!({
            "messages": o.messages,
            "duration_s": o.duration_s,
            "msgs_per_s": rate,
            "errors": o.errors,
            "client_cpu_s": o.client_cpu_s,
            "conns": args.conns,
            "size": args.size,
        });
        println!("{v}");
    } else {
        println!(
            "messages={} duration_s={:.3} msgs_per_s={:.0} errors={} client_cpu_s={:.3}",
            o.messages, o.duration_s, rate, o.errors, o.client_cpu_s
        );
    }
    if o.errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
