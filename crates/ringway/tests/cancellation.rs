//! Cancellation is correct by construction.
//!
//! Every test here starts operations and drops their futures at a randomised point
//! (before the first poll, after a few polls and loop turns, or under a tiny timeout),
//! thousands of times, on both backends. Afterwards the process must be back where it
//! started: the same open fds (an accept that completed after its future was dropped
//! must have been closed by the driver), no pool buffer in use, no operation slot taken,
//! no timer registered, no task left.
//!
//! The tests of `cancel()` check the other half of the contract: a cancelled operation
//! hands its buffer back, and what it did before the cancel won is reported, so not a
//! byte is lost or duplicated.
//!
//! The tests count the process's open fds, so they run one at a time (`SERIAL`).

use std::future::Future;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringway::net::{TcpListener, TcpStream};
use ringway::runtime::{
    current_backend, driver_stats, live_ops, pool_stats, task_count, yield_now,
};
use ringway::time::{pending_timers, sleep, timeout};
use ringway::{Backend, Runtime};

/// Iterations per operation kind.
const ITERS: usize = 3000;

/// Sends of at least this many bytes use SEND_ZC on io_uring in these tests.
const ZC_MIN: usize = 64 * 1024;

/// The tests count the fds of the whole process: they must not overlap.
static SERIAL: Mutex<()> = Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("read /proc/self/fd")
        .count()
}

/// Generates `name::uring` and `name::epoll`, each running `super::name` on a fresh
/// one-thread runtime with that backend.
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
    drop_read,
    drop_write,
    drop_accept,
    drop_connect,
    drop_sleep,
    drop_recv_multishot,
    drop_incoming,
    dropped_before_submission_has_no_effect,
    cancel_hands_the_buffer_back,
    cancel_read_loses_nothing,
    cancel_write_loses_nothing,
);

/// Runs `body` on a fresh runtime and checks that nothing it did outlives it: inside the
/// runtime (fds, pool buffers, op slots, timers, tasks back to their starting values
/// once the loop has turned), and after the runtime is dropped (its own fds closed).
fn run<F, Fut>(backend: Backend, body: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fds_before_runtime = open_fds();
    {
        let rt = Runtime::builder()
            .worker_threads(1)
            .backend(backend)
            // Sends from 64 KiB up go zero-copy on io_uring (off by default): their
            // buffers are held until the kernel's notification, cancelled or not.
            .send_zc(Some(ZC_MIN))
            .build()
            .expect("build runtime");
        assert_eq!(rt.backend().kind, backend);
        rt.block_on(async {
            let fds = open_fds();
            // The io_uring driver's eventfd read is internal: it takes no slot.
            assert_eq!(live_ops(), 0, "a fresh driver holds no operation slot");
            assert_eq!(pool_stats().in_use, 0);
            assert_eq!(pending_timers(), 0);
            body().await;
            settle(fds).await;
        });
    }
    assert_eq!(
        open_fds(),
        fds_before_runtime,
        "dropping the runtime left fds open"
    );
}

/// Lets the loop turn until every counter is back at rest (bounded: the final CQEs of
/// cancelled operations arrive within a few turns), then asserts that they are.
async fn settle(fds: usize) {
    let at_rest = || {
        open_fds() == fds
            && pool_stats().in_use == 0
            && live_ops() == 0
            && pending_timers() == 0
            && task_count() == 0
    };
    for _ in 0..250 {
        sleep(Duration::from_millis(20)).await;
        if at_rest() {
            break;
        }
    }
    assert_eq!(open_fds(), fds, "fds leaked");
    assert_eq!(pool_stats().in_use, 0, "pool buffers leaked");
    assert_eq!(live_ops(), 0, "operation slots leaked");
    assert_eq!(pending_timers(), 0, "timers leaked");
    assert_eq!(task_count(), 0, "tasks leaked");
}

