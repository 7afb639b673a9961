//! The runtime's cancellation suite, extended to the adapter: read, write and flush
//! futures over a `CompatStream` dropped at random points (before the first poll, after
//! a few polls and loop turns, under a tiny timeout) lose no byte and duplicate none;
//! streams dropped with a receive armed, a pool buffer lent and a send in flight leave
//! nothing behind (fds, pool buffers, operation slots, timers, tasks), on both backends.
//!
//! The tests count the process's open fds, so they run one at a time (`SERIAL`).

use std::future::Future;
use std::io::{Read, Write};
use std::pin::pin;
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringway::net::{TcpListener, TcpStream};
use ringway::runtime::{live_ops, pool_stats, task_count, yield_now};
use ringway::time::{pending_timers, sleep, timeout};
use ringway::{Backend, Runtime};
use ringway_compat::CompatStream;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

const ITERS: usize = 2000;

static SERIAL: Mutex<()> = Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
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
    dropped_reads_lose_nothing,
    dropped_writes_lose_nothing,
    dropped_streams_leave_nothing_behind,
);

/// Runs `body` on a fresh one-core runtime, then checks that everything it did is gone.
fn run<F, Fut>(backend: Backend, body: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fds_before = open_fds();
    {
        let rt = Runtime::builder()
            .worker_threads(1)
            .backend(backend)
            .build()
            .unwrap();
        assert_eq!(rt.backend().kind, backend);
        rt.block_on(async {
            let fds = open_fds();
            assert_eq!(live_ops(), 0);
            body().await;
            settle(fds).await;
        });
    }
    assert_eq!(open_fds(), fds_before, "the runtime left fds open");
}

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

/// Polls `fut` up to `polls` times with a loop turn between polls, then drops it;
/// `event` runs once before poll number `at`. The output if it finished.
async fn poll_n<F: Future>(
    fut: F,
    polls: usize,
    at: usize,
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
        yield_now().await;
    }
    None
}

/// Runs `fut` to a random drop point: 0 to 4 polls, or a timeout of up to 300 µs.
async fn drive<F: Future>(rng: &mut StdRng, fut: F, event: impl FnOnce()) -> Option<F::Output> {
    if rng.random_ratio(3, 4) {
        let polls = rng.random_range(0..=4);
        let at = rng.random_range(0..=polls);
        poll_n(fut, polls, at, event).await
    } else {
        event();
        let d = Duration::from_micros(rng.random_range(0..300));
        timeout(d, fut).await.ok()
    }
}

async fn tcp_pair() -> (TcpStream, std::net::TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (stream, _) = listener.accept().await.unwrap();
    (stream, peer)
}

/// Random bytes arrive at random moments while reads (plain ones, and buffered ones
/// that borrow the pool buffer) are dropped at random points: what the completed reads
/// returned, followed by the rest, is exactly what was sent.
async fn dropped_reads_lose_nothing() {
    let mut rng = StdRng::seed_from_u64(0xc0_0001);
    let (stream, mut peer) = tcp_pair().await;
    let mut stream = CompatStream::new(stream);
    let mut sent = Vec::new();
    let mut got = Vec::new();
    let mut completed = 0;
    for _ in 0..ITERS {
        let send: Vec<u8> = (0..rng.random_range(0..=64))
            .map(|_| rng.random())
            .collect();
        // The event may not run (the read finishes first): record only what went.
        let went = std::cell::Cell::new(false);
        let event = || {
            peer.write_all(&send).unwrap();
            went.set(true);
        };
        let mut buf = vec![0u8; rng.random_range(1..=512)];
        // `read` and `fill_buf` are cancel-safe by tokio's contract (`read_exact` is
        // not: the bytes it took sit in the caller's buffer).
        match rng.random_range(0..2) {
            0 => {
                if let Some(r) = drive(&mut rng, stream.read(&mut buf), event).await {
                    let n = r.unwrap();
                    assert!(n > 0);
                    got.extend_from_slice(&buf[..n]);
                    completed += 1;
                }
            }
            _ => {
                if let Some(r) = drive(&mut rng, stream.fill_buf(), event).await {
                    let lent = r.unwrap().to_vec();
                    let take = rng.random_range(0..=lent.len());
                    got.extend_from_slice(&lent[..take]);
                    stream.consume(take);
                    completed += 1;
                }
            }
        }
        if went.get() {
            sent.extend_from_slice(&send);
        }
        assert_eq!(
            got[..],
            sent[..got.len()],
            "a read returned the wrong bytes"
        );
    }
    assert!(completed > 0);
    drop(peer);
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.unwrap();
    got.extend_from_slice(&rest);
    assert_eq!(got.len(), sent.len(), "bytes lost or duplicated");
    assert!(got == sent, "bytes reordered or corrupted");
}

