//! End-to-end checks of the benchmark's own programs: each echo server echoes exactly
//! what it receives, in order, under the real client and under a large burst that forces
//! queued and partial sends (and, for the floor, an empty buffer ring); and the harness
//! runs a peer and records a round.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

/// A server started on port 0, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(exe: &str, extra: &[&str]) -> Server {
    let mut child = Command::new(exe)
        .args(["--bind", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    Server { child, addr }
}

fn client(addr: &str, conns: usize, size: usize) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_echo-client"))
        .args([
            "--addr",
            addr,
            "--conns",
            &conns.to_string(),
            "--size",
            &size.to_string(),
        ])
        .args(["--duration", "0.3", "--warmup", "0.1", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "client failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Writes `len` bytes of a non-repeating-looking pattern while another thread reads the
/// echo back, and checks every byte, in order.
fn burst(addr: &str, len: usize) {
    let data: Vec<u8> = (0..len)
        .map(|i| (i % 251) as u8 ^ (i >> 12) as u8)
        .collect();
    let mut w = TcpStream::connect(addr).unwrap();
    let mut r = w.try_clone().unwrap();
    r.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let expected = data.clone();
    let reader = thread::spawn(move || {
        // Start late, so that the server's sends stall and (in the floor) the provided
        // buffers run out: receives must then resume without losing or reordering bytes.
        thread::sleep(Duration::from_millis(500));
        let mut got = vec![0u8; expected.len()];
        r.read_exact(&mut got).unwrap();
        let first_bad = got.iter().zip(&expected).position(|(a, b)| a != b);
        assert_eq!(first_bad, None, "echo differs from what was sent");
    });
    // Several writes of odd sizes, so that the server sees many receives.
    for chunk in data.chunks(100_003) {
        w.write_all(chunk).unwrap();
    }
    reader.join().unwrap();
}

fn check_server(exe: &str, extra: &[&str]) {
    let server = start(exe, extra);
    let small = client(&server.addr, 20, 64);
    assert!(small.contains("\"errors\":0"), "{small}");
    // Larger than one 16 KiB buffer: every message spans several receives.
    let large = client(&server.addr, 4, 40_000);
    assert!(large.contains("\"errors\":0"), "{large}");
    // 24 MiB in flight against 8 MiB of provided buffers in the floor.
    burst(&server.addr, 24 << 20);
}

#[test]
fn floor_echoes_in_order() {
    check_server(env!("CARGO_BIN_EXE_echo-floor"), &[]);
}

#[test]
fn tokio_echoes_in_order() {
    check_server(env!("CARGO_BIN_EXE_echo-tokio"), &[]);
}

#[test]
fn monoio_echoes_in_order() {
    check_server(env!("CARGO_BIN_EXE_echo-monoio"), &[]);
    check_server(env!("CARGO_BIN_EXE_echo-monoio"), &["--coop-taskrun"]);
}

/// A TCP port on 127.0.0.1 that is bound but not listening, held for as long as the
/// returned fd lives: connects to it are refused, and no other socket can take it
/// meanwhile (not a listener, and not an ephemeral source port, which could make a
/// connect to it a self-connection).
fn refusing_port() -> (std::os::fd::OwnedFd, u16) {
    use std::os::fd::FromRawFd;
    // SAFETY: socket() takes no pointers; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh fd that nothing else owns.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let mut addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `addr` and `len` are live and sized for a sockaddr_in during both calls.
    unsafe {
        assert_eq!(
            libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), len),
            0
        );
        assert_eq!(
            libc::getsockname(fd, (&mut addr as *mut libc::sockaddr_in).cast(), &mut len),
            0
        );
    }
    (owned, u16::from_be(addr.sin_port))
}

#[test]
fn client_reports_connect_failure() {
    let (_held, port) = refusing_port();
    let out = Command::new(env!("CARGO_BIN_EXE_echo-client"))
        .args(["--addr", &format!("127.0.0.1:{port}"), "--duration", "0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("connect to"));
}

#[test]
fn harness_charges_the_servers_cpu_and_skips_missing_peers() {
    let json = std::env::temp_dir().join(format!("echo-bench-test-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_echo-bench"))
        .args([
            "--peers",
            "floor,ringway-uring",
            "--scenarios",
            "4x64",
            "--rounds",
            "1",
        ])
        .args(["--duration", "0.5", "--warmup", "0.2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let rounds = report["rounds"].as_array().unwrap();
    let floor: Vec<_> = rounds.iter().filter(|r| r["peer"] == "floor").collect();
    assert_eq!(floor.len(), 1);
    assert_eq!(floor[0]["ok"], true, "{}", floor[0]);
    let messages = floor[0]["messages"].as_u64().unwrap();
    assert!(messages > 0);
    // The server's CPU is charged to the server: one that echoed messages used CPU; it
    // was pinned to one core, so it used at most that core over the window; and the
    // figure per message is that CPU over the messages.
    let cpu_s = floor[0]["server_cpu_s"].as_f64().unwrap();
    let share = floor[0]["server_cpu_share"].as_f64().unwrap();
    let per_msg = floor[0]["server_cpu_us_per_msg"].as_f64().unwrap();
    assert!(
        cpu_s > 0.0,
        "a server that echoed {messages} messages used no CPU: the harness did not measure it"
    );
    assert!(
        share > 0.0 && share <= 1.05,
        "a pinned server's CPU share {share}"
    );
    assert!(
        (per_msg - cpu_s * 1e6 / messages as f64).abs() <= 1e-6 * per_msg,
        "CPU per message {per_msg} is not {cpu_s} s over {messages} messages"
    );
    // The ringway CLI may or may not be built next to the test binaries: either it has
    // a round or it was skipped with the build hint, never both, never neither.
    let ran = rounds.iter().any(|r| r["peer"] == "ringway-uring");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), usize::from(!ran), "{report}");
    for s in skipped {
        assert_eq!(s["peer"], "ringway-uring");
        assert!(s["reason"]
            .as_str()
            .unwrap()
            .contains("cargo build --release -p ringway-cli"));
    }
}