/// Polls `fut` at most `polls` times, with one loop turn between polls and `turns_after`
/// turns after the last one, then drops it. With no turn after the last poll an
/// operation is dropped after it was queued for submission but before the kernel saw
/// it; with turns, its completions may be waiting, unread, in its slot. `event` runs
/// once, just before poll number `at` (`at == polls`: after the last poll, before the
/// turns). Returns the output if the future finished.
async fn poll_n<F: Future>(
    fut: F,
    polls: usize,
    at: usize,
    turns_after: usize,
    event: impl FnOnce(),
) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut event = Some(event);
    for i in 0..=polls {
        if i == at {
            if let Some(e) = event.take() {
                e();
            }
        }
        if i == polls {
            break;
        }
        let r = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
        if let Poll::Ready(v) = r {
            return Some(v);
        }
        if i + 1 < polls {
            yield_now().await;
        }
    }
    if polls > 0 {
        for _ in 0..turns_after {
            yield_now().await;
        }
    }
    None
}

/// Runs `fut` to a random drop point: 0 to 4 polls (with `event` at a random one of
/// them), or a timeout of 0 to 300 µs (with `event` first).
async fn drive<F: Future>(rng: &mut StdRng, fut: F, event: impl FnOnce()) -> Option<F::Output> {
    if rng.random_ratio(3, 4) {
        let polls = rng.random_range(0..=4);
        let at = rng.random_range(0..=polls);
        let turns_after = rng.random_range(0..=2);
        poll_n(fut, polls, at, turns_after, event).await
    } else {
        event();
        let d = Duration::from_micros(rng.random_range(0..300));
        timeout(d, fut).await.ok()
    }
}

/// Polls `fut` once; its output if it finished.
async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Option<F::Output> {
    match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *fut).poll(cx))).await {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// A ringway stream connected to a std stream (blocking, on the side).
async fn std_pair(listener: &TcpListener) -> (TcpStream, std::net::TcpStream) {
    let addr = listener.local_addr().unwrap();
    // On loopback the handshake completes in the kernel before the accept.
    let peer = std::net::TcpStream::connect(addr).unwrap();
    let (stream, from) = listener.accept().await.unwrap();
    assert_eq!(from, peer.local_addr().unwrap());
    (stream, peer)
}

fn listen() -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    (l, a)
}

// ---- drop at a random point ------------------------------------------------------------

async fn drop_read() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0001);
    let (listener, _) = listen();
    let (mut stream, mut peer) = std_pair(&listener).await;
    let mut completed = 0;
    for _ in 0..ITERS {
        let cap = rng.random_range(1..=16 * 1024);
        let send = rng
            .random_ratio(1, 3)
            .then(|| rng.random_range(1..=64usize));
        let fut = stream.read(vec![0u8; cap]);
        let out = drive(&mut rng, fut, || {
            if let Some(n) = send {
                peer.write_all(&vec![0xab; n]).unwrap();
            }
        })
        .await;
        if let Some((res, buf)) = out {
            let n = res.expect("read");
            assert!(n > 0 && n <= cap);
            assert_eq!(buf.len(), cap);
            assert!(
                buf[..n].iter().all(|&b| b == 0xab),
                "read returned foreign bytes"
            );
            completed += 1;
        }
    }
    assert!(
        completed > 0,
        "no read ever completed: the test exercised nothing"
    );
}

async fn drop_write() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0002);
    let (listener, _) = listen();
    // The peer never reads: once the socket buffers are full every write waits, and
    // large ones (io_uring: SEND_ZC above 64 KiB) are dropped in flight.
    let (mut stream, peer) = std_pair(&listener).await;
    let mut completed = 0;
    for _ in 0..ITERS {
        let len = if rng.random_bool(0.5) {
            rng.random_range(ZC_MIN..=256 * 1024)
        } else {
            rng.random_range(1..=16 * 1024)
        };
        let fut = stream.write(vec![0x5a; len]);
        if let Some((res, buf)) = drive(&mut rng, fut, || {}).await {
            let n = res.expect("write");
            assert!(n > 0 && n <= len);
            assert_eq!(buf.len(), len);
            completed += 1;
        }
    }
    assert!(completed > 0);
    // The reader goes first (with unread bytes: a reset), so queued zero-copy sends are
    // released without waiting for the other side.
    drop(peer);
    drop(stream);
}

