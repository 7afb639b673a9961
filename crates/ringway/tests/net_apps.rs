//! Socket options through socket2, `UnixDatagram`, and borrowed split halves, on both
//! backends.

use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use ringway::net::{TcpListener, TcpStream, UdpSocket, UnixDatagram, UnixStream};
use ringway::time::timeout;

const WAIT: Duration = Duration::from_secs(10);

/// A fresh directory for socket files, per backend.
fn scratch(name: &str) -> PathBuf {
    let uring = ringway::runtime::current_backend().is_uring();
    let dir = std::env::temp_dir().join(format!(
        "ringway-net-{}-{name}-{}",
        std::process::id(),
        if uring { "uring" } else { "epoll" }
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[ringway::test(both)]
async fn tcp_options_read_back_what_was_set() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_ttl(33).unwrap();
    assert_eq!(listener.ttl().unwrap(), 33);
    let s = TcpStream::connect(addr).await.unwrap();

    s.set_nodelay(true).unwrap();
    assert!(s.nodelay().unwrap());
    s.set_keepalive(Some(Duration::from_secs(45))).unwrap();
    assert_eq!(s.keepalive().unwrap(), Some(Duration::from_secs(45)));
    s.set_keepalive(None).unwrap();
    assert_eq!(s.keepalive().unwrap(), None);
    s.set_linger(Some(Duration::from_secs(3))).unwrap();
    assert_eq!(s.linger().unwrap(), Some(Duration::from_secs(3)));
    s.set_linger(None).unwrap();
    assert_eq!(s.linger().unwrap(), None);
    s.set_ttl(17).unwrap();
    assert_eq!(s.ttl().unwrap(), 17);
    // The kernel doubles what it is given (and caps it at the sysctl maximum).
    s.set_send_buffer_size(32 * 1024).unwrap();
    assert_eq!(s.send_buffer_size().unwrap(), 64 * 1024);
    s.set_recv_buffer_size(32 * 1024).unwrap();
    assert_eq!(s.recv_buffer_size().unwrap(), 64 * 1024);
    // Bad values are the kernel's clear refusal, not a silent no-op.
    let e = s.set_ttl(0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // Anything else is one SockRef away.
    let sock = socket2::SockRef::from(&s);
    assert!(sock.tcp_nodelay().unwrap());
}

#[ringway::test(both)]
async fn ipv6_ttl_is_the_hop_limit() {
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        // No IPv6 loopback in this environment: the IPv4 test covers the rest.
        assert!(std::net::TcpListener::bind("[::1]:0").is_err());
        return;
    };
    listener.set_ttl(7).unwrap();
    assert_eq!(listener.ttl().unwrap(), 7);
}

#[ringway::test(both)]
async fn udp_options_and_loopback_multicast() {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_broadcast(true).unwrap();
    assert!(s.broadcast().unwrap());
    s.set_multicast_ttl_v4(4).unwrap();
    assert_eq!(s.multicast_ttl_v4().unwrap(), 4);
    s.set_multicast_loop_v4(false).unwrap();
    assert!(!s.multicast_loop_v4().unwrap());
    s.set_ttl(9).unwrap();
    assert_eq!(s.ttl().unwrap(), 9);

    // A multicast group joined on the loopback interface receives what is sent to it.
    let group = Ipv4Addr::new(239, 255, 77, 1);
    let rx = UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = rx.local_addr().unwrap().port();
    rx.join_multicast_v4(group, Ipv4Addr::LOCALHOST).unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.set_multicast_loop_v4(true).unwrap();
    let tx_sock = socket2::SockRef::from(&tx);
    tx_sock.set_multicast_if_v4(&Ipv4Addr::LOCALHOST).unwrap();
    let (r, _) = tx.send_to(&b"to the group"[..], (group, port).into()).await;
    r.unwrap();
    let (r, buf) = timeout(WAIT, rx.recv_from(vec![0; 64])).await.unwrap();
    let (n, from) = r.unwrap();
    assert_eq!(&buf[..n], b"to the group");
    assert_eq!(from, tx.local_addr().unwrap());
    rx.leave_multicast_v4(group, Ipv4Addr::LOCALHOST).unwrap();
    // Leaving twice is the kernel's clear error.
    assert!(rx.leave_multicast_v4(group, Ipv4Addr::LOCALHOST).is_err());
}

#[ringway::test(both)]
async fn unix_datagrams_keep_their_boundaries_and_senders() {
    let dir = scratch("dgram");
    let server = UnixDatagram::bind(dir.join("server")).unwrap();
    let client = UnixDatagram::bind(dir.join("client")).unwrap();
    for msg in [&b"one"[..], &b"two, longer"[..], &b""[..]] {
        let (r, _) = client.send_to(msg, dir.join("server")).await;
        assert_eq!(r.unwrap(), msg.len());
    }
    for want in [&b"one"[..], &b"two, longer"[..], &b""[..]] {
        let (r, buf) = timeout(WAIT, server.recv_from(vec![0; 64])).await.unwrap();
        let (n, from) = r.unwrap();
        assert_eq!(&buf[..n], want);
        assert_eq!(from.as_pathname(), Some(dir.join("client").as_path()));
    }
    assert_eq!(
        server.local_addr().unwrap().as_pathname(),
        Some(dir.join("server").as_path())
    );

    // An unbound sender arrives unnamed; a connected one needs no address.
    let anon = UnixDatagram::unbound().unwrap();
    anon.connect(dir.join("server")).unwrap();
    let (r, _) = anon.send(&b"anon"[..]).await;
    r.unwrap();
    let (r, buf) = server.recv_from(vec![0; 64]).await;
    let (n, from) = r.unwrap();
    assert_eq!(&buf[..n], b"anon");
    assert!(from.is_unnamed());

    let (a, b) = UnixDatagram::pair().unwrap();
    let (r, _) = a.send(vec![1, 2, 3]).await;
    r.unwrap();
    let (r, buf) = b.recv(vec![0; 8]).await;
    assert_eq!(&buf[..r.unwrap()], [1, 2, 3]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[ringway::test(both)]
async fn unix_datagram_errors_name_the_path() {
    let dir = scratch("dgram-err");
    let s = UnixDatagram::bind(dir.join("taken")).unwrap();
    let e = UnixDatagram::bind(dir.join("taken")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse);
    assert!(e.to_string().contains("taken"), "{e}");
    let e = s.connect(dir.join("nobody")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("nobody"), "{e}");
    let (r, buf) = s.send_to(vec![9], dir.join("nobody")).await;
    assert_eq!(r.unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(buf, [9], "the buffer comes back");
    let long = dir.join("x".repeat(200));
    let (r, _) = s.send_to(vec![9], &long).await;
    assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidInput);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One task reads and writes one stream at the same time through its borrowed halves:
/// 1 MiB through an echo server, which would deadlock if the task wrote it all first.
#[ringway::test(both)]
async fn split_halves_read_and_write_at_once_in_one_task() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    ringway::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut rx = s.recv_multishot();
        while let Some(Ok(chunk)) = rx.next().await {
            if s.write_all(chunk).await.0.is_err() {
                break;
            }
        }
    })
    .detach();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 253) as u8).collect();
    let total = data.len();
    let (mut r, mut w) = stream.split();
    let write = async move {
        let (res, _) = w.write_all(data).await;
        res.unwrap();
    };
    let read = async move {
        let mut got = Vec::with_capacity(total);
        while got.len() < total {
            let (res, buf) = r.read(Vec::with_capacity(64 * 1024)).await;
            assert!(res.unwrap() > 0);
            got.extend_from_slice(&buf);
        }
        got
    };
    let ((), got) = timeout(WAIT, async { futures::join!(write, read) })
        .await
        .unwrap();
    assert_eq!(got.len(), total);
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (i as u32 % 253) as u8));

    let (mut a, mut b) = UnixStream::pair().unwrap();
    let (mut ar, mut aw) = a.split();
    let (res, _) = aw.write_all(&b"ping"[..]).await;
    res.unwrap();
    let (res, buf) = b.read(vec![0; 8]).await;
    assert_eq!(&buf[..res.unwrap()], b"ping");
    aw.shutdown().unwrap();
    let (res, _) = b.write_all(&b"pong"[..]).await;
    res.unwrap();
    let (res, buf) = ar.read(vec![0; 8]).await;
    assert_eq!(&buf[..res.unwrap()], b"pong");
    let (res, _) = b.read(vec![0; 8]).await;
    assert_eq!(
        res.unwrap(),
        0,
        "the write half's shutdown reached the peer"
    );
}