/// Writes and flushes dropped at random points while a peer thread reads slowly: every
/// byte a write reported is delivered once, in order, and nothing else is.
async fn dropped_writes_lose_nothing() {
    let mut rng = StdRng::seed_from_u64(0xc0_0002);
    let (stream, mut peer) = tcp_pair().await;
    peer.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
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
    let mut stream = CompatStream::new(stream);
    let mut block = vec![0u8; 512 * 1024];
    rng.fill(&mut block[..]);
    let mut accepted = Vec::new();
    let mut dropped = 0;
    for _ in 0..ITERS {
        let len = if rng.random_ratio(1, 8) {
            rng.random_range(64 * 1024..=400 * 1024)
        } else {
            rng.random_range(1..=8 * 1024)
        };
        let off = rng.random_range(0..=block.len() - len);
        let data = &block[off..off + len];
        match drive(&mut rng, stream.write(data), || {}).await {
            Some(r) => {
                let n = r.unwrap();
                assert!(n > 0 && n <= len);
                accepted.extend_from_slice(&data[..n]);
            }
            None => dropped += 1,
        }
        if rng.random_ratio(1, 4) && drive(&mut rng, stream.flush(), || {}).await.is_none() {
            dropped += 1;
        }
    }
    assert!(
        dropped > 0,
        "no write was ever dropped: the test exercised nothing"
    );
    stream.shutdown().await.unwrap();
    drop(stream);
    let all = reader.await.unwrap();
    assert_eq!(all.len(), accepted.len(), "bytes lost or duplicated");
    assert!(all == accepted, "bytes reordered or corrupted");
}

/// Streams dropped at random points of their life: with the receive armed or not, a
/// pool buffer lent or not, sends in flight to a peer that does not read (so they stay
/// in flight), gathered bytes behind them. The run's `settle` checks nothing is left.
async fn dropped_streams_leave_nothing_behind() {
    let mut rng = StdRng::seed_from_u64(0xc0_0003);
    let big = vec![0x77u8; 300 * 1024];
    for _ in 0..ITERS / 10 {
        let (stream, mut peer) = tcp_pair().await;
        let mut stream = CompatStream::new(stream);
        if rng.random_bool(0.5) {
            peer.write_all(&vec![1u8; rng.random_range(1..20_000)])
                .unwrap();
        }
        if rng.random_bool(0.5) {
            let mut b = [0u8; 10];
            let _ = drive(&mut rng, stream.read(&mut b), || {}).await;
        }
        for _ in 0..rng.random_range(0..4) {
            let n = rng.random_range(1..=big.len());
            let _ = drive(&mut rng, stream.write_all(&big[..n]), || {}).await;
        }
        if rng.random_bool(0.3) {
            let _ = drive(&mut rng, stream.flush(), || {}).await;
        }
        if rng.random_bool(0.5) {
            drop(stream);
            drop(peer);
        } else {
            drop(peer);
            yield_now().await;
            drop(stream);
        }
    }
}