async fn drop_accept() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0003);
    let mut accepted = 0;
    let mut clients = Vec::new();
    for _ in 0..ITERS / 100 {
        // A fresh listener every 100 iterations keeps the backlog bounded: connections
        // no accept took are reset when it closes.
        let (listener, addr) = listen();
        for _ in 0..100 {
            let connect = rng.random_ratio(3, 4);
            let out = drive(&mut rng, listener.accept(), || {
                if connect {
                    clients.push(std::net::TcpStream::connect(addr).unwrap());
                }
            })
            .await;
            if let Some(res) = out {
                let (s, from) = res.expect("accept");
                assert_eq!(s.peer_addr().unwrap(), from);
                accepted += 1;
            }
        }
        drop(listener);
        clients.clear();
    }
    assert!(accepted > 0);
}

async fn drop_connect() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0004);
    let (listener, addr) = listen();
    // Accepts and closes everything, so the backlog never fills.
    let acceptor = ringway::spawn(async move {
        let mut incoming = listener.incoming();
        while let Some(s) = incoming.next().await {
            drop(s.expect("accept"));
        }
    });
    let mut connected = 0;
    for _ in 0..ITERS {
        if let Some(res) = drive(&mut rng, TcpStream::connect(addr), || {}).await {
            let s = res.expect("connect");
            assert_eq!(s.peer_addr().unwrap(), addr);
            connected += 1;
        }
    }
    assert!(connected > 0);
    drop(acceptor);
}

async fn drop_sleep() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0005);
    let mut fired = 0;
    for _ in 0..ITERS {
        let d = Duration::from_micros(rng.random_range(0..2000));
        if rng.random_bool(0.5) {
            if drive(&mut rng, sleep(d), || {}).await.is_some() {
                fired += 1;
            }
        } else {
            // A timeout whose inner future is itself a timer: both must go.
            let inner = timeout(Duration::from_secs(3600), sleep(d));
            if let Some(r) = drive(&mut rng, inner, || {}).await {
                assert!(r.is_ok(), "an hour cannot have passed");
                fired += 1;
            }
        }
    }
    assert!(fired > 0);
}

async fn drop_recv_multishot() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0006);
    let (listener, addr) = listen();
    let mut rx_side = TcpStream::connect(addr).await.unwrap();
    let (mut tx_side, _) = listener.accept().await.unwrap();
    // Keeps the receiver's socket full: the multishot receive always has data, and
    // keeps filling pool buffers while no one polls it.
    let writer = ringway::spawn(async move {
        let chunk = vec![0xc3u8; 16 * 1024];
        loop {
            let (r, _) = tx_side.write_all(chunk.clone()).await;
            if r.is_err() {
                break;
            }
        }
    });
    let mut chunks = 0;
    for _ in 0..ITERS {
        let mut rx = rx_side.recv_multishot();
        let mut held = Vec::new();
        for _ in 0..rng.random_range(0..4) {
            let b = rx.next().await.expect("stream ended").expect("receive");
            assert!(!b.is_empty() && b.iter().all(|&x| x == 0xc3));
            chunks += 1;
            if rng.random_bool(0.5) {
                held.push(b); // outlives the stream
            }
        }
        let polls = rng.random_range(0..=3);
        if let Some(Some(r)) = poll_n(rx.next(), polls, 0, rng.random_range(0..=2), || {}).await {
            r.expect("receive");
        }
        // Sometimes the buffers go back before the stream, sometimes after.
        if rng.random_bool(0.5) {
            drop(rx);
            drop(held);
        } else {
            drop(held);
            drop(rx);
        }
    }
    assert!(chunks > 0);
    drop(writer);
}

