//! hyper's upgrades under `Server`, and `CoreBound`, the `Send` stream they need, on both
//! backends: an upgraded connection carries bytes both ways (including those the client
//! sent right behind its request); a `CoreBound` polled on another thread fails without
//! touching the stream, which still works back home; one dropped on another thread is
//! sent home and closed there.

use std::convert::Infallible;
use std::io::{Read, Write};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::service::service_fn;
use ringway::net::TcpStream;
use ringway::{Backend, Runtime};
use ringway_compat::{CompatStream, CoreBound, ServeOptions, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

per_backend!(an_upgraded_connection_echoes_both_ways);

/// Answers `Upgrade: echo` with 101, then echoes on the upgraded stream, from a task on
/// this core (the stream is a `CoreBound` inside hyper's `Upgraded`).
async fn upgrade_to_echo(mut req: Request<Incoming>) -> Result<Response<Empty<Bytes>>, Infallible> {
    if req
        .headers()
        .get(http::header::UPGRADE)
        .map(|v| v.as_bytes())
        != Some(b"echo")
    {
        let mut r = Response::new(Empty::new());
        *r.status_mut() = StatusCode::BAD_REQUEST;
        return Ok(r);
    }
    let on_upgrade = hyper::upgrade::on(&mut req);
    ringway::spawn(async move {
        let upgraded = on_upgrade.await.expect("upgrade");
        let mut io = hyper_util::rt::TokioIo::new(upgraded);
        let mut buf = vec![0u8; 4096];
        loop {
            let n = io.read(&mut buf).await.expect("read upgraded");
            if n == 0 {
                break;
            }
            io.write_all(&buf[..n]).await.expect("write upgraded");
            io.flush().await.expect("flush upgraded");
        }
    })
    .detach();
    let mut r = Response::new(Empty::new());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    r.headers_mut()
        .insert(http::header::UPGRADE, "echo".parse().unwrap());
    r.headers_mut()
        .insert(http::header::CONNECTION, "upgrade".parse().unwrap());
    Ok(r)
}

fn an_upgraded_connection_echoes_both_ways(backend: Backend) {
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(backend)
        .build()
        .unwrap();
    let server = Server::http1(&rt.handle(), "127.0.0.1:0", ServeOptions::default(), || {
        service_fn(upgrade_to_echo)
    })
    .unwrap();
    let addr = server.local_addr();
    let stop = server.shutdown_handle();
    let client = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // The first echoed bytes ride right behind the request head.
        s.write_all(
            b"GET / HTTP/1.1\r\nhost: a\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\nearly",
        )
        .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"early") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let head = String::from_utf8_lossy(&got).to_string();
        assert!(
            head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
            "{head}"
        );
        assert!(head.ends_with("\r\n\r\nearly"), "{head}");
        // Then round trips of growing size, every byte checked.
        for size in [1usize, 100, 10_000, 300_000] {
            let sent: Vec<u8> = (0..size).map(|i| (i * 7 + size) as u8).collect();
            s.write_all(&sent).unwrap();
            let mut back = vec![0u8; size];
            s.read_exact(&mut back).unwrap();
            assert!(back == sent, "{size} bytes echoed differently");
        }
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(
            s.read(&mut buf).unwrap(),
            0,
            "the echo closes after our close"
        );
        stop.shutdown();
    });
    let report = rt.block_on(server.wait()).unwrap();
    client.join().unwrap();
    assert_eq!(report.connections, 1);
    assert_eq!(report.failed, 0);
}

/// A connected pair: ours (adapted, bound to this core) and a std peer on a thread.
async fn bound_pair() -> (CoreBound<CompatStream<TcpStream>>, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let ours = TcpStream::connect(addr).await.unwrap();
    let (peer, _) = listener.accept().unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    (CoreBound::new(CompatStream::new(ours)), peer)
}

