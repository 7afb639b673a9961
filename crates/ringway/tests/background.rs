//! Background sends (`send_all` and `flush`), on both backends: every byte arrives, in
//! order, whatever the sizes and however slow the reader; the driver drops each buffer
//! once the kernel is done with it; an error is kept and returned from then on; a
//! stream dropped with a send in flight still delivers it, then closes.
//!
//! On io_uring a send whose buffer wakes nobody when dropped goes out with a first try
//! that never waits, and the core's wait looks beyond its completion: one enter per
//! request at one connection, counted by the kernel; a buffer whose drop wakes a task
//! is still heard at once; a dropped socket's number is not reused while the rest of
//! its send still has to go out on it.
//!
//! These tests count the process's fds, so they run one at a time (`SERIAL`).

use std::cell::Cell;
use std::future::Future;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use ringway::buf::IoBuf;
use ringway::net::{TcpListener, TcpStream};
use ringway::runtime::{live_ops, pool_stats};
use ringway::time::sleep;
use ringway::{Backend, Runtime};

mod support;

static SERIAL: Mutex<()> = Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("read /proc/self/fd")
        .count()
}

fn run<F: std::future::Future<Output = ()>>(backend: Backend, body: impl FnOnce() -> F) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(backend)
        .build()
        .unwrap();
    assert_eq!(rt.backend().kind, backend);
    rt.block_on(async {
        let fds = open_fds();
        body().await;
        // Everything ends: no slot, no pool buffer, no fd left.
        for _ in 0..400 {
            if live_ops() == 0 && open_fds() == fds {
                break;
            }
            sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(live_ops(), 0, "operation slots left");
        assert_eq!(pool_stats().in_use, 0, "pool buffers left");
        assert_eq!(open_fds(), fds, "fds left open");
    });
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn uring() {
                super::run(ringway::Backend::Uring, super::$name)
            }
            #[test]
            fn epoll() {
                super::run(ringway::Backend::Epoll, super::$name)
            }
        }
    )*};
}

both!(
    many_sends_arrive_whole_and_in_order,
    a_slow_reader_gets_every_byte_of_a_large_send,
    an_error_is_kept_and_returned,
    a_dropped_stream_still_delivers_its_send_then_closes,
    a_send_dropped_before_it_started_sends_nothing,
    a_buffer_whose_drop_wakes_a_task_is_heard_at_once,
);

#[test]
fn one_enter_per_request_at_one_connection() {
    // A server that answers one request at a time: each answer's send completes inline
    // in the enter that submits it. Counted by the kernel on the core's thread: the
    // answer's own completion must not end the wait meant for the next request (it did:
    // two enters per request).
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Uring)
        .build()
        .unwrap();
    let counter = support::SyscallCounter::new("io_uring_enter").expect("kernel syscall counter");
    let requests = 400;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = ringway::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut rx = s.recv_multishot();
            while let Some(Ok(chunk)) = rx.next().await {
                // A fresh Vec per answer, as a server's response: its drop wakes nobody.
                let mut answer = b"re:".to_vec();
                answer.extend_from_slice(&chunk);
                drop(chunk);
                s.send_all(answer).await.unwrap();
            }
        });
        let client = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.set_nodelay(true).unwrap();
            let mut got = [0u8; 11];
            for i in 0..requests {
                let ask = format!("{i:08}");
                c.write_all(ask.as_bytes()).unwrap();
                c.read_exact(&mut got).unwrap();
                assert_eq!(&got[3..], ask.as_bytes());
                assert_eq!(&got[..3], b"re:");
            }
        });
        counter.start();
        joined_unit(client).await;
        let enters = counter.stop();
        server.await.unwrap();
        // The connection's setup, its end and the join's wake-up take a few.
        assert!(
            enters <= requests + 20,
            "{enters} io_uring_enter calls for {requests} requests at one connection: \
             more than one per request"
        );
        assert!(enters >= requests / 2, "{enters}: the counter counted");
    });
}

