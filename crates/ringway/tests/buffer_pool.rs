//! The provided-buffer pool under pressure, on both backends.
//!
//! A multishot receive takes buffers from the core's pool; when the pool runs dry the
//! kernel ends the receive with `ENOBUFS` (io_uring) or the driver finds no free buffer
//! (epoll), and the driver must park the receive and re-arm it once a buffer comes back,
//! losing and reordering nothing. These tests run echo traffic through a pool of two
//! 64-byte buffers, check every byte, and check that the pool really ran dry
//! (`driver_stats().pool_starved > 0`: receives parked on `ENOBUFS`, not re-arms of
//! any other kind), that each parked receive resumed (`pool_resumed`), and that every
//! buffer came back (`in_use == 0`). Their pools are fixed (`buffer_pool_max` at the
//! pool's count), but for `a_dry_pool_doubles_up_to_its_cap`: a pool that may grow
//! answers a dry turn by growing, and is at its cap before the rest of this applies.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringway::net::TcpListener;
use ringway::runtime::{driver_stats, pool_stats, reset_pool_peak, task_count, yield_now};
use ringway::time::sleep;
use ringway::{Backend, Runtime};

/// Generates `name::uring` and `name::epoll`, each calling `super::name(backend)`.
macro_rules! both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn uring() {
                super::$name(ringway::Backend::Uring)
            }
            #[test]
            fn epoll() {
                super::$name(ringway::Backend::Epoll)
            }
        }
    )*};
}

both!(
    echo_through_an_exhausted_pool,
    multishot_resumes_after_the_pool_ran_dry,
    a_dry_pool_doubles_up_to_its_cap,
    multishot_yields_exactly_the_bytes_then_none,
    a_reader_that_falls_behind_cannot_drain_the_pool,
    a_stalled_reader_pins_at_most_its_share_of_the_pool,
    readers_within_their_share_cannot_starve_the_core_together,
    without_the_pressure_rule_readers_within_their_share_starve_the_core,
);

fn runtime(backend: Backend, pool: Option<(u16, usize)>) -> Runtime {
    runtime_with(backend, pool, true)
}

fn runtime_with(backend: Backend, pool: Option<(u16, usize)>, pressure_rule: bool) -> Runtime {
    let mut b = Runtime::builder();
    b.worker_threads(1)
        .backend(backend)
        .pool_pressure(pressure_rule);
    if let Some((count, size)) = pool {
        b.buffer_pool(count, size).buffer_pool_max(count);
    }
    let rt = b.build().expect("build runtime");
    assert_eq!(rt.backend().kind, backend);
    rt
}

/// Seeded pseudo-random bytes.
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    StdRng::seed_from_u64(seed).fill(&mut v[..]);
    v
}

/// Fails with the first offset where `got` and `want` differ.
fn check_same(got: &[u8], want: &[u8], what: &str) -> Result<(), String> {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        return Err(format!(
            "{what}: byte {i} differs ({:#04x} instead of {:#04x})",
            got[i], want[i]
        ));
    }
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} bytes instead of {}",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}

/// Lets the loop turn until no pool buffer is in use and only `tasks` tasks are left
/// (bounded), then asserts it.
async fn settle(tasks: usize) {
    for _ in 0..250 {
        if pool_stats().in_use == 0 && task_count() == tasks {
            break;
        }
        sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pool_stats().in_use, 0, "pool buffers not returned");
    assert_eq!(task_count(), tasks, "tasks left over");
}

const CONNS: usize = 100;
const BYTES: usize = 20 * 1024;

/// One blocking client: a writer thread sends `BYTES` seeded random bytes in random
/// pieces (then shuts down its side), while this thread reads the echo to its end.
fn echo_client(addr: SocketAddr, seed: u64) -> Result<(), String> {
    let data = random_bytes(seed, BYTES);
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    // Guards against a hang only: with no byte lost the echo finishes long before.
    let guard = Some(Duration::from_secs(60));
    s.set_read_timeout(guard).unwrap();
    s.set_write_timeout(guard).unwrap();
    let mut w = s.try_clone().unwrap();
    let sent = data.clone();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut rng = StdRng::seed_from_u64(seed ^ 0xffff);
        let mut off = 0;
        while off < sent.len() {
            let n = rng.random_range(1..=1500).min(sent.len() - off);
            w.write_all(&sent[off..off + n])?;
            off += n;
        }
        w.shutdown(std::net::Shutdown::Write)
    });
    let mut got = Vec::with_capacity(BYTES);
    let read = s.read_to_end(&mut got);
    writer
        .join()
        .map_err(|_| "writer panicked".to_string())?
        .map_err(|e| format!("client {seed} write: {e}"))?;
    read.map_err(|e| format!("client {seed} read after {} bytes: {e}", got.len()))?;
    check_same(&got, &data, &format!("client {seed}"))
}