async fn drop_incoming() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0007);
    let mut clients = Vec::new();
    let mut accepted = 0;
    for _ in 0..ITERS / 100 {
        let (listener, addr) = listen();
        for _ in 0..100 {
            let mut incoming = listener.incoming();
            // A few connections that the stream takes...
            for _ in 0..rng.random_range(0..3) {
                clients.push(std::net::TcpStream::connect(addr).unwrap());
                incoming
                    .next()
                    .await
                    .expect("incoming ended")
                    .expect("accept");
                accepted += 1;
            }
            // ...and some that arrive around the drop: taken by the stream, queued in
            // its slot, or accepted by the kernel after the drop (closed by the driver).
            let late = rng.random_range(0..3);
            let polls = rng.random_range(0..=3);
            let at = rng.random_range(0..=polls);
            let turns_after = rng.random_range(0..=2);
            let out = poll_n(incoming.next(), polls, at, turns_after, || {
                for _ in 0..late {
                    clients.push(std::net::TcpStream::connect(addr).unwrap());
                }
            })
            .await;
            if let Some(Some(r)) = out {
                r.expect("accept");
                accepted += 1;
            }
            drop(incoming);
            // One turn, so the cancel reaches the kernel before the next iteration's
            // clients connect (a multishot accept still armed in the kernel could take
            // them, and the driver would close them).
            yield_now().await;
        }
        drop(listener);
        clients.clear();
    }
    assert!(accepted > 0);
}

/// An operation polled once and dropped before the loop turned (so before the kernel
/// saw it, on io_uring) must have no effect: it must not take the connection waiting in
/// the backlog, consume the bytes waiting in the socket, or send its own. (On epoll the
/// first poll may finish it at once: then its output says what it did.)
async fn dropped_before_submission_has_no_effect() {
    // Only a guard against a hang: the operations below finish at once when correct.
    const GUARD: Duration = Duration::from_secs(10);
    let (listener, addr) = listen();
    for i in 0..50u8 {
        // accept
        let client = std::net::TcpStream::connect(addr).unwrap();
        let early = poll_n(listener.accept(), 1, 0, 0, || {}).await;
        let (s, from) = match early {
            Some(r) => r.unwrap(),
            None => timeout(GUARD, listener.accept())
                .await
                .expect("the connection was taken by a dropped accept")
                .unwrap(),
        };
        assert_eq!(from, client.local_addr().unwrap());
        drop(s);

        // read
        let (mut stream, mut peer) = std_pair(&listener).await;
        peer.write_all(&[i; 3]).unwrap();
        let got = match poll_n(stream.read(vec![0u8; 16]), 1, 0, 0, || {}).await {
            Some((r, buf)) => buf[..r.unwrap()].to_vec(),
            None => {
                let (r, buf) = timeout(GUARD, stream.read(vec![0u8; 16]))
                    .await
                    .expect("the bytes were consumed by a dropped read");
                buf[..r.unwrap()].to_vec()
            }
        };
        assert_eq!(got, [i; 3]);

        // write
        let mut expect = Vec::new();
        if let Some((r, _)) = poll_n(stream.write(vec![0xee; 3]), 1, 0, 0, || {}).await {
            assert_eq!(r.unwrap(), 3);
            expect.extend_from_slice(&[0xee; 3]);
        }
        let (r, _) = stream.write_all(vec![i; 5]).await;
        r.unwrap();
        expect.extend_from_slice(&[i; 5]);
        // Closed through the ring with the next turn: let it come before blocking.
        drop(stream);
        yield_now().await;
        let mut all = Vec::new();
        peer.set_read_timeout(Some(GUARD)).unwrap();
        peer.read_to_end(&mut all).unwrap();
        assert_eq!(all, expect, "a dropped write sent its bytes");
    }
}

// ---- cancel(): the buffer comes back, nothing is lost ----------------------------------

fn is_canceled(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ECANCELED)
}

