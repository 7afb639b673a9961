//! The provided-buffer pool under pressure, on both backends.
//!
//! A multishot receive takes buffers from the core's pool; when the pool runs dry the
//! kernel ends the receive with `ENOBUFS` (io_uring) or the driver finds no free buffer
//! (epoll), and the driver must park the receive and re-arm it once a buffer comes back,
//! losing and reordering nothing. These tests run echo traffic through a pool of two
//! 64-byte buffers, check every byte, and check that the pool really ran dry
//! (`driver_stats().pool_starved > 0`: receives parked on `ENOBUFS`, not re-arms of
//! any other kind), that each parked receive resumed (`pool_resumed`), and that every
//! buffer came back (`in_use == 0`).

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
    multishot_yields_exactly_the_bytes_then_none,
    a_reader_that_falls_behind_cannot_drain_the_pool,
    a_stalled_reader_pins_at_most_its_share_of_the_pool,
);

fn runtime(backend: Backend, pool: Option<(u16, usize)>) -> Runtime {
    let mut b = Runtime::builder();
    b.worker_threads(1).backend(backend);
    if let Some((count, size)) = pool {
        b.buffer_pool(count, size);
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
        assert_eq!(held, 0, "a stalled reader holds {held} of 64 pool buffers");
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
/// of the pool (an eighth: 8 of the default 64 buffers of 64 KiB); past it the receive
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
            (64, 8),
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