#[ringway::test(both)]
async fn a_core_bound_stream_polled_on_another_thread_fails_and_still_works_at_home() {
    let (mut stream, mut peer) = bound_pair().await;
    stream.write_all(b"before").await.unwrap();
    stream.flush().await.unwrap();

    // On another thread: every poll fails, naming the core, and touches nothing.
    let (stream, errors) = std::thread::spawn(move || {
        let mut stream = stream;
        assert!(!stream.is_home());
        assert!(stream.try_get_mut().is_none());
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut pinned = std::pin::Pin::new(&mut stream);
        let mut buf = [0u8; 16];
        let mut rb = tokio::io::ReadBuf::new(&mut buf);
        let read = tokio::io::AsyncRead::poll_read(pinned.as_mut(), &mut cx, &mut rb);
        let write = tokio::io::AsyncWrite::poll_write(pinned.as_mut(), &mut cx, b"away");
        let flush = tokio::io::AsyncWrite::poll_flush(pinned.as_mut(), &mut cx);
        let errors: Vec<String> = [
            read.map(|r| r.map(|_| 0)),
            write,
            flush.map(|r| r.map(|_| 0)),
        ]
        .into_iter()
        .map(|p| match p {
            std::task::Poll::Ready(Err(e)) => e.to_string(),
            other => panic!("a poll away from home must fail at once, got {other:?}"),
        })
        .collect();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = stream.get_mut();
        }));
        assert!(panicked.is_err(), "get_mut away from home panics");
        (stream, errors)
    })
    .join()
    .unwrap();
    for e in &errors {
        assert!(e.contains("core 0"), "the error names the home core: {e}");
        assert!(e.contains("another thread"), "{e}");
    }

    // Home again: nothing was written or lost away from home, and it still works.
    let mut stream = stream;
    assert!(stream.is_home());
    stream.write_all(b" after").await.unwrap();
    stream.flush().await.unwrap();
    let mut got = [0u8; 12];
    let got = ringway::spawn_blocking(move || {
        peer.read_exact(&mut got).unwrap();
        peer.write_all(b"pong").unwrap();
        (got, peer)
    })
    .await
    .unwrap();
    assert_eq!(&got.0, b"before after");
    let mut pong = [0u8; 4];
    stream.read_exact(&mut pong).await.unwrap();
    assert_eq!(&pong, b"pong");
    drop(got.1);
}

#[ringway::test(both)]
async fn a_core_bound_stream_dropped_on_another_thread_is_closed_at_home() {
    let tasks_before = ringway::runtime::task_count();
    let (mut stream, mut peer) = bound_pair().await;
    // Arm the receive and hold a pool buffer: both must be released at home.
    peer.write_all(b"unread").unwrap();
    let mut one = [0u8; 1];
    stream.read_exact(&mut one).await.unwrap();
    stream.write_all(b"last words").await.unwrap();
    assert!(
        ringway::runtime::pool_stats().in_use > 0,
        "the stream holds a pool buffer"
    );
    std::thread::spawn(move || drop(stream)).join().unwrap();
    // The drop came home as a task on this core: the peer then sees the bytes written
    // before the drop, and the end of the stream.
    let got = ringway::spawn_blocking(move || {
        let mut got = Vec::new();
        peer.read_to_end(&mut got).unwrap();
        got
    })
    .await
    .unwrap();
    assert_eq!(got, b"last words");
    for _ in 0..100 {
        if ringway::runtime::task_count() <= tasks_before {
            break;
        }
        ringway::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(
        ringway::runtime::task_count() <= tasks_before,
        "no task left behind"
    );
    assert_eq!(
        ringway::runtime::pool_stats().in_use,
        0,
        "its pool buffer went back to this core's ring"
    );
    assert_eq!(
        ringway::runtime::live_ops(),
        0,
        "its receive was cancelled at home"
    );
}

/// The `Send` bound itself: what hyper's upgrade asks for.
#[test]
fn core_bound_is_send_and_compat_stream_is_not() {
    fn is_send<T: Send>() {}
    is_send::<CoreBound<CompatStream<TcpStream>>>();
    is_send::<hyper::upgrade::Upgraded>();
    // (CompatStream<TcpStream> is not Send: `is_send::<CompatStream<TcpStream>>()` does
    // not compile.)
}