async fn cancel_hands_the_buffer_back() {
    const N: usize = 8192;
    let (listener, _) = listen();
    let (mut stream, mut peer) = std_pair(&listener).await;

    // Submitted, then cancelled: no data can arrive, so the cancel wins. The sleep lets
    // a loop turn pass between the two, so the read is in the kernel (io_uring) or
    // parked on its fd (epoll) when the cancel comes: the kernel-side cancel is what
    // is exercised, not the cancel of an op never handed over.
    let mut f = stream.read(vec![0u8; N]);
    assert!(
        poll_once(&mut f).await.is_none(),
        "a read of an idle socket finished"
    );
    sleep(Duration::from_millis(5)).await;
    let before = driver_stats();
    f.cancel();
    let (res, buf) = f.await;
    let e = res.expect_err("the read was cancelled");
    assert!(is_canceled(&e), "expected ECANCELED, got {e:?}");
    if current_backend().kind == Backend::Uring {
        // The kernel's answer: the read's own CQE and the ASYNC_CANCEL's.
        let cqes = driver_stats().completions - before.completions;
        assert!(
            cqes >= 2,
            "the cancel did not go through the kernel ({cqes} CQEs)"
        );
    }
    assert_eq!((buf.len(), buf.capacity()), (N, N));

    // Cancelled before the first poll: never submitted.
    let mut f = stream.read(vec![0u8; N]);
    f.cancel();
    let (res, buf) = f.await;
    assert!(is_canceled(&res.expect_err("cancelled before start")));
    assert_eq!((buf.len(), buf.capacity()), (N, N));
    assert_eq!(live_ops(), 0);

    // Data already waiting: the read either wins (and reports the bytes) or is
    // cancelled (and the bytes are still in the socket).
    peer.write_all(b"hello").unwrap();
    let mut f = stream.read(vec![0u8; N]);
    let early = poll_once(&mut f).await;
    let (res, buf) = match early {
        Some(out) => out,
        None => {
            f.cancel();
            f.await
        }
    };
    assert_eq!(buf.capacity(), N);
    let got = match res {
        Ok(n) => buf[..n].to_vec(),
        Err(e) => {
            assert!(is_canceled(&e), "{e:?}");
            let (res, buf) = stream.read(vec![0u8; N]).await;
            buf[..res.unwrap()].to_vec()
        }
    };
    assert_eq!(got, b"hello");

    // A write that has to wait (the peer does not read): cancel gives the buffer back
    // with ECANCELED, or with the count of the bytes that went before the cancel won.
    // (Kept under the SEND_ZC size: a zero-copy send can only hand its buffer back once
    // the peer has acknowledged the bytes, and this peer reads only at the end.)
    let big = 32 * 1024;
    let mut went = 0;
    let mut f = stream.write(vec![1u8; big]);
    loop {
        // Fill the socket until a write stays pending across a loop turn.
        let mut out = poll_once(&mut f).await;
        if out.is_none() {
            yield_now().await;
            out = poll_once(&mut f).await;
        }
        match out {
            Some((res, buf)) => {
                went += res.expect("write");
                f = stream.write(buf);
            }
            None => break,
        }
    }
    f.cancel();
    let (res, buf) = f.await;
    match res {
        Ok(n) => went += n,
        Err(e) => assert!(is_canceled(&e), "{e:?}"),
    }
    assert_eq!((buf.len(), buf.capacity()), (big, big));

    // The peer gets exactly the bytes the writes reported (the close goes through the
    // ring with the next turn: let it come before blocking).
    drop(stream);
    yield_now().await;
    let mut all = Vec::new();
    peer.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    peer.read_to_end(&mut all).unwrap();
    assert_eq!(all.len(), went);
    assert!(all.iter().all(|&b| b == 1));
}