/// 100 connections through an echo server whose core has two 64-byte pool buffers.
fn echo_through_an_exhausted_pool(backend: Backend) {
    let rt = runtime(backend, Some((2, 64)));
    rt.block_on(async {
        let stats = pool_stats();
        assert_eq!((stats.total, stats.buf_size, stats.in_use), (2, 64, 0));
        let before = driver_stats();

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = ringway::spawn(async move {
            let mut incoming = listener.incoming();
            let mut conns = Vec::new();
            for _ in 0..CONNS {
                let mut s = incoming.next().await.expect("incoming").expect("accept");
                conns.push(ringway::spawn(async move {
                    let mut rx = s.recv_multishot();
                    let mut echoed = 0;
                    while let Some(chunk) = rx.next().await {
                        let chunk = chunk.expect("receive");
                        assert!(!chunk.is_empty() && chunk.len() <= 64);
                        echoed += chunk.len();
                        let (r, _) = s.write_all(chunk).await;
                        r.expect("echo write");
                    }
                    echoed
                }));
            }
            let mut total = 0;
            for c in conns {
                total += c.await.expect("connection task");
            }
            total
        });

        let clients = ringway::spawn_blocking(move || {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..CONNS as u64)
                    .map(|i| scope.spawn(move || echo_client(addr, 1000 + i)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err("client panicked".into())))
                    .collect::<Vec<_>>()
            })
        });
        let results = clients.await.expect("clients");
        let failed: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(
            failed.is_empty(),
            "{} clients failed: {failed:?}",
            failed.len()
        );

        let echoed = server.await.expect("server");
        assert_eq!(echoed, CONNS * BYTES);
        settle(0).await;
        let after = driver_stats();
        let starved = after.pool_starved - before.pool_starved;
        let resumed = after.pool_resumed - before.pool_resumed;
        assert!(
            starved > 0,
            "the pool never ran dry: the test proved nothing"
        );
        // Every parked receive either resumed or ended (its connection closed) while
        // parked; it never got stuck: the bytes all came through above.
        assert!(
            resumed > 0 && resumed <= starved,
            "{resumed} resumed of {starved} parked"
        );
        println!("{backend:?}: {starved} receives parked on an empty pool, {resumed} resumed");
    });
}

/// Deterministic dry pool: the receiver holds both buffers while the peer keeps
/// sending; the receive must park (counted in `pool_starved`), then resume (counted in
/// `pool_resumed`) without loss.
fn multishot_resumes_after_the_pool_ran_dry(backend: Backend) {
    let rt = runtime(backend, Some((2, 64)));
    rt.block_on(async {
        const TOTAL: usize = 256 * 1024;
        let data = random_bytes(7, TOTAL);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut stream, _) = listener.accept().await.unwrap();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            peer.write_all(&sent[..128]).unwrap();
            go_rx.recv().unwrap();
            peer.write_all(&sent[128..]).unwrap();
            // Dropped here: end of stream.
        });

        let before = driver_stats();
        let mut rx = stream.recv_multishot();
        let mut got = Vec::with_capacity(TOTAL);
        // Take both buffers and keep them: the pool is now empty.
        let a = rx.next().await.unwrap().unwrap();
        let b = rx.next().await.unwrap().unwrap();
        assert_eq!(pool_stats().in_use, 2);
        go_tx.send(()).unwrap();
        // More bytes arrive with no buffer for them (epoll finds out as soon as it tries
        // a third read, io_uring when the bytes come): the receive must park, and stay
        // parked however many more bytes arrive.
        for _ in 0..500 {
            if driver_stats().pool_starved > before.pool_starved {
                break;
            }
            sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            driver_stats().pool_starved,
            before.pool_starved + 1,
            "bytes arrived on an empty pool: the receive must park, once"
        );
        assert_eq!(
            driver_stats().pool_resumed,
            before.pool_resumed,
            "no buffer is back yet"
        );
        got.extend_from_slice(&a);
        got.extend_from_slice(&b);
        drop((a, b));
        while let Some(chunk) = rx.next().await {
            let chunk = chunk.expect("receive");
            assert!(chunk.len() <= 64);
            got.extend_from_slice(&chunk);
        }
        assert!(
            rx.next().await.is_none(),
            "the stream resumed after its end"
        );
        check_same(&got, &data, "received").unwrap();
        assert!(
            driver_stats().pool_resumed > before.pool_resumed,
            "the parked receive resumed when the buffers came back"
        );
        writer.join().unwrap();
        drop(rx);
        settle(0).await;
    });
}

