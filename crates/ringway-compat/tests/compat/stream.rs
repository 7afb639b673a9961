//! `CompatStream` under tokio's I/O traits, on both backends: every byte checked, over
//! TCP and Unix sockets, with reads of every size, buffered reads that borrow the pool
//! buffer, vectored writes, shutdown and end of stream, and the count of sends a burst
//! of writes costs.

use std::future::Future;
use std::io::IoSlice;
use std::net::SocketAddr;

use rand::{Rng, RngCore, SeedableRng};
use ringway::net::{TcpListener, TcpStream, UnixStream};
use ringway::runtime::{driver_stats, pool_stats};
use ringway_compat::CompatStream;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// An echo server whose connections are `CompatStream`s copied onto themselves with
/// `tokio::io::copy` (through `AsyncBufRead`: the pool buffers are written straight out).
fn start_echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    ringway::spawn(async move {
        let mut incoming = listener.incoming();
        while let Some(conn) = incoming.next().await {
            let stream = CompatStream::new(conn.unwrap());
            ringway::spawn(async move {
                let (mut rd, mut wr) = tokio::io::split(stream);
                let mut rd = tokio::io::BufReader::new(&mut rd);
                tokio::io::copy_buf(&mut rd, &mut wr).await.unwrap();
                wr.shutdown().await.unwrap();
            })
            .detach();
        }
    })
    .detach();
    addr
}

/// Writes `data` in random pieces from one task while this one reads in random sizes.
async fn round_trip<S>(stream: CompatStream<S>, data: Vec<u8>, seed: u64) -> Vec<u8>
where
    S: ringway_compat::StreamSocket,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let total = data.len();
    let writer = ringway::spawn(async move {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut off = 0;
        while off < data.len() {
            let n = rng.random_range(1..=(data.len() - off).min(100_000));
            wr.write_all(&data[off..off + n]).await.unwrap();
            if rng.random_bool(0.3) {
                wr.flush().await.unwrap();
            }
            off += n;
        }
        wr.shutdown().await.unwrap();
        wr
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 1);
    let mut got = Vec::with_capacity(total);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let want = rng.random_range(1..=buf.len());
        let n = rd.read(&mut buf[..want]).await.unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    drop(writer.await.unwrap());
    got
}

#[ringway::test(both)]
async fn tcp_echo_of_every_size_checks_every_byte() {
    let addr = start_echo();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for (i, len) in [1usize, 64, 4095, 4096, 4097, 100_000, 1 << 20, 3 << 20]
        .into_iter()
        .enumerate()
    {
        let mut data = vec![0u8; len];
        rng.fill_bytes(&mut data);
        let stream = CompatStream::new(TcpStream::connect(addr).await.unwrap());
        let got = round_trip(stream, data.clone(), i as u64).await;
        assert_eq!(got.len(), data.len(), "length of the echo of {len} bytes");
        assert!(got == data, "echo of {len} bytes differs");
    }
    assert_eq!(
        pool_stats().in_use,
        0,
        "pool buffers held after the connections"
    );
}

