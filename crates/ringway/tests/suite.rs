//! The integration suite, run once per backend: every test here is generated twice by
//! `#[ringway::test(both)]` (`name::uring` and `name::epoll`), or loops over both
//! backends itself where it needs a runtime with more than one core.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rand::{Rng, RngCore, SeedableRng};
use ringway::net::{TcpListener, TcpStream, UdpSocket, UnixListener, UnixStream};
use ringway::time::{sleep, timeout};
use ringway::{Backend, Runtime};

mod support;

/// Echo server on a free port: every connection echoes with a multishot receive.
fn start_echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    ringway::spawn(async move {
        let mut incoming = listener.incoming();
        while let Some(conn) = incoming.next().await {
            let mut s = conn.unwrap();
            ringway::spawn(async move {
                let mut rx = s.recv_multishot();
                while let Some(Ok(chunk)) = rx.next().await {
                    if s.write_all(chunk).await.0.is_err() {
                        break;
                    }
                }
            })
            .detach();
        }
    })
    .detach();
    addr
}

/// Sends `data` in pieces and reads the echo back concurrently; returns what came back.
async fn echo_round_trip(addr: SocketAddr, data: Vec<u8>, seed: u64) -> Vec<u8> {
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    // One task writes while this one reads: a large echo would deadlock otherwise.
    let total = data.len();
    let (mut reader, mut writer) = stream.into_split();
    let w = ringway::spawn(async move {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut off = 0;
        while off < data.len() {
            let n = rng.random_range(1..=data.len() - off).min(256 * 1024);
            let (r, _) = writer.write_all(data[off..off + n].to_vec()).await;
            r.unwrap();
            off += n;
        }
    });
    let mut got = Vec::with_capacity(total);
    while got.len() < total {
        let (r, buf) = reader.read(Vec::with_capacity(64 * 1024)).await;
        let n = r.unwrap();
        assert!(
            n > 0,
            "echo closed early after {} of {total} bytes",
            got.len()
        );
        got.extend_from_slice(&buf[..n]);
    }
    w.await.unwrap();
    got
}

#[ringway::test(both)]
async fn echo_sizes_over_100_connections() {
    let addr = start_echo();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut sizes = vec![1usize, 64, 1 << 20];
    while sizes.len() < 100 {
        sizes.push(rng.random_range(1..200_000));
    }
    let handles: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let mut data = vec![0u8; size];
            rand::rngs::StdRng::seed_from_u64(i as u64).fill_bytes(&mut data);
            ringway::spawn(async move {
                let got = echo_round_trip(addr, data.clone(), i as u64).await;
                assert!(
                    got == data,
                    "connection {i}: {size} bytes came back altered"
                );
                size
            })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h.await.unwrap();
    }
    assert_eq!(total, sizes.iter().sum::<usize>());
    assert_eq!(ringway::runtime::pool_stats().in_use, 0);
}

#[ringway::test(both)]
async fn read_write_and_end_of_stream() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = ringway::spawn(async move {
        let (mut s, peer) = listener.accept().await.unwrap();
        assert!(peer.ip().is_loopback());
        let (r, buf) = s.read(Vec::with_capacity(16)).await;
        assert_eq!(r.unwrap(), 5);
        assert_eq!(&buf, b"hello");
        let (r, _) = s.write_all(b"world".as_slice()).await;
        r.unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let (r, _) = s.read(Vec::with_capacity(16)).await;
        assert_eq!(r.unwrap(), 0, "client closed: end of stream");
    });
    let mut c = TcpStream::connect(addr).await.unwrap();
    assert_eq!(c.peer_addr().unwrap(), addr);
    c.set_nodelay(true).unwrap();
    assert!(c.nodelay().unwrap());
    let (r, _) = c.write(b"hello".as_slice()).await;
    assert_eq!(r.unwrap(), 5);
    let mut got = Vec::new();
    loop {
        let (r, buf) = c.read(Vec::with_capacity(3)).await;
        match r.unwrap() {
            0 => break,
            n => got.extend_from_slice(&buf[..n]),
        }
    }
    assert_eq!(got, b"world");
    drop(c);
    server.await.unwrap();
}