/// A pool of two 64-byte buffers that may grow to eight: the reader keeps every piece
/// it takes, so each time the pool runs dry only growth lets the receive go on: it
/// parks, the pool doubles, and the receive resumes with the reader's pieces still held;
/// at eight it parks for good, until the reader lets go. Every byte arrives, in order.
fn a_dry_pool_doubles_up_to_its_cap(backend: Backend) {
    let mut b = Runtime::builder();
    b.worker_threads(1)
        .backend(backend)
        .buffer_pool(2, 64)
        .buffer_pool_max(8);
    let rt = b.build().expect("build runtime");
    assert_eq!(rt.backend().kind, backend);
    rt.block_on(async {
        const TOTAL: usize = 64 * 1024;
        let data = random_bytes(11, TOTAL);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut stream, _) = listener.accept().await.unwrap();
        let sent = data.clone();
        let writer = std::thread::spawn(move || peer.write_all(&sent).unwrap());
        let stats = pool_stats();
        assert_eq!((stats.total, stats.capacity), (2, 8));
        let before = driver_stats();

        let mut rx = stream.recv_multishot();
        let mut held = Vec::new();
        let mut got = Vec::with_capacity(TOTAL);
        // Eight 64-byte pieces at most can be held: the pool's cap, each piece its
        // buffer's last (whole buffers on io_uring; on epoll a full buffer is closed).
        while held.len() < 8 {
            // Without growth the third piece never comes (the reader holds the pool).
            let piece = ringway::time::timeout(Duration::from_secs(10), rx.next())
                .await
                .unwrap_or_else(|_| panic!("no piece {} while {} held", held.len() + 1, held.len()))
                .expect("bytes")
                .expect("receive");
            got.extend_from_slice(&piece);
            held.push(piece);
        }
        assert_eq!(
            (pool_stats().total, pool_stats().free),
            (8, 0),
            "grown to its cap, every buffer held"
        );
        // At its cap the pool grows no more: the receive parks (a third time) until the
        // reader lets go, and stays parked.
        let parked = || driver_stats().pool_starved - before.pool_starved;
        for _ in 0..100 {
            if parked() >= 3 {
                break;
            }
            sleep(Duration::from_millis(10)).await;
        }
        sleep(Duration::from_millis(50)).await;
        assert_eq!(
            (parked(), driver_stats().pool_grown - before.pool_grown),
            (3, 2),
            "parked on 2 and on 4 buffers, each time followed by a doubling; then on 8, \
             the cap, for good"
        );
        drop(held);
        while got.len() < TOTAL {
            let piece = rx.next().await.expect("bytes").expect("receive");
            got.extend_from_slice(&piece);
        }
        check_same(&got, &data, "received").unwrap();
        assert_eq!(pool_stats().total, 8);
        writer.join().unwrap();
        drop(rx);
        settle(0).await;
    });
}