#[ringway::test(both)]
async fn tcp_echo_over_50_concurrent_connections() {
    let addr = start_echo();
    let tasks: Vec<_> = (0..50u64)
        .map(|i| {
            ringway::spawn(async move {
                let mut data = vec![0u8; 10_000 + i as usize * 997];
                rand::rngs::StdRng::seed_from_u64(i).fill_bytes(&mut data);
                let stream = CompatStream::new(TcpStream::connect(addr).await.unwrap());
                let got = round_trip(stream, data.clone(), i).await;
                assert!(got == data, "connection {i}: echo differs");
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

#[ringway::test(both)]
async fn unix_stream_pair_carries_bytes_both_ways() {
    let (a, b) = UnixStream::pair().unwrap();
    let (mut a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    let mut data = vec![0u8; 300_000];
    rand::rngs::StdRng::seed_from_u64(3).fill_bytes(&mut data);
    let expect = data.clone();
    let reader = ringway::spawn(async move {
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        b.write_all(b"done").await.unwrap();
        b.shutdown().await.unwrap();
        got
    });
    a.write_all(&data).await.unwrap();
    a.shutdown().await.unwrap();
    let got = reader.await.unwrap();
    assert!(got == expect, "unix stream bytes differ");
    let mut reply = String::new();
    a.read_to_string(&mut reply).await.unwrap();
    assert_eq!(reply, "done");
}

#[ringway::test(both)]
async fn buffered_reads_borrow_the_pool_buffer() {
    let (a, b) = UnixStream::pair().unwrap();
    let (mut a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    a.write_all(b"first line\nsecond line\nno newline at the end")
        .await
        .unwrap();
    a.shutdown().await.unwrap();
    let mut line = String::new();
    b.read_line(&mut line).await.unwrap();
    assert_eq!(line, "first line\n");
    // The rest is still in the pool buffer, lent as it is.
    let lent = b.fill_buf().await.unwrap().to_vec();
    assert!(lent.starts_with(b"second line\n"));
    assert_eq!(b.read_buffered(), lent.len());
    assert_eq!(pool_stats().in_use, 1, "one pool buffer, the one lent");
    let mut rest = Vec::new();
    b.read_to_end(&mut rest).await.unwrap();
    assert_eq!(rest, b"second line\nno newline at the end");
    assert_eq!(b.read_buffered(), 0);
    assert_eq!(pool_stats().in_use, 0, "a used-up buffer goes back at once");
    // End of stream stays end of stream.
    assert_eq!(b.read(&mut [0u8; 8]).await.unwrap(), 0);
}

#[ringway::test(both)]
async fn vectored_writes_keep_their_order() {
    let (a, b) = UnixStream::pair().unwrap();
    let (mut a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    let parts: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; i as usize * 13 + 1]).collect();
    let mut expect = Vec::new();
    for p in &parts {
        expect.extend_from_slice(p);
    }
    let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
    let mut left = &mut slices[..];
    while !left.is_empty() {
        let n = a.write_vectored(left).await.unwrap();
        IoSlice::advance_slices(&mut left, n);
    }
    a.shutdown().await.unwrap();
    let mut got = Vec::new();
    b.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, expect);
}

#[ringway::test(both)]
async fn shutdown_ends_the_peers_stream_and_refuses_later_writes() {
    let (a, b) = UnixStream::pair().unwrap();
    let (mut a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    a.write_all(b"bye").await.unwrap();
    a.shutdown().await.unwrap();
    a.shutdown().await.unwrap(); // idempotent
    let err = a.write_all(b"more").await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    let mut got = Vec::new();
    b.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"bye");
    // The other direction still works after a half close.
    b.write_all(b"still here").await.unwrap();
    b.flush().await.unwrap();
    drop(b);
    let mut back = Vec::new();
    a.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, b"still here");
}

#[ringway::test(both)]
async fn writes_to_a_closed_peer_report_the_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = CompatStream::new(TcpStream::connect(addr).await.unwrap());
    let (server, _) = listener.accept().await.unwrap();
    // Unread data at close makes the kernel answer with a reset.
    client.write_all(b"unread").await.unwrap();
    client.flush().await.unwrap();
    ringway::time::sleep(std::time::Duration::from_millis(20)).await;
    drop(server);
    let mut failed = None;
    for _ in 0..200 {
        let r = async {
            client.write_all(&[0u8; 4096]).await?;
            client.flush().await
        }
        .await;
        if let Err(e) = r {
            failed = Some(e);
            break;
        }
        ringway::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let e = failed.expect("writes to a reset connection kept succeeding");
    assert!(
        matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        "{e:?}"
    );
    // Every later call reports the failure too.
    assert!(client.flush().await.is_err());
}

/// One end of a Unix stream pair, and a task that collects everything the other end
/// receives until EOF. Its receive is armed before this returns, so it does not count
/// in a test's send tally.
async fn writer_and_collector() -> (CompatStream<UnixStream>, ringway::JoinHandle<Vec<u8>>) {
    let (a, b) = UnixStream::pair().unwrap();
    let (a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    let reader = ringway::spawn(async move {
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        got
    });
    ringway::runtime::yield_now().await;
    (a, reader)
}

/// A burst of writes goes out in one send, on both backends: the writes only gather;
/// the flush hands them to the kernel together, as one background send.
#[ringway::test(both)]
async fn a_burst_of_writes_costs_one_send() {
    let (mut a, reader) = writer_and_collector().await;
    let before = driver_stats().submitted;
    for i in 0..100u8 {
        // Each write finishes at once (no await point suspends): one poll, 100 writes.
        a.write_all(&[i; 10]).await.unwrap();
    }
    assert_eq!(driver_stats().submitted, before, "writes only gather");
    assert_eq!(a.write_pending(), 1000);
    a.flush().await.unwrap();
    assert_eq!(driver_stats().submitted - before, 1, "100 writes, one send");
    while a.write_pending() > 0 {
        ringway::runtime::yield_now().await;
    }
    assert_eq!(driver_stats().submitted - before, 1, "and nothing else");
    a.shutdown().await.unwrap();
    let got = reader.await.unwrap();
    let expect: Vec<u8> = (0..100u8).flat_map(|i| [i; 10]).collect();
    assert_eq!(got, expect);
}

/// Flushes made while a send is in flight (a codec flushing every frame) do not wait
/// for it: each is ready at once, and on io_uring (where the first send is still in
/// flight) everything they flushed goes in one next send, handed over by the stream's
/// helper task; on epoll each send goes at once. Every byte arrives, in order, and the
/// helper ends with the stream.
#[ringway::test(both)]
async fn flushes_behind_a_send_in_flight_do_not_wait_and_go_together() {
    let (mut a, reader) = writer_and_collector().await;
    let before = driver_stats().submitted;
    let waker = std::task::Waker::from(std::sync::Arc::new(NoWake));
    let mut cx = std::task::Context::from_waker(&waker);
    for i in 0..50u8 {
        let frame = [i; 10];
        let mut write = std::pin::pin!(a.write_all(&frame));
        assert!(
            write.as_mut().poll(&mut cx).is_ready(),
            "a write never waits here"
        );
        let mut flush = std::pin::pin!(a.flush());
        match flush.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => r.unwrap(),
            std::task::Poll::Pending => panic!("flush {i} waited for the send in flight"),
        }
    }
    if ringway::runtime::current_backend().kind == ringway::Backend::Uring {
        assert_eq!(
            driver_stats().submitted - before,
            1,
            "only the first send went"
        );
        while a.write_pending() > 0 {
            ringway::runtime::yield_now().await;
        }
        assert_eq!(
            driver_stats().submitted - before,
            2,
            "the other 49 went together"
        );
    }
    a.shutdown().await.unwrap();
    let got = reader.await.unwrap();
    let expect: Vec<u8> = (0..50u8).flat_map(|i| [i; 10]).collect();
    assert_eq!(got, expect);
    drop(a);
    ringway::runtime::yield_now().await;
    assert_eq!(ringway::runtime::task_count(), 0, "the helper task ended");
}

/// Bytes written and never flushed still go out (as on a kernel socket): the stream's
/// helper task sends them later in the same loop turn.
#[ringway::test(both)]
async fn unflushed_writes_are_sent_anyway() {
    let (a, b) = UnixStream::pair().unwrap();
    let (mut a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    a.write_all(b"ping").await.unwrap();
    let mut got = [0u8; 4];
    b.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"ping");
    b.write_all(b"pong").await.unwrap();
    a.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"pong");
}

struct NoWake;

impl std::task::Wake for NoWake {
    fn wake(self: std::sync::Arc<Self>) {}
}

/// A stream dropped right after its writes (no flush, no shutdown) still delivers them:
/// its last bytes are handed over at the drop (by the helper task, behind a send still in
/// flight), and the socket closes after them, as the kernel does for a closed socket
/// with unsent bytes.
#[ringway::test(both)]
async fn a_dropped_stream_still_delivers_what_it_accepted() {
    let (a, b) = UnixStream::pair().unwrap();
    let (mut a, mut b) = (CompatStream::new(a), CompatStream::new(b));
    let data: Vec<u8> = (0..2_000_000u32).map(|i| (i % 253) as u8).collect();
    let expect = data.clone();
    let writer = ringway::spawn(async move {
        a.write_all(&data).await.unwrap();
        // Dropped here with up to 256 KiB still queued.
    });
    let mut got = Vec::new();
    b.read_to_end(&mut got).await.unwrap();
    writer.await.unwrap();
    assert_eq!(got.len(), expect.len());
    assert!(got == expect);
    assert_eq!(ringway::runtime::task_count(), 0, "the helper task ended");
}

#[test]
fn one_enter_per_request_at_one_connection() {
    // A tokio-style server on the adapter answering one request at a time. Each
    // answer's send (the adapter's output buffer, whose drop wakes a task only if one
    // said it waits) must not end the core's wait meant for the next request: one
    // `io_uring_enter` per request, not two. The driver's count of enters is the
    // kernel's (ringway's suite checks the two against each other).
    let rt = ringway::Runtime::builder()
        .worker_threads(1)
        .backend(ringway::Backend::Uring)
        .build()
        .unwrap();
    let requests = 400u64;
    rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = ringway::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut s = CompatStream::new(s);
            let mut ask = [0u8; 8];
            while s.read_exact(&mut ask).await.is_ok() {
                s.write_all(b"re:").await.unwrap();
                s.write_all(&ask).await.unwrap();
                s.flush().await.unwrap();
            }
        });
        let client = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.set_nodelay(true).unwrap();
            let mut got = [0u8; 11];
            for i in 0..requests {
                let ask = format!("{i:08}");
                c.write_all(ask.as_bytes()).unwrap();
                c.read_exact(&mut got).unwrap();
                assert_eq!(&got[..3], b"re:");
                assert_eq!(&got[3..], ask.as_bytes());
            }
        });
        let before = driver_stats();
        ringway::spawn_blocking(move || client.join().expect("client thread"))
            .await
            .unwrap();
        let enters = driver_stats().enters - before.enters;
        server.await.unwrap();
        // The connection's setup, its end and the join's wake-up take a few.
        assert!(
            enters <= requests + 20,
            "{enters} io_uring_enter calls for {requests} requests at one connection"
        );
        assert!(enters >= requests / 2, "{enters}: every request waited");
    });
}
