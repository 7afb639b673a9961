//! The access log's lines reach its sink without depending on other connections: the
//! line of a connection that aborted is written with no other traffic, and lines still
//! gathered on a core when the server stops are written before `stop` returns.

mod common;

use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use ringway_http::Config;

/// A sink the test reads.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn server(sink: &Captured) -> TestServer {
    TestServer::start_setup(
        Config::default(),
        Setup {
            log: Some(Box::new(sink.clone())),
            ..Setup::default()
        },
    )
}

/// Closes with a reset (SO_LINGER 0), as a client that gives up does.
fn reset(s: std::net::TcpStream) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a pointer to a live linger struct with its size, on our own socket.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
    drop(s);
}

#[test]
fn the_line_of_an_aborted_connection_is_written_without_other_traffic() {
    let sink = Captured::default();
    let server = server(&sink);
    // A 32 MiB response the client never reads: it resets, the send fails, the
    // connection aborts after its line was gathered.
    let mut s = connect(server.addr);
    s.write_all(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    let aborted = wait_for(Duration::from_secs(10), || {
        server.stats.snapshot().requests == 1
    });
    assert!(aborted, "the request was answered");
    reset(s);
    // No other connection comes: the line must reach the sink by itself.
    let written = wait_for(Duration::from_secs(10), || {
        sink.text().contains("\"GET /big HTTP/1.1\" 200 33554432")
    });
    assert!(written, "log: {:?}", sink.text());
    server.stop();
}

#[test]
fn lines_gathered_when_the_server_stops_are_written() {
    let sink = Captured::default();
    let server = server(&sink);
    let mut s = connect(server.addr);
    let n = 20;
    s.write_all(
        (0..n)
            .map(|i| format!("GET /line/{i} HTTP/1.1\r\nHost: a\r\n\r\n"))
            .collect::<String>()
            .as_bytes(),
    )
    .unwrap();
    let ex = read_exchange(&mut s, n, &[], false, Duration::from_secs(5));
    assert_eq!(ex.statuses().len(), n);
    // One aborted connection among them.
    let mut a = connect(server.addr);
    a.write_all(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    assert!(wait_for(Duration::from_secs(10), || {
        server.stats.snapshot().requests == n as u64 + 1
    }));
    reset(a);
    // Stop at once: whatever the cores gathered is written before stop returns.
    let stats = server.stop();
    let text = sink.text();
    for i in 0..n {
        assert!(
            text.contains(&format!("\"GET /line/{i} HTTP/1.1\" 200")),
            "line {i} lost: {text}"
        );
    }
    assert!(text.contains("\"GET /big HTTP/1.1\" 200"), "{text}");
    assert_eq!(stats.log_dropped, 0);
}