/// A normal pool: the peer sends 1 MiB and closes; the stream yields exactly those
/// bytes, in order, then `None`.
fn multishot_yields_exactly_the_bytes_then_none(backend: Backend) {
    let rt = runtime(backend, None);
    rt.block_on(async {
        const TOTAL: usize = 1 << 20;
        let data = random_bytes(0x1_0000, TOTAL);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            let mut peer = std::net::TcpStream::connect(addr).unwrap();
            let mut rng = StdRng::seed_from_u64(3);
            let mut off = 0;
            while off < sent.len() {
                let n = rng.random_range(1..=64 * 1024).min(sent.len() - off);
                peer.write_all(&sent[off..off + n]).unwrap();
                off += n;
            }
        });
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut rx = stream.recv_multishot();
        let mut got = Vec::with_capacity(TOTAL);
        let mut chunks = 0;
        while let Some(chunk) = rx.next().await {
            let chunk = chunk.expect("receive");
            assert!(!chunk.is_empty() && chunk.len() <= pool_stats().buf_size);
            got.extend_from_slice(&chunk);
            chunks += 1;
        }
        assert!(
            rx.next().await.is_none(),
            "the stream resumed after its end"
        );
        check_same(&got, &data, "received").unwrap();
        assert!(chunks >= TOTAL / pool_stats().buf_size);
        writer.join().unwrap();
        drop(rx);
        drop(stream);
        settle(0).await;
    });
}

/// A connection whose task stops reading its stream while the peer keeps sending must
/// not take the core's pool: its receive stops at a bounded backlog (the bytes wait in
/// the socket), another connection is still served, and the stalled one gets every
/// byte, in order, once it reads again.
fn a_reader_that_falls_behind_cannot_drain_the_pool(backend: Backend) {
    let rt = runtime(backend, Some((64, 1024)));
    rt.block_on(async {
        const TOTAL: usize = 1 << 20;
        let data = random_bytes(11, TOTAL);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            let mut peer = std::net::TcpStream::connect(addr).unwrap();
            peer.write_all(&sent).unwrap();
        });
        let (mut slow, _) = listener.accept().await.unwrap();
        let before = driver_stats().recv_backlogged;
        let mut rx = slow.recv_multishot();
        // Read one chunk, then stop reading while the peer goes on sending.
        let mut got = Vec::with_capacity(TOTAL);
        got.extend_from_slice(&rx.next().await.unwrap().unwrap());
        sleep(Duration::from_millis(300)).await;
        // What waits for the stalled reader was copied out of the pool: it holds none
        // (the one chunk it read is gone too).
        let held = pool_stats().in_use;
        assert_eq!(held, 0, "a stalled reader holds {held} pool buffers");
        assert!(
            driver_stats().recv_backlogged > before,
            "the receive was stopped"
        );

        // Another connection is served meanwhile: buffers were left for it.
        let mut other_peer = std::net::TcpStream::connect(addr).unwrap();
        let (mut other, _) = listener.accept().await.unwrap();
        other_peer.write_all(b"still served").unwrap();
        let mut orx = other.recv_multishot();
        let chunk = orx.next().await.unwrap().unwrap();
        assert_eq!(&chunk[..], b"still served");
        drop((chunk, orx, other, other_peer));

        // Reading again: every byte, in order.
        while got.len() < TOTAL {
            let chunk = rx.next().await.unwrap().unwrap();
            got.extend_from_slice(&chunk);
        }
        check_same(&got, &data, "the stalled stream").unwrap();
        writer.join().unwrap();
        drop(rx);
        settle(0).await;
    });
}

