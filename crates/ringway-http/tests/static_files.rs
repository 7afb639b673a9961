//! Static files over real sockets: content types, ETag/Last-Modified and 304, single
//! ranges (206, 416), HEAD, large files streamed whole, and traversal refused (`..`,
//! encoded `..`, symlinks leaving the root).

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;

fn req(server: &TestServer, head: &str) -> Resp {
    let mut s = connect(server.addr);
    s.write_all(format!("{head}Host: a\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let is_head = head.starts_with("HEAD");
    let ex = read_exchange(&mut s, 1, &[is_head], true, Duration::from_secs(10));
    ex.responses
        .into_iter()
        .find(|r| r.status >= 200)
        .expect("a response")
}

#[test]
fn static_files() {
    let base = std::env::temp_dir().join(format!("ringway-static-{}", std::process::id()));
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("index.html"), "<h1>hi</h1>").unwrap();
    std::fs::write(root.join("sub/data.json"), "{\"a\":1}").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::write(base.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(base.join("secret.txt"), root.join("escape.txt")).unwrap();
    // Both handler APIs: `serve` (http types) and the `ViewHandler` face.
    for view in [false, true] {
        let files = ringway_http::files::StaticFiles::new(&root).unwrap();
        let server = TestServer::start_files(files, Default::default(), None, view);

        let r = req(&server, "GET / HTTP/1.1\r\n");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"<h1>hi</h1>");
        assert_eq!(
            r.header("content-type"),
            Some(&b"text/html; charset=utf-8"[..])
        );
        let r = req(&server, "GET /sub/data.json HTTP/1.1\r\n");
        assert_eq!(r.header("content-type"), Some(&b"application/json"[..]));
        let etag = String::from_utf8(r.header("etag").unwrap().to_vec()).unwrap();
        let lm = String::from_utf8(r.header("last-modified").unwrap().to_vec()).unwrap();
        // Conditional requests.
        let r = req(
            &server,
            &format!("GET /sub/data.json HTTP/1.1\r\nIf-None-Match: {etag}\r\n"),
        );
        assert_eq!(r.status, 304);
        assert!(r.body.is_empty() && r.header("content-length").is_none());
        let r = req(
            &server,
            &format!("GET /sub/data.json HTTP/1.1\r\nIf-Modified-Since: {lm}\r\n"),
        );
        assert_eq!(r.status, 304);
        let r = req(
            &server,
            "GET /sub/data.json HTTP/1.1\r\nIf-None-Match: \"other\"\r\n",
        );
        assert_eq!(r.status, 200);
        // Ranges.
        let r = req(&server, "GET /big.bin HTTP/1.1\r\nRange: bytes=100-199\r\n");
        assert_eq!(r.status, 206);
        assert_eq!(r.body, &big[100..200]);
        assert_eq!(
            r.header("content-range"),
            Some(&b"bytes 100-199/300000"[..])
        );
        let r = req(&server, "GET /big.bin HTTP/1.1\r\nRange: bytes=-10\r\n");
        assert_eq!(r.body, &big[big.len() - 10..]);
        let r = req(&server, "GET /big.bin HTTP/1.1\r\nRange: bytes=400000-\r\n");
        assert_eq!(r.status, 416);
        let r = req(
            &server,
            "GET /big.bin HTTP/1.1\r\nRange: bytes=0-1\r\nIf-Range: \"stale\"\r\n",
        );
        assert_eq!(r.status, 200, "If-Range mismatch: whole file");
        // Whole large file, and HEAD.
        let r = req(&server, "GET /big.bin HTTP/1.1\r\n");
        assert_eq!(r.body, big);
        // HEAD of a kept file (its response prepared) and of a streamed one.
        let r = req(&server, "HEAD /index.html HTTP/1.1\r\n");
        assert_eq!(r.header("content-length"), Some(&b"11"[..]));
        assert!(r.header("etag").is_some() && r.body.is_empty());
        let r = req(&server, "HEAD /big.bin HTTP/1.1\r\n");
        assert_eq!(r.header("content-length"), Some(&b"300000"[..]));
        assert!(r.body.is_empty());
        // Traversal.
        for bad in [
            "/../secret.txt",
            "/%2e%2e/secret.txt",
            "/sub/..%2f..%2fsecret.txt",
            "/escape.txt",
            "/missing",
        ] {
            let r = req(&server, &format!("GET {bad} HTTP/1.1\r\n"));
            assert_eq!(r.status, 404, "{bad} (view {view})");
            assert!(!r.body.starts_with(b"secret"));
        }
        let r = req(
            &server,
            "POST /index.html HTTP/1.1\r\nContent-Length: 0\r\n",
        );
        assert_eq!(r.status, 405);
        server.stop();
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// Files above `Config::splice_min` go by splice on plain TCP, whole or ranged, on both
/// backends (io_uring through the http-types API, epoll through the view API); with
/// splicing off, the same bytes go by reads and sends.
#[test]
fn large_files_are_spliced_intact() {
    let root = std::env::temp_dir().join(format!("ringway-splice-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let big: Vec<u8> = (0..(5u32 << 20) + 12_345)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    let apis = [
        (ringway::Backend::Uring, false),
        (ringway::Backend::Epoll, true),
    ];
    for (backend, view) in apis {
        for splice in [true, false] {
            let cfg = ringway_http::Config {
                splice_min: splice.then_some(256 * 1024),
                ..Default::default()
            };
            let files = ringway_http::files::StaticFiles::new(&root).unwrap();
            let server = TestServer::start_files(files, cfg, Some(backend), view);
            let r = req(&server, "GET /big.bin HTTP/1.1\r\n");
            assert_eq!(r.status, 200);
            assert!(r.body == big, "{backend:?} splice {splice}: body altered");
            let r = req(
                &server,
                "GET /big.bin HTTP/1.1\r\nRange: bytes=1000-2000999\r\n",
            );
            assert_eq!(r.status, 206);
            assert!(r.body == big[1000..2_001_000], "{backend:?}: range altered");
            // Below the threshold: the copying path.
            let r = req(&server, "GET /big.bin HTTP/1.1\r\nRange: bytes=0-99\r\n");
            assert_eq!(r.body, &big[..100]);
            let r = req(&server, "HEAD /big.bin HTTP/1.1\r\n");
            assert!(r.body.is_empty());
            let stats = server.stop();
            let want = if splice {
                big.len() as u64 + 2_000_000
            } else {
                0
            };
            assert_eq!(stats.spliced_bytes, want, "{backend:?} splice {splice}");
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Files are kept open per core: requests within the period open nothing, and a file
/// changed, replaced or removed is seen once the period has passed (both backends, both
/// handler APIs).
#[test]
fn kept_files_are_opened_once_and_revalidated() {
    use ringway_http::files::StaticFiles;
    let period = Duration::from_millis(200);
    // Longer than the period since the last check, whatever the host's timer slack.
    let after_period = || std::thread::sleep(period * 2);
    // io_uring through the http-types API, epoll through the view API.
    let apis = [
        (ringway::Backend::Uring, false),
        (ringway::Backend::Epoll, true),
    ];
    for (backend, view) in apis {
        let root =
            std::env::temp_dir().join(format!("ringway-kept-{}-{backend:?}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.txt"), "one").unwrap();
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
        std::fs::write(root.join("big.bin"), &big).unwrap();
        let files = StaticFiles::new(&root).unwrap().revalidate_after(period);
        let server =
            TestServer::start_files(files.clone(), Default::default(), Some(backend), view);

        let first = req(&server, "GET /a.txt HTTP/1.1\r\n");
        let etag = first.header("etag").unwrap().to_vec();
        for _ in 0..20 {
            let r = req(&server, "GET /a.txt HTTP/1.1\r\n");
            assert_eq!((r.status, &r.body[..]), (200, &b"one"[..]));
            assert_eq!(r.header("etag"), Some(&etag[..]));
        }
        // Larger than what is kept in memory: streamed from the kept descriptor.
        for _ in 0..3 {
            assert!(req(&server, "GET /big.bin HTTP/1.1\r\n").body == big);
        }
        let r = req(&server, "GET /big.bin HTTP/1.1\r\nRange: bytes=10-19\r\n");
        assert_eq!(r.body, &big[10..20]);
        assert_eq!(files.opened(), 2, "{backend:?}: one open per file");

        // Changed in place (another length, so another ETag even on a coarse clock).
        std::fs::write(root.join("a.txt"), "two!").unwrap();
        after_period();
        let r = req(&server, "GET /a.txt HTTP/1.1\r\n");
        assert_eq!(r.body, b"two!", "{backend:?}: change seen after the period");
        assert_ne!(r.header("etag"), Some(&etag[..]));
        let r = req(&server, "GET /a.txt HTTP/1.1\r\nRange: bytes=1-2\r\n");
        assert_eq!((r.status, &r.body[..]), (206, &b"wo"[..]));
        // Replaced by a rename: the kept descriptor still names the old file.
        std::fs::write(root.join("a.new"), "three").unwrap();
        std::fs::rename(root.join("a.new"), root.join("a.txt")).unwrap();
        after_period();
        assert_eq!(req(&server, "GET /a.txt HTTP/1.1\r\n").body, b"three");
        assert_eq!(files.opened(), 4, "{backend:?}: reopened once per change");
        // Unchanged past the period: checked again, not reopened.
        after_period();
        assert_eq!(req(&server, "GET /a.txt HTTP/1.1\r\n").body, b"three");
        assert_eq!(files.opened(), 4, "{backend:?}: unchanged, not reopened");
        // Removed.
        std::fs::remove_file(root.join("a.txt")).unwrap();
        after_period();
        assert_eq!(req(&server, "GET /a.txt HTTP/1.1\r\n").status, 404);
        server.stop();

        // No period: nothing kept, every request opens its file.
        let files = StaticFiles::new(&root)
            .unwrap()
            .revalidate_after(Duration::ZERO);
        let server =
            TestServer::start_files(files.clone(), Default::default(), Some(backend), view);
        for _ in 0..5 {
            let r = req(&server, "GET /big.bin HTTP/1.1\r\nRange: bytes=0-9\r\n");
            assert_eq!(r.body, &big[..10]);
        }
        assert_eq!(files.opened(), 5, "{backend:?}: opened per request");
        server.stop();
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// A core keeps at most 1,024 open files: asked for more, it lets the oldest go
/// (counted by the process's open descriptors); the newest stay kept.
#[test]
fn kept_files_are_bounded() {
    let root = std::env::temp_dir().join(format!("ringway-bound-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    // Well past the bound, so that descriptors other tests of this binary open or close
    // meanwhile cannot make an unbounded cache pass for a bounded one.
    const FILES: usize = 1_500;
    for i in 0..FILES {
        std::fs::write(root.join(format!("{i}.txt")), format!("{i}")).unwrap();
    }
    let open_fds = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    let files = ringway_http::files::StaticFiles::new(&root)
        .unwrap()
        .revalidate_after(Duration::from_secs(600));
    let server = TestServer::start_files(files.clone(), Default::default(), None, true);
    let before = open_fds();
    for i in 0..FILES {
        let r = req(&server, &format!("GET /{i}.txt HTTP/1.1\r\n"));
        assert_eq!(r.body, format!("{i}").as_bytes());
    }
    let kept = open_fds().saturating_sub(before);
    assert_eq!(files.opened(), FILES as u64);
    assert!(kept <= 1_024, "{kept} descriptors kept for {FILES} files");
    // The ones still kept are served without opening again.
    let r = req(&server, &format!("GET /{}.txt HTTP/1.1\r\n", FILES - 1));
    assert_eq!(r.body, format!("{}", FILES - 1).as_bytes());
    assert_eq!(files.opened(), FILES as u64);
    server.stop();
    let _ = std::fs::remove_dir_all(&root);
}