#[test]
fn a_dropped_socket_number_is_not_reused_before_its_send_ends() {
    run(Backend::Uring, || async {
        // The first try of an 8 MiB send to a slow reader queues only part of it; the
        // socket is dropped, and a new connection opened at once. Its fd must not be
        // the dropped one's while the rest still has to go out there.
        let (addr, peer) = reader(true);
        let rests = ringway::runtime::driver_stats().send_rests;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut data = vec![0u8; 8 << 20];
        StdRng::seed_from_u64(11).fill_bytes(&mut data);
        let expect = data.clone();
        stream.send_all(data).await.unwrap();
        drop(stream);
        let (addr2, peer2) = reader(false);
        let mut second = TcpStream::connect(addr2).await.unwrap();
        second.send_all(b"second".to_vec()).await.unwrap();
        second.flush().await.unwrap();
        drop(second);
        assert_eq!(joined(peer2).await, b"second");
        let got = joined(peer).await;
        assert_eq!(got.len(), expect.len());
        assert!(got == expect, "the first connection's bytes changed");
        assert!(
            ringway::runtime::driver_stats().send_rests > rests,
            "the first try took all 8 MiB: this test did not test a rest"
        );
    });
}

/// A buffer that counts its drops (the driver must drop it once the kernel is done).
/// `quiet`: it says its drop wakes nobody, so that on io_uring its send starts with a
/// first try that never waits; true only while nothing waits on `done`.
struct Counted {
    bytes: Vec<u8>,
    drops: Rc<Cell<usize>>,
    quiet: bool,
    /// Sent when dropped: a task may wait on it, as ringway-compat's writer waits on
    /// its buffer's drop.
    done: Option<ringway::sync::oneshot::Sender<()>>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
    }
}

// SAFETY: the bytes live in the Vec's heap allocation, which does not move with `self`.
unsafe impl IoBuf for Counted {
    fn stable_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.bytes.len()
    }
    fn bytes_total(&self) -> usize {
        self.bytes.capacity()
    }
    fn drop_wakes_nobody(&self) -> bool {
        self.quiet
    }
}

/// A listener and a std reader thread that collects everything until end of stream.
fn reader(slow: bool) -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut all = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return all,
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(e) => panic!("reader: {e}"),
            }
            if slow {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    (addr, t)
}

/// Joins a client thread without blocking the loop.
async fn joined_unit(t: std::thread::JoinHandle<()>) {
    ringway::spawn_blocking(move || t.join().expect("client thread"))
        .await
        .expect("blocking pool")
}

/// Joins the reader without blocking the loop (the loop must go on for the sends, and
/// the close, to progress).
async fn joined(peer: std::thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    ringway::spawn_blocking(move || peer.join().expect("reader thread"))
        .await
        .expect("blocking pool")
}

async fn many_sends_arrive_whole_and_in_order() {
    let (addr, peer) = reader(false);
    let mut rng = StdRng::seed_from_u64(7);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let drops = Rc::new(Cell::new(0));
    let mut expect = Vec::new();
    let sends = 300;
    for _ in 0..sends {
        let mut bytes = vec![0u8; rng.random_range(1..70_000)];
        rng.fill_bytes(&mut bytes);
        expect.extend_from_slice(&bytes);
        // Both kinds of send on one socket: a first try and its rest (io_uring) must
        // keep their place among whole sends.
        let buf = Counted {
            bytes,
            drops: drops.clone(),
            quiet: rng.random_bool(0.5),
            done: None,
        };
        stream.send_all(buf).await.expect("send_all");
    }
    stream.flush().await.expect("flush");
    assert_eq!(
        drops.get(),
        sends,
        "the driver dropped every buffer once done"
    );
    drop(stream);
    let got = joined(peer).await;
    assert_eq!(got.len(), expect.len());
    assert!(got == expect, "bytes out of order or changed");
}

async fn a_slow_reader_gets_every_byte_of_a_large_send() {
    // 8 MiB against a reader that pauses: the socket fills again and again, so one
    // SendAll completes only after many partial transfers (epoll tracks its progress;
    // io_uring's MSG_WAITALL retries in the kernel).
    let (addr, peer) = reader(true);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut big = vec![0u8; 8 << 20];
    StdRng::seed_from_u64(8).fill_bytes(&mut big);
    let expect = big.clone();
    stream.send_all(big).await.unwrap();
    stream.send_all(b"tail".to_vec()).await.unwrap();
    stream.flush().await.unwrap();
    drop(stream);
    let got = joined(peer).await;
    assert_eq!(got.len(), expect.len() + 4);
    assert!(got[..expect.len()] == expect[..] && &got[expect.len()..] == b"tail");
}

