//! `ringway-load-testserver`: the small servers the load generator's tests run against,
//! as a process of its own (so tests stop it by its pid) that counts exactly what it
//! received and sent.
//!
//! One thread (one ringway core, or one std thread per TLS connection), bound to
//! 127.0.0.1 on a free port. It prints `listening on ADDR`, serves, and when its stdin
//! closes prints `requests=R responses=S connections=C` and exits.
//!
//! Modes: `cl` (Content-Length), `chunked` (chunk extensions and a trailer, each write
//! split in two), `close` (close-delimited: no length, then close), `echo` (raw echo).
//! `--stall-ms A --every-ms B` freezes the whole server for A ms every B ms;
//! `--work-us N` burns N µs of CPU per request (a server that is the bottleneck);
//! `--poll-loop` serves from a plain poll(2) loop that answers each request at once.
//! `--hold N` holds every response until N requests are held at once (then answers
//! them all), or for 2 s at most (counted): a client that says it sends N requests
//! concurrently is checked to do so (`held_max`, `hold_timeouts` in the report).
//! A request for `/status/NNN` is answered with that status.

mod counters;
mod hold;
mod http;
mod poll_loop;
mod tls;

use std::io::{Read as _, Write as _};
use std::time::Duration;

use ringway::net::{TcpListener, TcpStream};

use counters::{CONNECTIONS, REQUESTS, RESPONSES};
use http::{Mode, Parsed};

struct Opts {
    mode: Mode,
    stall: Option<(Duration, Duration)>,
    work: Duration,
    tls: Option<(String, String)>,
    poll_loop: bool,
    hold: usize,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        mode: Mode::ContentLength,
        stall: None,
        work: Duration::ZERO,
        tls: None,
        poll_loop: false,
        hold: 0,
    };
    let mut stall_ms = None;
    let mut every_ms = 1000u64;
    let (mut cert, mut key) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--mode" => {
                o.mode = match val()?.as_str() {
                    "cl" => Mode::ContentLength,
                    "chunked" => Mode::Chunked,
                    "close" => Mode::Close,
                    "echo" => Mode::Echo,
                    m => return Err(format!("unknown mode {m}")),
                }
            }
            "--stall-ms" => stall_ms = Some(val()?.parse::<u64>().map_err(|e| e.to_string())?),
            "--every-ms" => {
                every_ms = val()?
                    .parse()
                    .map_err(|e: std::num::ParseIntError| e.to_string())?
            }
            "--work-us" => {
                o.work = Duration::from_micros(
                    val()?
                        .parse()
                        .map_err(|e: std::num::ParseIntError| e.to_string())?,
                )
            }
            "--poll-loop" => o.poll_loop = true,
            "--hold" => {
                o.hold = val()?
                    .parse()
                    .map_err(|e: std::num::ParseIntError| e.to_string())?
            }
            "--cert" => cert = Some(val()?),
            "--key" => key = Some(val()?),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    o.stall = stall_ms.map(|s| (Duration::from_millis(s), Duration::from_millis(every_ms)));
    if let (Some(c), Some(k)) = (cert, key) {
        o.tls = Some((c, k));
    }
    Ok(o)
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ringway-load-testserver: {e}");
            std::process::exit(2);
        }
    };
    // Stdin closing is the signal to report and stop.
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        counters::report_and_exit();
    });
    if opts.poll_loop {
        poll_loop::serve(opts.mode, opts.work);
        return;
    }
    if let Some((cert, key)) = &opts.tls {
        tls::serve(cert, key, opts.mode, opts.work);
        return;
    }
    let rt = ringway::Runtime::builder()
        .worker_threads(1)
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        println!("listening on {}", listener.local_addr().expect("addr"));
        std::io::stdout().flush().expect("stdout");
        if let Some((stall, every)) = opts.stall {
            ringway::spawn(async move {
                let mut tick = ringway::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    // Freeze the only thread: nothing is accepted, read or written.
                    std::thread::sleep(stall);
                }
            })
            .detach();
        }
        let mut incoming = listener.incoming();
        while let Some(conn) = incoming.next().await {
            if let Ok(stream) = conn {
                CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                ringway::spawn(serve_conn(stream, opts.mode, opts.work, opts.hold)).detach();
            }
        }
    });
}

async fn serve_conn(mut stream: TcpStream, mode: Mode, work: Duration, hold: usize) {
    let _ = stream.set_nodelay(true);
    let mut rx = stream.recv_multishot();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(Ok(chunk)) = rx.next().await {
        if mode == Mode::Echo {
            if stream.write_all(chunk).await.0.is_err() {
                return;
            }
            continue;
        }
        buf.extend_from_slice(&chunk);
        drop(chunk);
        let mut out = Vec::new();
        let mut answered = 0;
        let mut close = false;
        loop {
            match http::parse_request(&buf) {
                Parsed::Partial => break,
                Parsed::Bad => {
                    close = true;
                    break;
                }
                Parsed::Request { len, status } => {
                    REQUESTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    buf.drain(..len);
                    if hold > 0 {
                        hold::barrier(hold).await;
                    }
                    http::burn(work);
                    http::respond(mode, status, &mut out);
                    answered += 1;
                    if mode == Mode::Close {
                        close = true;
                        break;
                    }
                }
            }
        }
        if !out.is_empty() {
            // Chunked responses go out in two writes, so the client sees them split.
            let parts = if mode == Mode::Chunked {
                let second = out.split_off(out.len() / 2);
                vec![out, second]
            } else {
                vec![out]
            };
            for p in parts {
                if stream.write_all(p).await.0.is_err() {
                    return;
                }
            }
            RESPONSES.fetch_add(answered, std::sync::atomic::Ordering::SeqCst);
        }
        if close {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}