/// One connection's share of the pool, counted: its peer sends 8 MiB that its reader
/// does not read. The pieces waiting for that reader may pin at most the receive's share
/// of the pool (an eighth: 16 of the default 128 buffers of 64 KiB); past it the receive
/// stops (`recv_backlogged`; `recv_share_stops` when the share, not the count of
/// completions, stopped it), what waits is copied out, and the peer's bytes wait in
/// TCP's window. Meanwhile another connection on the same core is served, round trip
/// after round trip; then the stalled reader reads everything, slowly (one piece per
/// turn, so its receive stops and resumes again), never pinning more than its share, and
/// gets every byte in order.
fn a_stalled_reader_pins_at_most_its_share_of_the_pool(backend: Backend) {
    let rt = runtime(backend, None);
    rt.block_on(async {
        const TOTAL: usize = 8 << 20;
        let share = pool_stats().share;
        assert_eq!(
            (pool_stats().total, share),
            (128, 16),
            "the default pool and its share"
        );
        let data = random_bytes(17, TOTAL);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            let mut peer = std::net::TcpStream::connect(addr).unwrap();
            peer.write_all(&sent).unwrap();
        });
        let (mut slow, _) = listener.accept().await.unwrap();
        let before = driver_stats();
        let mut rx = slow.recv_multishot();
        let mut got = Vec::with_capacity(TOTAL);
        got.extend_from_slice(&rx.next().await.unwrap().unwrap());

        // The reader stops reading. Wait (bounded) until its receive stopped: the peer
        // sends far more than the share, so it must.
        for _ in 0..1000 {
            if driver_stats().recv_backlogged > before.recv_backlogged {
                break;
            }
            sleep(Duration::from_millis(5)).await;
        }
        let pool = pool_stats();
        assert!(
            pool.peak_pinned <= share,
            "one stalled reader pinned {} of {} buffers (share {share})",
            pool.peak_pinned,
            pool.total
        );
        let stats = driver_stats();
        assert!(
            stats.recv_backlogged > before.recv_backlogged,
            "the receive was never stopped: {stats:?}"
        );
        assert_eq!(pool.in_use, 0, "a stopped receive holds no piece: {pool:?}");

        // Another connection on the same core is served while the slow one waits.
        let other_data = random_bytes(19, 64 * 1024);
        let want = other_data.clone();
        let other_client = std::thread::spawn(move || -> Result<(), String> {
            let mut peer = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
            for round in 0..50 {
                let msg = &want[round * 1024..(round + 1) * 1024];
                peer.write_all(msg).map_err(|e| e.to_string())?;
                let mut back = vec![0u8; msg.len()];
                peer.read_exact(&mut back).map_err(|e| e.to_string())?;
                check_same(&back, msg, "the other connection's echo")?;
            }
            Ok(())
        });
        let (mut other, _) = listener.accept().await.unwrap();
        let mut orx = other.recv_multishot();
        let mut echoed = 0;
        while echoed < 50 * 1024 {
            let chunk = orx.next().await.unwrap().unwrap();
            echoed += chunk.len();
            let (r, _) = other.write_all(chunk.to_vec()).await;
            r.unwrap();
        }
        other_client.join().unwrap().unwrap();
        drop((orx, other));
        assert_eq!(
            driver_stats().recv_resumed,
            before.recv_resumed,
            "the stalled receive stayed stopped while its reader did not read"
        );

        // Now the stalled reader reads, one piece per turn: never more than its share.
        reset_pool_peak();
        while got.len() < TOTAL {
            let chunk = rx.next().await.unwrap().unwrap();
            got.extend_from_slice(&chunk);
            drop(chunk);
            yield_now().await;
        }
        let pool = pool_stats();
        assert!(
            pool.peak_pinned <= share,
            "a slow reader pinned {} of {} buffers (share {share})",
            pool.peak_pinned,
            pool.total
        );
        let stats = driver_stats();
        assert!(
            stats.recv_resumed > before.recv_resumed,
            "the receive resumed when its reader caught up: {stats:?}"
        );
        assert!(stats.recv_backlogged >= stats.recv_share_stops);
        check_same(&got, &data, "the stalled stream").unwrap();
        writer.join().unwrap();
        drop(rx);
        drop(slow);
        settle(0).await;
    });
}

/// Slow readers in the pool-pressure tests: enough that, each a little under its share,
/// they hold more than the whole pool together.
const SLOW: usize = 16;
/// What each slow reader's peer sends before its reader reads: 6 buffers of the test's
/// pool (64 x 4 KiB, share 8), which its pieces spread over 7 at most: under the share.
const SLOW_FIRST: usize = 6 * 4096;
/// What each slow reader's peer sends in all.
const SLOW_TOTAL: usize = 256 * 1024;

/// FNV-1a, 64 bits: a checksum of a stream's bytes, taken as they come.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Bytes waiting in socket `fd`'s receive queue (`FIONREAD`), or sent and not yet
/// acknowledged (`TIOCOUTQ`, a client's).
fn queued(fd: std::os::fd::RawFd, which: libc::Ioctl) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: both ioctls write one int; `fd` is a live socket of this test.
    let r = unsafe { libc::ioctl(fd, which, &mut n) };
    assert_eq!(r, 0, "ioctl: {}", std::io::Error::last_os_error());
    n as usize
}