async fn an_error_is_kept_and_returned() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let peer = std::net::TcpStream::connect(addr).unwrap();
    let (mut stream, _) = l.accept().await.unwrap();
    // A reset: close with unread data and SO_LINGER 0.
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a live linger struct with its size.
    let r = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&peer),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
    drop(peer);
    sleep(Duration::from_millis(20)).await;
    let mut failed = None;
    for _ in 0..100 {
        if let Err(e) = stream.send_all(vec![1u8; 4096]).await {
            failed = Some(e);
            break;
        }
        if let Err(e) = stream.flush().await {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("sends to a reset peer must fail");
    assert!(
        matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        "{e:?}"
    );
    // Kept: the stream is broken from now on.
    assert_eq!(stream.flush().await.unwrap_err().kind(), e.kind());
    assert_eq!(
        stream.send_all(vec![2u8; 8]).await.unwrap_err().kind(),
        e.kind()
    );
}

async fn a_dropped_stream_still_delivers_its_send_then_closes() {
    let (addr, peer) = reader(true);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut data = vec![0u8; 4 << 20];
    StdRng::seed_from_u64(9).fill_bytes(&mut data);
    let expect = data.clone();
    stream.send_all(data).await.unwrap();
    // Dropped at once, the send still in flight: it must finish, then the socket closes
    // (the reader sees end of stream after the last byte).
    drop(stream);
    let got = joined(peer).await;
    assert_eq!(got.len(), expect.len());
    assert!(got == expect);
}

async fn a_send_dropped_before_it_started_sends_nothing() {
    let (addr, peer) = reader(true);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let first = vec![b'a'; 4 << 20];
    stream.send_all(first).await.unwrap();
    // The second waits for the first (in flight to a slow reader): drop it while it
    // waits. Its bytes must never be sent; the stream stays usable.
    let drops = Rc::new(Cell::new(0));
    {
        let second = stream.send_all(Counted {
            bytes: vec![b'X'; 1000],
            drops: drops.clone(),
            quiet: false,
            done: None,
        });
        let mut second = std::pin::pin!(second);
        let polled =
            std::future::poll_fn(|cx| std::task::Poll::Ready(second.as_mut().poll(cx).is_ready()))
                .await;
        assert!(!polled, "the second send waited for the first");
    }
    assert_eq!(
        drops.get(),
        1,
        "the waiting buffer was dropped with its future"
    );
    stream.send_all(b"end".to_vec()).await.unwrap();
    stream.flush().await.unwrap();
    drop(stream);
    let got = joined(peer).await;
    assert_eq!(got.len(), (4 << 20) + 3);
    assert!(got[..4 << 20].iter().all(|&b| b == b'a'));
    assert_eq!(&got[4 << 20..], b"end");
}

async fn a_buffer_whose_drop_wakes_a_task_is_heard_at_once() {
    // Nothing else happens on the core: no reply, no timer but a far one. If the
    // core's wait looked beyond this send's completion, the task would sleep until that
    // timer (the hang ringway-compat's writer would see). A spawned task, not the main
    // future: waking the main future also writes the core's eventfd, whose completion
    // would end the wait anyway.
    let (addr, peer) = reader(false);
    let far = ringway::spawn(sleep(Duration::from_secs(30)));
    ringway::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        for round in 0..20u8 {
            let (tx, rx) = ringway::sync::oneshot::channel();
            let started = Instant::now();
            stream
                .send_all(Counted {
                    bytes: vec![round; 100],
                    drops: Rc::default(),
                    // Its drop wakes the task below: it must not say otherwise.
                    quiet: false,
                    done: Some(tx),
                })
                .await
                .unwrap();
            rx.await.expect("the buffer was dropped");
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "round {round}: the buffer's drop was heard only when a timer fired"
            );
        }
    })
    .await
    .unwrap();
    drop(far);
    let got = joined(peer).await;
    assert_eq!(got.len(), 2000);
}
