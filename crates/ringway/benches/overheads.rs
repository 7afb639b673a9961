//! The runtime's own overheads, measured with criterion:
//!
//! - `spawn`: spawn a task and await its handle;
//! - `timer`: a `timeout` around one yield (a timer registered, then removed);
//! - `nop`: one no-op operation's round trip through the driver's low-level face (submit
//!   with a token, one `turn`), per backend: the fixed cost of an operation;
//! - `send_zc`: bytes sent over loopback TCP with `SEND_ZC` on and off, per send size:
//!   the measurement behind `DriverConfig::send_zc_min`.
//!
//! Run: `cargo bench -p ringway --bench overheads` (add `-- nop` for one group).

// criterion_group! generates a public function without a doc comment.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ringway::driver::op::Nop;
use ringway::driver::{Driver, DriverConfig};
use ringway::net::{TcpListener, TcpStream};
use ringway::{Backend, Runtime};

fn runtime(backend: Backend) -> Runtime {
    Runtime::builder()
        .worker_threads(1)
        .backend(backend)
        .build()
        .expect("runtime")
}

fn spawn(c: &mut Criterion) {
    let mut g = c.benchmark_group("spawn");
    for backend in [Backend::Uring, Backend::Epoll] {
        let rt = runtime(backend);
        g.bench_function(format!("{backend:?}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let t = Instant::now();
                    for _ in 0..iters {
                        ringway::spawn(async { std::hint::black_box(1) })
                            .await
                            .unwrap();
                    }
                    t.elapsed()
                })
            })
        });
    }
    g.finish();
}

fn timer(c: &mut Criterion) {
    let mut g = c.benchmark_group("timer");
    for backend in [Backend::Uring, Backend::Epoll] {
        let rt = runtime(backend);
        g.bench_function(format!("{backend:?}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let t = Instant::now();
                    for _ in 0..iters {
                        let r = ringway::time::timeout(
                            Duration::from_secs(1),
                            ringway::runtime::yield_now(),
                        )
                        .await;
                        std::hint::black_box(r).unwrap();
                    }
                    t.elapsed()
                })
            })
        });
    }
    g.finish();
}

fn nop(c: &mut Criterion) {
    let mut g = c.benchmark_group("nop");
    for backend in [Backend::Uring, Backend::Epoll] {
        let mut driver = Driver::new(&DriverConfig {
            backend,
            ..DriverConfig::default()
        })
        .expect("driver");
        g.bench_function(format!("{backend:?}"), |b| {
            b.iter(|| {
                // SAFETY: a NOP carries no pointers.
                unsafe { driver.submit(Nop, 7, None) };
                let mut got = 0;
                while got == 0 {
                    driver
                        .turn(Some(Duration::ZERO), &mut |token, c, last| {
                            assert!(token == 7 && c.result == 0 && last);
                            got += 1;
                        })
                        .unwrap();
                }
            })
        });
    }
    g.finish();
}

/// Sends `total` bytes in `size`-byte writes from a client to a server that discards
/// them, on one core: the elapsed time is that core's CPU time for the transfer.
fn transfer(rt: &Runtime, size: usize, total: usize) -> Duration {
    rt.block_on(async move {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let sink = ringway::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut rx = s.recv_multishot();
            let mut n = 0;
            while let Some(Ok(b)) = rx.next().await {
                n += b.len();
            }
            n
        });
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut buf = vec![0xa5u8; size];
        let t = Instant::now();
        let mut sent = 0;
        while sent < total {
            let (r, b) = c.write_all(buf).await;
            r.unwrap();
            buf = b;
            sent += size;
        }
        drop(c);
        assert_eq!(sink.await.unwrap(), sent);
        t.elapsed()
    })
}

fn send_zc(c: &mut Criterion) {
    let mut g = c.benchmark_group("send_zc");
    g.sample_size(10);
    let total = 32 << 20;
    g.throughput(Throughput::Bytes(total as u64));
    for size in [16 << 10, 64 << 10, 256 << 10, 1 << 20] {
        for zc in [false, true] {
            let rt = Runtime::builder()
                .worker_threads(1)
                .backend(Backend::Uring)
                .send_zc(zc.then_some(1))
                .build()
                .expect("runtime");
            let name = if zc { "zc" } else { "copy" };
            g.bench_with_input(BenchmarkId::new(name, size), &size, |b, &size| {
                b.iter_custom(|iters| (0..iters).map(|_| transfer(&rt, size, total)).sum())
            });
        }
    }
    g.finish();
}

criterion_group!(benches, spawn, timer, nop, send_zc);
criterion_main!(benches);
