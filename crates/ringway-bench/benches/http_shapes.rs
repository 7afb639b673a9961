//! The first write-up's three shapes, measured properly: one request, 50 concurrent
//! requests, 1000 requests per iteration, against `ringway serve --hello` (io_uring and
//! epoll) and tokio + hyper 1 — with *persistent* clients: the connections are opened
//! once, before criterion starts timing (the write-up made a new client pool per
//! iteration, so it timed connection set-up, not the servers).
//!
//! Each server runs in its own process pinned to CPU 0; this benchmark (the client)
//! pins itself to CPU 1. The client is plain blocking sockets: one request at a time
//! per connection, all connections written before any is read, so "50 concurrent"
//! really has 50 requests in flight.
//!
//! Run: `cargo bench -p ringway-bench --bench http_shapes` (add `-- single` for one
//! shape). The ringway binary is built (release) by the benchmark itself.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringway_bench::measure::launch::{self, LaunchSpec, RunningServer, KILL_GRACE};

const REQUEST: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// A keep-alive connection that reads responses framed by Content-Length.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Conn {
            s,
            buf: Vec::with_capacity(4096),
        }
    }

    fn send(&mut self) {
        self.s.write_all(REQUEST).expect("write");
    }

    /// Reads one whole response (status 200 checked).
    fn recv(&mut self) {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buf[..end]).expect("ASCII head");
                assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (n, v) = l.split_once(':')?;
                        n.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .expect("content-length");
                if self.buf.len() >= end + 4 + len {
                    self.buf.drain(..end + 4 + len);
                    return;
                }
            }
            let n = self.s.read(&mut chunk).expect("read");
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The release `ringway` binary, built with the cargo that runs this benchmark.
fn ringway_binary() -> String {
    let st = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "ringway-cli",
            "--bin",
            "ringway",
        ])
        .status()
        .expect("run cargo");
    assert!(st.success(), "cargo build -p ringway-cli failed");
    let target = profile_dir()
        .parent()
        .unwrap()
        .join("release")
        .join("ringway");
    assert!(target.exists(), "{} missing", target.display());
    target.display().to_string()
}

fn servers() -> Vec<(&'static str, Vec<String>)> {
    let ringway = ringway_binary();
    let serve = |backend: &str| -> Vec<String> {
        format!("{ringway} serve --hello --no-access-log --threads 1 --backend {backend} --bind 127.0.0.1:{{port}}")
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let hyper = format!(
        "{} --bind 127.0.0.1:{{port}} --threads 1",
        env!("CARGO_BIN_EXE_http-hyper")
    );
    vec![
        ("ringway-uring", serve("uring")),
        ("ringway-epoll", serve("epoll")),
        (
            "hyper",
            hyper.split_whitespace().map(String::from).collect(),
        ),
    ]
}

fn pin_self_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays inside it (cpu < CPU_SETSIZE).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn shapes(c: &mut Criterion) {
    let two_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    if two_cpus {
        pin_self_to(1);
    }
    for (name, argv) in servers() {
        let mut srv: RunningServer = launch::start(&LaunchSpec::new(argv), two_cpus.then_some("0"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let addr = srv.addr();

        let mut one = Conn::open(addr);
        let mut g = c.benchmark_group("single");
        g.throughput(Throughput::Elements(1));
        g.bench_function(name, |b| {
            b.iter(|| {
                one.send();
                one.recv();
            })
        });
        g.finish();

        let mut fifty: Vec<Conn> = (0..50).map(|_| Conn::open(addr)).collect();
        let mut g = c.benchmark_group("concurrent50");
        g.throughput(Throughput::Elements(50));
        g.bench_function(name, |b| {
            b.iter(|| {
                fifty.iter_mut().for_each(Conn::send);
                fifty.iter_mut().for_each(Conn::recv);
            })
        });
        g.finish();

        let mut g = c.benchmark_group("per_iteration1000");
        g.throughput(Throughput::Elements(1000));
        g.sample_size(20);
        g.bench_function(name, |b| {
            b.iter(|| {
                for _ in 0..20 {
                    fifty.iter_mut().for_each(Conn::send);
                    fifty.iter_mut().for_each(Conn::recv);
                }
            })
        });
        g.finish();
        drop(fifty);
        drop(one);
        let _ = srv.proc.stop(KILL_GRACE);
    }
}

// criterion_group! defines a public function it cannot document.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group! {
        name = benches;
        config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
        targets = shapes
    }
}
criterion_main!(group::benches);