#[ringway::test(both)]
async fn vectored_write_keeps_order() {
    let (mut a, mut b) = UnixStream::pair().unwrap();
    let bufs = vec![b"one ".to_vec(), b"two ".to_vec(), b"three".to_vec()];
    let (r, back) = a.write_vectored(bufs).await;
    assert_eq!(r.unwrap(), 13);
    assert_eq!(back.len(), 3);
    let (r, buf) = b.read(vec![0u8; 64]).await;
    assert_eq!(&buf[..r.unwrap()], b"one two three");
}

#[ringway::test(both)]
async fn sleep_and_timeout() {
    let t0 = Instant::now();
    sleep(Duration::from_millis(30)).await;
    assert!(
        t0.elapsed() >= Duration::from_millis(30),
        "sleep returned early"
    );

    let r = timeout(Duration::from_millis(20), sleep(Duration::from_secs(10))).await;
    assert!(r.is_err(), "a 10 s sleep must not finish within 20 ms");
    assert_eq!(
        ringway::time::pending_timers(),
        0,
        "the abandoned sleep removed its timer"
    );

    let r = timeout(Duration::from_secs(10), async { 5 }).await;
    assert_eq!(r, Ok(5));

    // A read that never gets data, abandoned by a timeout: the op is cancelled cleanly.
    let (mut a, _b) = UnixStream::pair().unwrap();
    let before = ringway::runtime::live_ops();
    let r = timeout(Duration::from_millis(10), a.read(vec![0u8; 8])).await;
    assert!(r.is_err());
    sleep(Duration::from_millis(5)).await;
    assert_eq!(
        ringway::runtime::live_ops(),
        before,
        "cancelled read released its slot"
    );
}

#[ringway::test(both)]
async fn interval_ticks_in_order() {
    let mut iv = ringway::time::interval(Duration::from_millis(5));
    let mut last = iv.tick().await;
    for _ in 0..5 {
        let t = iv.tick().await;
        assert!(t >= last + Duration::from_millis(5));
        last = t;
    }
}

#[ringway::test(both)]
async fn connect_refused_and_timeout() {
    // A port nobody listens on: bind, learn the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = TcpStream::connect(("127.0.0.1", port)).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    assert!(
        e.to_string().contains(&port.to_string()),
        "error names the address: {e}"
    );

    // A listener with a full backlog never completes the handshake of the next SYN on
    // Linux, so the connect must time out.
    let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    // SAFETY: listen with backlog 0 on a socket we own.
    unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&sock), 0) };
    let mut fillers = Vec::new();
    let mut timed_out = false;
    for _ in 0..64 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(200)).await {
            Ok(s) => fillers.push(s),
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
                timed_out = true;
                break;
            }
        }
    }
    assert!(timed_out, "64 connects into a backlog of 0 all succeeded");
}

#[ringway::test(both)]
async fn udp_send_to_and_recv_from() {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    for i in 0..50u8 {
        let (r, _) = a.send_to(vec![i; 1 + i as usize], ba).await;
        assert_eq!(r.unwrap(), 1 + i as usize);
        let (r, buf) = b.recv_from(vec![0u8; 256]).await;
        let (n, from) = r.unwrap();
        assert_eq!(from, aa);
        assert_eq!(&buf[..n], &vec![i; 1 + i as usize][..]);
    }
    a.connect(ba).unwrap();
    b.connect(aa).unwrap();
    let (r, _) = a.send(b"ping".as_slice()).await;
    r.unwrap();
    let (r, buf) = b.recv(vec![0u8; 16]).await;
    assert_eq!(&buf[..r.unwrap()], b"ping");
}

