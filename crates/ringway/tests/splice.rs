//! Zero-copy transfers with `splice` (`ringway::io::Pipe`), on both backends.

use std::io::Read;
use std::time::Duration;

use rand::{RngCore, SeedableRng};
use ringway::fs::File;
use ringway::io::Pipe;
use ringway::net::TcpStream;
use ringway::runtime::{live_ops, yield_now};
use ringway::time::{sleep, timeout};

/// What `/proc/self/fd/<fd>` points at (`pipe:[inode]` for a pipe).
fn fd_target(fd: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// True if any fd of the process still points at `target`.
fn still_open(target: &str) -> bool {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|p| p.to_string_lossy() == target)
}

fn temp_file(name: &str, data: &[u8]) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("ringway-splice-{}-{name}", std::process::id()));
    std::fs::write(&p, data).unwrap();
    p
}

#[ringway::test(both)]
async fn a_3_mib_file_spliced_to_a_socket_arrives_intact() {
    let mut data = vec![0u8; 3 << 20];
    rand::rngs::StdRng::seed_from_u64(3).fill_bytes(&mut data);
    let backend = format!("{:?}", ringway::runtime::current_backend().kind);
    let path = temp_file(&backend, &data);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        got
    });
    let file = File::open(&path).await.unwrap();
    let sock = TcpStream::connect(addr).await.unwrap();
    let pipe = Pipe::new().unwrap();
    let mut off = 0u64;
    while off < data.len() as u64 {
        let n = pipe.splice_from_file(&file, off, 64 * 1024).await.unwrap();
        assert!(n > 0, "early end of file at {off}");
        let mut left = n;
        while left > 0 {
            let m = pipe.splice_to(&sock, left).await.unwrap();
            assert!(m > 0);
            left -= m;
        }
        off += n as u64;
    }
    assert_eq!(pipe.splice_from_file(&file, off, 4096).await.unwrap(), 0);
    drop(sock);
    let got = reader.join().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(got.len(), data.len());
    assert!(got == data, "spliced bytes came out altered");
}

#[ringway::test(both)]
async fn a_cancelled_splice_leaves_no_fd_open() {
    let data = vec![7u8; 256 * 1024];
    let backend = format!("{:?}", ringway::runtime::current_backend().kind);
    let path = temp_file(&format!("cancel-{backend}"), &data);
    // A peer that never reads: the socket fills and the splice into it has to wait.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let file = File::open(&path).await.unwrap();
    let sock = TcpStream::connect(addr).await.unwrap();
    let (peer, _) = listener.accept().unwrap();
    let pipe = Pipe::new().unwrap();
    let targets = [
        fd_target(pipe.read_fd()).unwrap(),
        fd_target(pipe.write_fd()).unwrap(),
    ];
    assert!(targets[0].starts_with("pipe:"), "{targets:?}");
    let mut cancelled = false;
    // Bytes in the pipe: a splice into a full pipe would wait too, without a timeout.
    let mut in_pipe = 0;
    for _ in 0..10_000 {
        if in_pipe == 0 {
            in_pipe = pipe.splice_from_file(&file, 0, 64 * 1024).await.unwrap();
            assert!(in_pipe > 0);
        }
        match timeout(Duration::from_millis(50), pipe.splice_to(&sock, in_pipe)).await {
            Ok(r) => in_pipe -= r.unwrap(),
            Err(_) => {
                // The splice's future is dropped mid-flight: the driver cancels it.
                cancelled = true;
                break;
            }
        }
    }
    assert!(cancelled, "the socket never filled up");
    drop(pipe);
    drop(sock);
    drop(file);
    for _ in 0..200 {
        if live_ops() == 0 {
            break;
        }
        yield_now().await;
        sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(live_ops(), 0, "the cancelled splice still holds a slot");
    for t in &targets {
        assert!(!still_open(t), "{t} is still open");
    }
    drop(peer);
    std::fs::remove_file(&path).unwrap();
}
