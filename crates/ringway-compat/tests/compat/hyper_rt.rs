//! hyper's runtime traits on ringway, on both backends: the executor runs `!Send`
//! futures on the current core; the timer drives hyper's header-read timeout (and is
//! reset in place); futures-io's traits carry bytes like tokio's.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hyper::rt::{Executor, Timer};
use ringway::net::{TcpStream, UnixStream};
use ringway::time::pending_timers;
use ringway_compat::{CompatStream, LocalExecutor, RingwayTimer, ServeOptions, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[ringway::test(both)]
async fn local_executor_runs_non_send_futures_on_this_core() {
    let ran = Rc::new(Cell::new(0));
    for _ in 0..10 {
        let ran = ran.clone();
        let core = ringway::runtime::current_core();
        LocalExecutor.execute(async move {
            ringway::runtime::yield_now().await;
            assert_eq!(ringway::runtime::current_core(), core);
            ran.set(ran.get() + 1);
        });
    }
    for _ in 0..100 {
        if ran.get() == 10 {
            break;
        }
        ringway::runtime::yield_now().await;
    }
    assert_eq!(ran.get(), 10);
}

#[ringway::test(both)]
async fn timer_sleeps_resets_and_cleans_up() {
    let timer = RingwayTimer;
    let start = Instant::now();
    timer.sleep(Duration::from_millis(30)).await;
    assert!(start.elapsed() >= Duration::from_millis(30));

    // Reset moves the deadline of the same sleep (no new one), earlier or later.
    let mut s = timer.sleep(Duration::from_secs(3600));
    let polled = std::future::poll_fn(|cx| std::task::Poll::Ready(s.as_mut().poll(cx))).await;
    assert!(polled.is_pending());
    assert_eq!(pending_timers(), 1);
    let start = Instant::now();
    timer.reset(&mut s, Instant::now() + Duration::from_millis(20));
    s.as_mut().await;
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert!(start.elapsed() < Duration::from_secs(60));
    drop(s);
    assert_eq!(pending_timers(), 0, "a dropped sleep leaves no timer");
}

/// hyper asks the timer for the time once per request head: that is ringway's turn
/// clock, one reading per loop turn, never ahead of the real clock.
#[ringway::test(both)]
async fn timer_now_is_the_turn_clock() {
    let timer = RingwayTimer;
    let first = timer.now();
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(timer.now(), first, "one reading per turn");
    assert_eq!(ringway::time::now(), first);
    assert!(first + Duration::from_millis(2) <= Instant::now());
    ringway::runtime::yield_now().await;
    assert!(
        timer.now() >= first + Duration::from_millis(2),
        "the next turn reads the clock again"
    );
}

/// hyper's header-read timeout runs on `RingwayTimer`: a client that sends half a
/// request head and stalls is closed after it, one that completes its head in time is
/// served.
#[test]
fn header_read_timeout_closes_a_stalled_client() {
    for backend in [ringway::Backend::Uring, ringway::Backend::Epoll] {
        let rt = ringway::Runtime::builder()
            .worker_threads(1)
            .backend(backend)
            .build()
            .unwrap();
        let mut options = ServeOptions::default();
        options
            .http1
            .header_read_timeout(Duration::from_millis(150));
        let server = Server::http1(&rt.handle(), "127.0.0.1:0", options, || {
            hyper::service::service_fn(|_req| async {
                Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
            })
        })
        .unwrap();
        let addr = server.local_addr();
        let shutdown = server.shutdown_handle();
        let report = rt.block_on(async move {
            let mut s = CompatStream::new(TcpStream::connect(addr).await.unwrap());
            s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n").await.unwrap();
            s.flush().await.unwrap();
            let start = Instant::now();
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            let waited = start.elapsed();
            assert!(waited >= Duration::from_millis(140), "{waited:?}");
            assert!(waited < Duration::from_secs(10), "{waited:?}");
            // hyper answers a header timeout with a 408 before closing.
            let text = String::from_utf8_lossy(&out);
            assert!(out.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");

            let mut s = CompatStream::new(TcpStream::connect(addr).await.unwrap());
            s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                .await
                .unwrap();
            s.flush().await.unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            assert!(String::from_utf8_lossy(&out).ends_with("\r\n\r\nok"));
            shutdown.shutdown();
            server.wait().await.unwrap()
        });
        assert_eq!(report.connections, 2, "{backend:?}");
        assert_eq!(report.failed, 1, "the stalled connection ended in error");
    }
}

/// `Server` shares its port among its own cores (SO_REUSEPORT), never with a listener
/// that did not ask to share it.
#[test]
fn a_port_held_by_another_listener_is_refused() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap();
    let rt = ringway::Runtime::builder()
        .worker_threads(1)
        .build()
        .unwrap();
    let err = Server::http1(&rt.handle(), addr, ServeOptions::default(), || {
        hyper::service::service_fn(|_req| async {
            Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
        })
    })
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

per_backend!(a_port_held_by_another_server_is_refused);

/// Two `Server`s of one user on one port: both ask for `SO_REUSEPORT`, which the kernel
/// would grant, and then split the port's connections between them. The second is
/// refused (`AddrInUse`, a message that says why); the first serves every connection.
fn a_port_held_by_another_server_is_refused(backend: ringway::Backend) {
    let rt = ringway::Runtime::builder()
        .worker_threads(2)
        .backend(backend)
        .build()
        .unwrap();
    let hello = || {
        hyper::service::service_fn(|_req| async {
            Ok::<_, std::convert::Infallible>(http::Response::new("first".to_string()))
        })
    };
    let first = Server::http1(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), hello).unwrap();
    let addr = first.local_addr();
    let err = Server::http1(&rt.handle(), addr, ServeOptions::default(), hello).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("cannot bind {addr}")), "{text}");
    assert!(text.contains("another socket listens on"), "{text}");
    let stop = first.shutdown_handle();
    let report = rt.block_on(async move {
        for _ in 0..16 {
            let mut c = crate::common::client(addr).await;
            let r = crate::common::fetch(&mut c, crate::common::get("/")).await;
            assert_eq!(r.body(), "first");
        }
        stop.shutdown();
        first.wait().await.unwrap()
    });
    assert_eq!(
        report.connections, 16,
        "every connection reached the first server"
    );
}

#[cfg(feature = "futures-io")]
#[ringway::test(both)]
async fn futures_io_traits_carry_bytes() {
    let (a, b) = UnixStream::pair().unwrap();
    let (mut a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let expect = data.clone();
    let reader = ringway::spawn(async move {
        let mut first = String::new();
        futures_util::io::AsyncBufReadExt::read_line(&mut b, &mut first)
            .await
            .unwrap();
        let mut rest = Vec::new();
        futures_util::io::AsyncReadExt::read_to_end(&mut b, &mut rest)
            .await
            .unwrap();
        (first, rest)
    });
    futures_util::io::AsyncWriteExt::write_all(&mut a, b"header\n")
        .await
        .unwrap();
    futures_util::io::AsyncWriteExt::write_all(&mut a, &data)
        .await
        .unwrap();
    futures_util::io::AsyncWriteExt::close(&mut a)
        .await
        .unwrap();
    let (first, rest) = reader.await.unwrap();
    assert_eq!(first, "header\n");
    assert!(rest == expect);
}
