//! The bottleneck server (`--poll-loop`): one thread, poll(2) over every connection,
//! each request answered the moment it is handled (its own write), and connections
//! served in fair rounds. With `--work-us` it is the bottleneck whatever the clients'
//! speeds, and clients running side by side get equal shares: the shape the
//! wrk-agreement test needs. (The ringway server batches a loop turn's writes into the
//! next submission, which lets a slow client's turnaround shape the server's batches.)

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::counters::{CONNECTIONS, REQUESTS, RESPONSES};
use crate::http::{self, Mode, Parsed};

struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// How long a round waits for connections that have not sent their next request.
const ROUND_WAIT: Duration = Duration::from_millis(20);

/// Serves forever (until stdin closes), in rounds: a round waits until every
/// connection has something to read (or `ROUND_WAIT` passed), then answers each ready
/// connection once, starting from a different one each round. Every responsive
/// connection is thus served exactly once per round: two clients with the same number
/// of connections get the same share, however their own speeds differ.
pub(crate) fn serve(mode: Mode, work: Duration) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    println!("listening on {}", listener.local_addr().expect("addr"));
    std::io::stdout().flush().expect("stdout");
    let mut clients: Vec<Client> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut round = 0usize;
    loop {
        let ready = gather(&listener, &mut clients);
        let n = clients.len();
        let mut dead = Vec::new();
        for k in 0..n {
            let i = (round + k) % n;
            if ready[i] && !serve_client(&mut clients[i], &mut chunk, mode, work) {
                dead.push(i);
            }
        }
        dead.sort_unstable();
        for i in dead.into_iter().rev() {
            clients.swap_remove(i);
        }
        round = round.wrapping_add(1);
    }
}

/// Waits for the next round: returns which connections have input. Accepts new
/// connections meanwhile.
fn gather(listener: &TcpListener, clients: &mut Vec<Client>) -> Vec<bool> {
    let mut ready = vec![false; clients.len()];
    let mut started: Option<Instant> = None;
    loop {
        let waiting: Vec<usize> = (0..clients.len()).filter(|&i| !ready[i]).collect();
        let any_ready = ready.iter().any(|&r| r);
        if any_ready && waiting.is_empty() {
            return ready;
        }
        let timeout_ms = match started {
            Some(t) => {
                let left = ROUND_WAIT.saturating_sub(t.elapsed());
                if left.is_zero() && any_ready {
                    return ready;
                }
                left.as_millis().max(1) as i32
            }
            None => -1,
        };
        let mut fds: Vec<libc::pollfd> = std::iter::once(listener.as_raw_fd())
            .chain(waiting.iter().map(|&i| clients[i].stream.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n <= 0 {
            continue;
        }
        for (k, fd) in fds.iter().enumerate().skip(1) {
            if fd.revents != 0 {
                ready[waiting[k - 1]] = true;
                started.get_or_insert_with(Instant::now);
            }
        }
        if fds[0].revents != 0 {
            while let Ok((stream, _)) = listener.accept() {
                let _ = stream.set_nodelay(true);
                let _ = stream.set_nonblocking(true);
                CONNECTIONS.fetch_add(1, Ordering::SeqCst);
                clients.push(Client {
                    stream,
                    buf: Vec::new(),
                });
                ready.push(false);
            }
        }
    }
}

/// Reads what is there and answers every whole request; false when the client is gone.
fn serve_client(c: &mut Client, chunk: &mut [u8], mode: Mode, work: Duration) -> bool {
    loop {
        match c.stream.read(chunk) {
            Ok(0) => return false,
            Ok(n) => c.buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    loop {
        match http::parse_request(&c.buf) {
            Parsed::Partial => return true,
            Parsed::Bad => return false,
            Parsed::Request { len, status } => {
                REQUESTS.fetch_add(1, Ordering::SeqCst);
                c.buf.drain(..len);
                http::burn(work);
                let mut out = Vec::new();
                http::respond(mode, status, &mut out);
                if !write_all(&mut c.stream, &out) {
                    return false;
                }
                RESPONSES.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

fn write_all(s: &mut TcpStream, mut data: &[u8]) -> bool {
    while !data.is_empty() {
        match s.write(data) {
            Ok(0) => return false,
            Ok(n) => data = &data[n..],
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                std::thread::yield_now()
            }
            Err(_) => return false,
        }
    }
    true
}