/// The pool-pressure rule, on: [`SLOW`] connections whose readers do not read, each
/// under its share (no stop for the share or the backlog while they fill), together
/// more than the core's pool, beside one that echoes. When a receive finds the pool dry
/// the driver copies out what waits for those readers and stops their receives
/// (`pool_pressure_stops`, `pool_reclaimed`); the echo then runs its 50 round trips
/// while the slow readers still read nothing, and every slow reader later gets all its
/// bytes, in order (length and checksum).
fn readers_within_their_share_cannot_starve_the_core_together(backend: Backend) {
    pool_pressure(backend, true);
}

/// The same with the rule off: the pool stays dry, the echo's receive stays parked,
/// and not one byte is echoed while the slow readers do not read (turn after turn,
/// counted). Once they read, everything goes through as before. This is the test above
/// failing without the rule.
fn without_the_pressure_rule_readers_within_their_share_starve_the_core(backend: Backend) {
    pool_pressure(backend, false);
}

fn pool_pressure(backend: Backend, rule: bool) {
    let rt = runtime_with(backend, Some((64, 4096)), rule);
    rt.block_on(async move {
        use std::cell::Cell;
        use std::os::fd::AsRawFd;
        use std::rc::Rc;

        let pool = pool_stats();
        assert_eq!((pool.total, pool.share), (64, 8));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let go = Rc::new(Cell::new(false));
        let before = driver_stats();

        // The slow connections, one after the other: each peer's first bytes are all
        // in the pool (or its receive parked on a dry one) before the next connects,
        // so that no two interleave in a buffer and each stays under its share.
        let mut peers = Vec::new();
        let mut readers = Vec::new();
        for i in 0..SLOW {
            let data = random_bytes(100 + i as u64, SLOW_TOTAL);
            let (first_tx, first_rx) = mpsc::channel::<()>();
            let (rest_tx, rest_rx) = mpsc::channel::<()>();
            let sent = data.clone();
            peers.push((
                rest_tx,
                std::thread::spawn(move || -> std::io::Result<()> {
                    let mut peer = std::net::TcpStream::connect(addr)?;
                    peer.write_all(&sent[..SLOW_FIRST])?;
                    // Acknowledged: in the server's socket, or already in the pool.
                    for _ in 0..5000 {
                        if queued(peer.as_raw_fd(), libc::TIOCOUTQ) == 0 {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    first_tx.send(()).unwrap();
                    rest_rx.recv().unwrap();
                    peer.write_all(&sent[SLOW_FIRST..])
                }),
            ));
            let (mut s, _) = listener.accept().await.unwrap();
            let fd = s.as_raw_fd();
            let go = go.clone();
            readers.push(ringway::spawn(async move {
                let mut rx = s.recv_multishot();
                let (mut len, mut sum) = (0, FNV_START);
                // One piece (its receive is armed from here), then nothing until `go`.
                let first = rx.next().await.unwrap().unwrap();
                len += first.len();
                sum = fnv1a(sum, &first);
                drop(first);
                while !go.get() {
                    sleep(Duration::from_millis(5)).await;
                }
                while len < SLOW_TOTAL {
                    let chunk = rx.next().await.unwrap().unwrap();
                    len += chunk.len();
                    sum = fnv1a(sum, &chunk);
                    drop(chunk);
                    yield_now().await;
                }
                (len, sum, fnv1a(FNV_START, &data))
            }));
            let starved = driver_stats().pool_starved;
            let mut written = false;
            for _ in 0..2000 {
                written = written || first_rx.try_recv().is_ok();
                if written
                    && (queued(fd, libc::FIONREAD) == 0 || driver_stats().pool_starved > starved)
                {
                    break;
                }
                sleep(Duration::from_millis(2)).await;
            }
            assert!(written, "slow peer {i} never wrote its first bytes");
        }
        let filled = driver_stats();
        assert_eq!(
            (filled.recv_backlogged, filled.recv_share_stops),
            (before.recv_backlogged, before.recv_share_stops),
            "every slow reader stayed under its share: {filled:?}"
        );
        assert!(
            filled.pool_starved > before.pool_starved,
            "together they ran the pool dry (or the test proves nothing): {filled:?}"
        );

        // The connection that echoes, while the slow readers still read nothing.
        let echoed = Rc::new(Cell::new(0usize));
        let rounds = 50;
        let want = random_bytes(99, rounds * 1024);
        let echo_client = std::thread::spawn(move || -> Result<(), String> {
            let mut peer = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
            // Guards against a hang only (the test's failure without the rule).
            peer.set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            for round in 0..rounds {
                let msg = &want[round * 1024..(round + 1) * 1024];
                peer.write_all(msg).map_err(|e| e.to_string())?;
                let mut back = vec![0u8; msg.len()];
                peer.read_exact(&mut back)
                    .map_err(|e| format!("round {round}: {e}"))?;
                check_same(&back, msg, "the echo")?;
            }
            Ok(())
        });
        let (mut conn, _) = listener.accept().await.unwrap();
        let count = echoed.clone();
        let echo = ringway::spawn(async move {
            let mut rx = conn.recv_multishot();
            while count.get() < rounds * 1024 {
                let chunk = rx.next().await.unwrap().unwrap();
                count.set(count.get() + chunk.len());
                let (r, _) = conn.write_all(chunk.to_vec()).await;
                r.unwrap();
            }
        });

        let mut echo = Some((echo, echo_client));
        if rule {
            let (echo, echo_client) = echo.take().unwrap();
            let client = ringway::spawn_blocking(move || echo_client.join().unwrap());
            let echoing = client.await.expect("echo client");
            echoing.unwrap_or_else(|e| panic!("the echo stalled beside the slow readers: {e}"));
            echo.await.unwrap();
            let relieved = driver_stats();
            assert!(
                relieved.pool_pressure_stops - before.pool_pressure_stops >= SLOW as u64 / 2,
                "the slow readers' receives were stopped and their pieces copied out: \
                 {relieved:?}"
            );
            assert!(relieved.pool_reclaimed > before.pool_reclaimed);
            assert_eq!(
                relieved.recv_resumed, before.recv_resumed,
                "no slow reader resumed: none read"
            );
        } else {
            // The echo's first message finds the pool dry: its receive parks and, with
            // nobody reading, stays parked: turn after turn, nothing is echoed.
            let starved = driver_stats().pool_starved;
            for _ in 0..1000 {
                if driver_stats().pool_starved > starved {
                    break;
                }
                sleep(Duration::from_millis(2)).await;
            }
            assert!(
                driver_stats().pool_starved > starved,
                "the echo's receive parked"
            );
            let turns = driver_stats().turns;
            for _ in 0..100 {
                sleep(Duration::from_millis(1)).await;
            }
            assert!(driver_stats().turns >= turns + 100);
            assert_eq!(
                echoed.get(),
                0,
                "the echo starved while the slow readers hold the pool"
            );
            assert_eq!(pool_stats().free, 0, "and the pool stayed dry");
            assert_eq!(driver_stats().pool_pressure_stops, 0);
        }

        // Now the slow readers read, slowly, and their peers send the rest.
        go.set(true);
        for (rest_tx, _) in &peers {
            rest_tx.send(()).unwrap();
        }
        for (i, reader) in readers.into_iter().enumerate() {
            let (len, sum, want) = reader.await.unwrap();
            assert_eq!(
                (len, sum),
                (SLOW_TOTAL, want),
                "slow reader {i}: length, checksum"
            );
        }
        for (i, (_, peer)) in peers.into_iter().enumerate() {
            peer.join()
                .unwrap()
                .unwrap_or_else(|e| panic!("slow peer {i}: {e}"));
        }
        if let Some((echo, echo_client)) = echo {
            echo.await.unwrap();
            echo_client.join().unwrap().unwrap();
        }
        let after = driver_stats();
        println!(
            "{backend:?}, pressure rule {}: pressure stops {}, buffers reclaimed {}, \
             receives parked on a dry pool {}, share stops {}",
            if rule { "on" } else { "off" },
            after.pool_pressure_stops - before.pool_pressure_stops,
            after.pool_reclaimed - before.pool_reclaimed,
            after.pool_starved - before.pool_starved,
            after.recv_share_stops - before.recv_share_stops,
        );
        settle(0).await;
    });
}