#[ringway::test(both)]
async fn unix_listener_and_stream() {
    let dir = std::env::temp_dir().join(format!(
        "ringway-unix-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let listener = UnixListener::bind(&path).unwrap();
    let server = ringway::spawn(async move {
        let mut s = listener.accept().await.unwrap();
        let mut rx = s.recv_multishot();
        let mut got = Vec::new();
        while let Some(chunk) = rx.next().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        got
    });
    let mut c = UnixStream::connect(&path).await.unwrap();
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let (r, _) = c.write_all(data.clone()).await;
    r.unwrap();
    drop(c);
    assert_eq!(server.await.unwrap(), data);
    std::fs::remove_dir_all(&dir).unwrap();

    let e = UnixStream::connect(dir.join("missing")).await.unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
}

#[ringway::test(both)]
async fn files_read_at_write_at() {
    let path = std::env::temp_dir().join(format!(
        "ringway-file-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let f = ringway::fs::File::create(&path).await.unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let (r, _) = f.write_all_at(data.clone(), 0).await;
    r.unwrap();
    let (r, _) = f.write_all_at(b"XYZ".as_slice(), 10).await;
    r.unwrap();
    f.sync_all().await.unwrap();
    assert_eq!(f.metadata().unwrap().len(), data.len() as u64);
    drop(f);

    let f = ringway::fs::File::open(&path).await.unwrap();
    let (r, buf) = f.read_at(vec![0u8; 5], 8).await;
    assert_eq!(r.unwrap(), 5);
    assert_eq!(&buf, &[data[8], data[9], b'X', b'Y', b'Z']);
    let (r, _) = f.read_at(vec![0u8; 10], data.len() as u64).await;
    assert_eq!(r.unwrap(), 0, "end of file");
    drop(f);
    std::fs::remove_file(&path).unwrap();

    let e = ringway::fs::File::open(&path).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(
        e.to_string().contains("ringway-file"),
        "error names the path: {e}"
    );
}

#[ringway::test(both)]
async fn spawn_blocking_and_cross_thread_wake() {
    let h = ringway::spawn_blocking(|| {
        std::thread::sleep(Duration::from_millis(20));
        std::thread::current().name().map(str::to_owned)
    });
    assert_eq!(h.await.unwrap().as_deref(), Some("ringway-blocking"));
    let results: Vec<_> = (0..32)
        .map(|i| ringway::spawn_blocking(move || i * 2))
        .collect();
    let mut sum = 0;
    for r in results {
        sum += r.await.unwrap();
    }
    assert_eq!(sum, (0..32).map(|i| i * 2).sum::<i32>());
    let e = ringway::spawn_blocking(|| panic!("boom"))
        .await
        .unwrap_err();
    assert!(e.is_panic());
}

#[ringway::test(both)]
async fn join_handles_cancel_on_drop_and_report_panics() {
    let flag = Rc::new(Cell::new(false));
    let f = flag.clone();
    let h = ringway::spawn(async move {
        sleep(Duration::from_secs(10)).await;
        f.set(true);
    });
    ringway::runtime::yield_now().await;
    drop(h);
    ringway::runtime::yield_now().await;
    assert_eq!(
        ringway::time::pending_timers(),
        0,
        "cancelled task dropped its sleep"
    );
    assert!(!flag.get());

    let h = ringway::spawn(async { sleep(Duration::from_secs(10)).await });
    h.abort();
    assert!(h.await.unwrap_err().is_cancelled());

    let e = ringway::spawn(async { panic!("task panic") })
        .await
        .unwrap_err();
    assert!(e.is_panic());
    assert!(format!("{e:?}").contains("task panic"));

    let f = flag.clone();
    ringway::spawn(async move { f.set(true) }).detach();
    ringway::runtime::yield_now().await;
    assert!(flag.get(), "a detached task runs");
}

#[test]
fn cross_core_spawn_and_reuseport() {
    for backend in [Backend::Uring, Backend::Epoll] {
        let rt = Runtime::builder()
            .worker_threads(2)
            .backend(backend)
            .build()
            .unwrap();
        assert_eq!(rt.backend().kind, backend);
        let handle = rt.handle();
        rt.block_on(async {
            // A !Send future built on core 1 (Rc inside), output sent back.
            let out = handle
                .spawn_on(1, || async {
                    let rc = Rc::new(5);
                    sleep(Duration::from_millis(1)).await;
                    (ringway::runtime::current_core(), *rc)
                })
                .await
                .unwrap();
            assert_eq!(out, (1, 5));

            // One SO_REUSEPORT listener per core on the same port; both serve.
            let opts = ringway::net::ListenOptions {
                reuse_port: true,
                ..Default::default()
            };
            let l0 = TcpListener::bind_with("127.0.0.1:0", &opts).unwrap();
            let addr = l0.local_addr().unwrap();
            // Connect only once core 1 listens too, or every connection may land on
            // core 0's listener.
            let (bound_tx, bound_rx) = std::sync::mpsc::channel();
            let h1 = handle.spawn_on(1, move || async move {
                let l1 = TcpListener::bind_with(
                    addr,
                    &ringway::net::ListenOptions {
                        reuse_port: true,
                        ..Default::default()
                    },
                )
                .unwrap();
                bound_tx.send(()).unwrap();
                let mut cores = Vec::new();
                let mut incoming = l1.incoming();
                // Keep serving until told which cores answered.
                while cores.len() < 64 {
                    match timeout(Duration::from_millis(300), incoming.next()).await {
                        Ok(Some(Ok(mut s))) => {
                            s.write_all(vec![1u8]).await.0.unwrap();
                            cores.push(1u8);
                        }
                        _ => break,
                    }
                }
                cores.len()
            });
            let h0 = ringway::spawn(async move {
                let mut n = 0;
                let mut incoming = l0.incoming();
                while n < 64 {
                    match timeout(Duration::from_millis(300), incoming.next()).await {
                        Ok(Some(Ok(mut s))) => {
                            s.write_all(vec![0u8]).await.0.unwrap();
                            n += 1;
                        }
                        _ => break,
                    }
                }
                n
            });
            while bound_rx.try_recv().is_err() {
                sleep(Duration::from_millis(1)).await;
            }
            let mut seen = [0usize; 2];
            for _ in 0..64 {
                let mut c = TcpStream::connect(addr).await.unwrap();
                let (r, buf) = c.read(vec![0u8; 1]).await;
                assert_eq!(r.unwrap(), 1);
                seen[buf[0] as usize] += 1;
            }
            let (n0, n1) = (h0.await.unwrap(), h1.await.unwrap());
            assert_eq!(n0 + n1, 64);
            assert_eq!(seen, [n0, n1]);
            assert!(
                n0 > 0 && n1 > 0,
                "the kernel spread 64 connections over both cores: {seen:?}"
            );
        });
        drop(rt);
    }
}

#[test]
fn backend_report_flags_and_name_parsing() {
    // RINGWAY_BACKEND itself is tested in fallback.rs (backend_env_override), in child
    // processes with the variable set.
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Uring)
        .build()
        .unwrap();
    let info = rt.backend().clone();
    assert_eq!(info.kind, Backend::Uring);
    assert_eq!(
        info.flags,
        vec!["SINGLE_ISSUER", "DEFER_TASKRUN"],
        "the fast path is on by default here"
    );
    assert!(info.to_string().contains("DEFER_TASKRUN"));
    drop(rt);
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Epoll)
        .build()
        .unwrap();
    assert_eq!(rt.backend().kind, Backend::Epoll);
    assert!(rt.backend().to_string().starts_with("epoll"));
    assert_eq!("io_uring".parse::<Backend>().unwrap(), Backend::Uring);
    let e = "iouring2".parse::<Backend>().unwrap_err();
    assert!(
        e.to_string().contains("expected one of auto, uring, epoll"),
        "{e}"
    );
}

#[test]
fn one_enter_per_turn_and_few_per_message() {
    // Counted by the kernel, not by the driver: a perf counter on the
    // sys_enter_io_uring_enter tracepoint for this thread, which runs the only core (and
    // the clients, in the same loop). Each loop turn must enter the kernel exactly once;
    // the only extra enters allowed are the ones the driver owns up to (a full SQ
    // flushed early, a CQ overflow drained).
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Uring)
        .build()
        .unwrap();
    let counter = support::SyscallCounter::new("io_uring_enter").expect("kernel syscall counter");
    rt.block_on(async {
        let addr = start_echo();
        let conns = 50;
        let msgs = 200;
        let mut clients = Vec::new();
        for _ in 0..conns {
            let s = TcpStream::connect(addr).await.unwrap();
            s.set_nodelay(true).unwrap();
            clients.push(s);
        }
        let handles: Vec<_> = clients
            .into_iter()
            .map(|mut s| {
                ringway::spawn(async move {
                    let mut buf = vec![0u8; 64];
                    for i in 0..msgs {
                        let (r, b) = s.write_all(vec![i as u8; 64]).await;
                        r.unwrap();
                        drop(b);
                        let mut got = 0;
                        while got < 64 {
                            let (r, b) = s.read(buf).await;
                            let n = r.unwrap();
                            assert!(n > 0);
                            assert!(b[..n].iter().all(|&x| x == i as u8));
                            got += n;
                            buf = b;
                            buf.clear();
                        }
                        buf.resize(64, 0);
                        buf.clear();
                    }
                })
            })
            .collect();
        let before = ringway::runtime::driver_stats();
        counter.start();
        for h in handles {
            h.await.unwrap();
        }
        let kernel_enters = counter.stop();
        let after = ringway::runtime::driver_stats();
        let turns = after.turns - before.turns;
        let extra = (after.sq_full_flushes - before.sq_full_flushes)
            + (after.cq_overflow_flushes - before.cq_overflow_flushes);
        let messages = (conns * msgs) as u64;
        assert!(turns > 0);
        assert_eq!(
            kernel_enters,
            turns + extra,
            "the kernel saw {kernel_enters} io_uring_enter calls for {turns} loop turns \
             ({extra} declared flushes): exactly one per turn"
        );
        assert!(
            (kernel_enters as f64) < 0.5 * messages as f64,
            "{kernel_enters} enters for {messages} echoed messages (client and server in one loop)"
        );
    });
}

#[test]
fn tiny_ring_overflows_without_losing_anything() {
    // 2 SQ entries and 8 CQ entries against 100 busy connections: every turn fills the
    // SQ (flushed early) and the CQ (the kernel keeps the excess; we flush it).
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Uring)
        .ring_entries(2)
        .build()
        .unwrap();
    assert_eq!(rt.backend().ring_entries, 2);
    rt.block_on(async {
        let addr = start_echo();
        let handles: Vec<_> = (0..100u64)
            .map(|i| {
                let mut data = vec![0u8; 20_000];
                rand::rngs::StdRng::seed_from_u64(i).fill_bytes(&mut data);
                ringway::spawn(async move {
                    let got = echo_round_trip(addr, data.clone(), i).await;
                    assert!(got == data, "connection {i}: bytes altered");
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        let stats = ringway::runtime::driver_stats();
        println!("{stats:?}");
        assert!(
            stats.sq_full_flushes > 0,
            "a 2-entry SQ must have filled: {stats:?}"
        );
        assert_eq!(ringway::runtime::pool_stats().in_use, 0);
    });
}

#[ringway::test(both)]
async fn multishot_receive_sees_end_of_stream_when_data_and_fin_arrive_together() {
    // A peer that answers and closes at once: its last bytes and its FIN often arrive
    // in one readiness edge. 300 connections, each drained to end of stream.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        for _ in 0..300 {
            let (mut s, _) = listener.accept().unwrap();
            let mut req = [0u8; 16];
            let _ = s.read(&mut req).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\n\r\nHello").unwrap();
        }
    });
    for i in 0..300 {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET / HTTP/1.1\r\n".as_slice())
            .await
            .0
            .unwrap();
        let mut rx = c.recv_multishot();
        let drained = timeout(Duration::from_secs(10), async {
            let mut n = 0;
            while let Some(chunk) = rx.next().await {
                n += chunk.unwrap().len();
            }
            n
        })
        .await;
        assert_eq!(drained, Ok(24), "connection {i}: end of stream not seen");
    }
    server.join().unwrap();
}

#[ringway::test(both)]
async fn multishot_receive_wakes_the_waker_of_its_latest_poll() {
    // A stream that found nothing answers later polls without asking the driver, as long
    // as the same waker polls it. Polled first by another waker (a stream handed from
    // one future to another), then by this task: the task must be the one woken, and
    // only by the bytes (they come from a thread, so nothing else wakes it).
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    let (mut server, _) = listener.accept().await.unwrap();
    let mut rx = server.recv_multishot();
    for round in 0..3u8 {
        let other = Arc::new(Count(AtomicUsize::new(0)));
        let other_waker = Waker::from(other.clone());
        let mut cx = Context::from_waker(&other_waker);
        assert!(
            rx.poll_next(&mut cx).is_pending(),
            "round {round}: nothing sent"
        );
        assert!(
            rx.poll_next(&mut cx).is_pending(),
            "round {round}: still nothing"
        );
        let sender = std::thread::spawn(move || {
            use std::io::Write;
            std::thread::sleep(Duration::from_millis(30));
            client.write_all(&[round; 5]).unwrap();
            client
        });
        // This task polls it now (its own waker), then the bytes arrive.
        let got = timeout(Duration::from_secs(5), rx.next()).await;
        client = sender.join().unwrap();
        let chunk = got.unwrap_or_else(|_| panic!("round {round}: the task was never woken"));
        assert_eq!(&chunk.unwrap().unwrap()[..], &[round; 5][..]);
        assert_eq!(
            other.0.load(Ordering::SeqCst),
            0,
            "round {round}: the old waker was woken"
        );
    }
}