/// Random bytes the peer sends at random moments while reads are polled a random
/// number of times and then cancelled: every read's `Ok(n)` must be exactly the next
/// `n` bytes, and together they must be everything that was sent.
async fn cancel_read_loses_nothing() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0008);
    let (listener, _) = listen();
    let (mut stream, mut peer) = std_pair(&listener).await;
    let mut sent = Vec::new();
    let mut got = Vec::new();
    let mut cancelled = 0;
    for _ in 0..ITERS {
        let cap = rng.random_range(1..=256);
        let mut f = stream.read(vec![0u8; cap]);
        if rng.random_ratio(1, 8) {
            f.cancel(); // before the first poll
        }
        let send: Vec<u8> = (0..rng.random_range(0..=48))
            .map(|_| rng.random())
            .collect();
        let polls = rng.random_range(0..=3);
        let at = rng.random_range(0..=polls);
        let mut out = None;
        for i in 0..=polls {
            if i == at && !send.is_empty() {
                peer.write_all(&send).unwrap();
                sent.extend_from_slice(&send);
            }
            if i == polls {
                break;
            }
            if let Some(o) = poll_once(&mut f).await {
                out = Some(o);
                break;
            }
            yield_now().await;
        }
        let (res, buf) = match out {
            Some(o) => o,
            None => {
                f.cancel();
                f.await
            }
        };
        assert_eq!((buf.len(), buf.capacity()), (cap, cap));
        match res {
            Ok(n) => {
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
                assert_eq!(
                    got[..],
                    sent[..got.len()],
                    "a read returned the wrong bytes"
                );
            }
            Err(e) => {
                assert!(is_canceled(&e), "{e:?}");
                cancelled += 1;
            }
        }
    }
    assert!(cancelled > 0);
    drop(peer);
    loop {
        let (res, buf) = stream.read(vec![0u8; 4096]).await;
        match res.unwrap() {
            0 => break,
            n => got.extend_from_slice(&buf[..n]),
        }
    }
    assert_eq!(got.len(), sent.len(), "bytes lost or duplicated");
    assert!(got == sent, "bytes reordered or corrupted");
}

/// The mirror image: writes of random bytes cancelled at random points while a peer
/// thread reads slowly. Whatever `Ok(n)` a write reports is what went; a cancelled write
/// sent nothing; the peer must read exactly the concatenation.
async fn cancel_write_loses_nothing() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0009);
    let (listener, _) = listen();
    let (mut stream, mut peer) = std_pair(&listener).await;
    peer.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    // The peer thread reads in small pieces, so that writes often have to wait.
    let reader = ringway::spawn_blocking(move || {
        let mut all = Vec::new();
        let mut buf = vec![0u8; 8 * 1024];
        loop {
            match peer.read(&mut buf) {
                Ok(0) => return all,
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(e) => panic!("peer read: {e}"),
            }
        }
    });
    // Writes are random slices of one random block (cheaper than fresh random bytes).
    let mut block = vec![0u8; 256 * 1024];
    rng.fill(&mut block[..]);
    let mut sent = Vec::new();
    let mut cancelled = 0;
    for _ in 0..ITERS {
        let len = if rng.random_ratio(1, 8) {
            rng.random_range(ZC_MIN..=160 * 1024)
        } else {
            rng.random_range(1..=8 * 1024)
        };
        let off = rng.random_range(0..=block.len() - len);
        let mut f = stream.write(block[off..off + len].to_vec());
        if rng.random_ratio(1, 8) {
            f.cancel();
        }
        let polls = rng.random_range(0..=3);
        let mut out = None;
        for _ in 0..polls {
            if let Some(o) = poll_once(&mut f).await {
                out = Some(o);
                break;
            }
            yield_now().await;
        }
        let (res, buf) = match out {
            Some(o) => o,
            None => {
                f.cancel();
                f.await
            }
        };
        assert_eq!(buf.len(), len);
        match res {
            Ok(n) => {
                assert!(n > 0 && n <= len);
                sent.extend_from_slice(&buf[..n]);
            }
            Err(e) => {
                assert!(is_canceled(&e), "{e:?}");
                cancelled += 1;
            }
        }
    }
    assert!(cancelled > 0);
    drop(stream);
    let all = reader.await.expect("peer thread");
    assert_eq!(all.len(), sent.len(), "bytes lost or duplicated");
    assert!(all == sent, "bytes reordered or corrupted");
}
