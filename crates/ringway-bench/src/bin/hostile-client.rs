//! The hostile side of the hostile-mix scenario (S13): while the load client runs its
//! valid requests, this one sends malformed requests on fresh connections and keeps
//! slow clients trickling a header, and counts what the server did with each.
//!
//! A malformed request is *rejected* when a 4xx arrives (a production server answers
//! and closes), *accepted* when a 2xx arrives (a server that does not parse HTTP, like
//! the floor), *dropped* when the connection closes without an answer, *unanswered*
//! when nothing happens within a second. A slow client is *cut* when the server closes
//! it (or answers 408) before the run ends. With `--upload-mb`, one more connection
//! uploads a body that large (`POST /upload-slow`, `Content-Length`) as fast as the
//! server takes it, until the body is sent or the run ends; its bytes sent are counted.
//! Prints one JSON object.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use clap::Parser;

/// Malformed requests and slow clients against an HTTP server.
#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long)]
    addr: SocketAddr,
    /// Seconds to run.
    #[arg(long, default_value_t = 2.0)]
    duration: f64,
    /// Malformed requests per second at most.
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Slow clients held during the run.
    #[arg(long, default_value_t = 20)]
    slow: usize,
    /// MB of request body one more connection uploads to `/upload-slow` (0: none).
    #[arg(long, default_value_t = 0)]
    upload_mb: u64,
}

/// What the uploader did: body bytes the server took, whether the whole body went,
/// and whether an answer came (within the run).
#[derive(Default)]
struct Upload {
    sent: u64,
    complete: bool,
    answered: bool,
}

/// Uploads `mb` MB to `/upload-slow` until it is sent or `end`; then reads the answer
/// if there is time.
fn upload(addr: SocketAddr, mb: u64, end: Instant) -> Upload {
    let mut u = Upload::default();
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return u;
    };
    // Short writes: the loop sees the run's end even while the server takes nothing.
    let _ = s.set_write_timeout(Some(Duration::from_millis(50)));
    let total = mb << 20;
    let head = format!("POST /upload-slow HTTP/1.1\r\nHost: x\r\nContent-Length: {total}\r\n\r\n");
    if s.write_all(head.as_bytes()).is_err() {
        return u;
    }
    let chunk = vec![b'u'; 64 * 1024];
    while u.sent < total && Instant::now() < end {
        let n = chunk.len().min((total - u.sent) as usize);
        match s.write(&chunk[..n]) {
            Ok(0) => return u,
            Ok(k) => u.sent += k as u64,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return u,
        }
    }
    u.complete = u.sent == total;
    let left = end.saturating_duration_since(Instant::now());
    if u.complete && !left.is_zero() {
        let _ = s.set_read_timeout(Some(left));
        let mut buf = [0u8; 64];
        u.answered = matches!(s.read(&mut buf), Ok(n) if n > 0);
    }
    u
}

/// What the server is sent, one per connection, in turn.
const MALFORMED: &[&[u8]] = &[
    b"GET /plaintext HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
    b"GET /plaintext HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET /plain text HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /plaintext HTTP/1.1\r\nHo st: x\r\n\r\n",
    b"GET /plaintext HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n",
    b"GET /plaintext HTTP/9.9\r\nHost: x\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
    b"GET /plaintext HTTP/1.1\r\nHost: x\r\n Folded: continuation\r\n\r\n",
];

#[derive(Default)]
struct Counts {
    sent: u64,
    rejected: u64,
    accepted: u64,
    dropped: u64,
    unanswered: u64,
    connect_failed: u64,
}

fn one(addr: SocketAddr, req: &[u8], c: &mut Counts) {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        c.connect_failed += 1;
        return;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    c.sent += 1;
    if s.write_all(req).is_err() {
        c.dropped += 1;
        return;
    }
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => c.dropped += 1,
        Ok(n) => {
            let head = &buf[..n];
            if head.starts_with(b"HTTP/1.1 4") || head.starts_with(b"HTTP/1.0 4") {
                c.rejected += 1;
            } else if head.starts_with(b"HTTP/1.1 2") || head.starts_with(b"HTTP/1.0 2") {
                c.accepted += 1;
            } else {
                c.dropped += 1;
            }
        }
        Err(_) => c.unanswered += 1,
    }
}

fn main() {
    let args = Args::parse();
    let end = Instant::now() + Duration::from_secs_f64(args.duration);
    let uploader = (args.upload_mb > 0).then(|| {
        let (addr, mb) = (args.addr, args.upload_mb);
        std::thread::spawn(move || upload(addr, mb, end))
    });
    // Slow clients: a request head one byte every 100 ms, never finished in the run.
    let mut slow: Vec<TcpStream> = (0..args.slow)
        .filter_map(|_| TcpStream::connect(args.addr).ok())
        .collect();
    for s in &slow {
        let _ = s.set_nonblocking(true);
    }
    let trickle = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut cut = vec![false; slow.len()];
    let mut pos = 0usize;
    let mut next_trickle = Instant::now();
    let mut counts = Counts::default();
    let gap = Duration::from_secs_f64(1.0 / args.rate.max(1.0));
    let mut next = Instant::now();
    let mut i = 0;
    while Instant::now() < end {
        if Instant::now() >= next {
            one(args.addr, MALFORMED[i % MALFORMED.len()], &mut counts);
            i += 1;
            next += gap;
        }
        if Instant::now() >= next_trickle {
            let byte = &trickle[pos % trickle.len()..pos % trickle.len() + 1];
            for (k, s) in slow.iter_mut().enumerate() {
                if cut[k] {
                    continue;
                }
                let mut probe = [0u8; 64];
                match s.read(&mut probe) {
                    Ok(_) => cut[k] = true,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => cut[k] = true,
                }
                if !cut[k] && s.write_all(byte).is_err() {
                    cut[k] = true;
                }
            }
            pos += 1;
            next_trickle += Duration::from_millis(100);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let upload = match uploader {
        Some(t) => {
            let u = t.join().unwrap_or_default();
            format!(
                ",\"upload_mb_sent\":{:.3},\"upload_complete\":{},\"upload_answered\":{}",
                u.sent as f64 / (1 << 20) as f64,
                u.complete as u8,
                u.answered as u8
            )
        }
        None => String::new(),
    };
    println!(
        "{{\"malformed_sent\":{},\"rejected_4xx\":{},\"accepted_2xx\":{},\"dropped\":{},\"unanswered\":{},\"connect_failed\":{},\"slow_clients\":{},\"slow_cut\":{}{upload}}}",
        counts.sent,
        counts.rejected,
        counts.accepted,
        counts.dropped,
        counts.unanswered,
        counts.connect_failed,
        slow.len(),
        cut.iter().filter(|c| **c).count()
    );
}
