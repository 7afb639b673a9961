//! Choosing the backend when io_uring is refused, in child processes.
//!
//! A refusal (a seccomp filter, a memlock limit, an environment override) has to be set
//! up for a whole process and cannot be undone, so each test re-runs this test binary
//! with only itself selected and `RINGWAY_TEST_CHILD=<mode>` in the environment. The
//! child runs the same test function, which sees the variable and plays the child's
//! part: it sets up the refusal, builds a runtime, checks the choice, prints a
//! `ringway-child backend: ...` line and passes an echo round trip. The parent asserts
//! that the child exited 0 and reports what it printed. Children are waited for by pid
//! and killed if they outlive a generous bound.

use std::io::Read;
use std::net::SocketAddr;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringway::net::{TcpListener, TcpStream};
use ringway::{Backend, Runtime};

const CHILD_ENV: &str = "RINGWAY_TEST_CHILD";
/// Prefix of the line a child prints to say which backend it got.
const BACKEND_LINE: &str = "ringway-child backend: ";

fn child_mode() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// Runs this binary again with only `test` selected, `CHILD_ENV=mode` and `env` set
/// (and `RINGWAY_BACKEND` unset unless `env` sets it). Returns the exit status and
/// everything the child printed.
fn run_child(test: &str, mode: &str, env: &[(&str, &str)]) -> (ExitStatus, String) {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode)
        .env_remove("RINGWAY_BACKEND")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn child test process");
    let pid = child.id();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    // Drained on the side so that a chatty child never blocks on a full pipe.
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for child") {
            break st;
        }
        if Instant::now() > deadline {
            // `kill` and `wait` act on this child's pid only.
            let _ = child.kill();
            let st = child.wait().expect("reap killed child");
            let text = out_t.join().unwrap() + &err_t.join().unwrap();
            panic!("child {pid} ({mode}) did not finish in time ({st}); its output:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = out_t.join().unwrap() + &err_t.join().unwrap();
    (status, text)
}

/// Runs a child and asserts that it passed; returns its output.
fn child_must_pass(test: &str, mode: &str, env: &[(&str, &str)]) -> String {
    let (status, text) = run_child(test, mode, env);
    assert!(
        status.success(),
        "child ({mode}) failed with {status}; its output:\n{text}"
    );
    // The child's harness must really have run the test (not filtered it out).
    assert!(
        text.contains("1 passed"),
        "child ({mode}) ran no test:\n{text}"
    );
    text
}

/// What follows `ringway-child backend: ` on the lines a child printed (the first may
/// share its line with the harness's `test name ... `).
fn backend_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.find(BACKEND_LINE).map(|i| &l[i + BACKEND_LINE.len()..]))
        .collect()
}

/// Builds a runtime in a child and prints its backend line.
fn build_and_report(b: &mut ringway::Builder, what: &str) -> std::io::Result<Runtime> {
    let rt = b.build()?;
    println!("{BACKEND_LINE}{what}: {}", rt.backend());
    Ok(rt)
}

// ---- the echo round trip every child must pass ------------------------------------------

/// `conns` connections at once, each sending `bytes` seeded random bytes in 4 KiB
/// pieces to an echo server on the same runtime and checking each piece comes back.
fn echo_round_trip(rt: &Runtime, conns: usize, bytes: usize) {
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = ringway::spawn(async move {
            let mut incoming = listener.incoming();
            while let Some(conn) = incoming.next().await {
                let mut s = conn.expect("accept");
                ringway::spawn(async move {
                    let mut rx = s.recv_multishot();
                    while let Some(chunk) = rx.next().await {
                        let chunk = chunk.expect("receive");
                        if s.write_all(chunk).await.0.is_err() {
                            break;
                        }
                    }
                })
                .detach();
            }
        });
        let clients: Vec<_> = (0..conns)
            .map(|i| ringway::spawn(echo_client(addr, i as u64, bytes)))
            .collect();
        for (i, c) in clients.into_iter().enumerate() {
            c.await
                .expect("client task")
                .unwrap_or_else(|e| panic!("client {i}: {e}"));
        }
        drop(server);
    });
    println!("echo round trip: {conns} connections x {bytes} bytes verified");
}

async fn echo_client(addr: SocketAddr, seed: u64, bytes: usize) -> Result<(), String> {
    let mut data = vec![0u8; bytes];
    StdRng::seed_from_u64(seed).fill(&mut data[..]);
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    for (n, piece) in data.chunks(4096).enumerate() {
        let (r, _) = s.write_all(piece.to_vec()).await;
        r.map_err(|e| format!("write: {e}"))?;
        let mut got = Vec::with_capacity(piece.len());
        while got.len() < piece.len() {
            let (r, buf) = s.read(Vec::with_capacity(piece.len() - got.len())).await;
            match r.map_err(|e| format!("read: {e}"))? {
                0 => return Err(format!("echo closed in piece {n}")),
                k => got.extend_from_slice(&buf[..k]),
            }
        }
        if got != piece {
            return Err(format!("piece {n} came back different"));
        }
    }
    Ok(())
}

// ---- seccomp: io_uring_setup answers EPERM -----------------------------------------------

#[test]
fn seccomp_refusal_falls_back_to_epoll() {
    if child_mode().as_deref() == Some("seccomp") {
        return seccomp_child();
    }
    let text = child_must_pass("seccomp_refusal_falls_back_to_epoll", "seccomp", &[]);
    let lines = backend_lines(&text);
    println!("child said:\n  {}", lines.join("\n  "));
    let auto = lines
        .iter()
        .find(|l| l.starts_with("auto:"))
        .expect("the child reported its backend");
    assert!(auto.contains("epoll"), "{auto}");
    assert!(auto.contains("EPERM"), "{auto}");
    assert!(text.contains("forced io_uring refused:"), "{text}");
}

/// Installs a filter (on every thread) that answers EPERM to `io_uring_setup` only.
fn deny_io_uring_setup() {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
    let arch: TargetArch = std::env::consts::ARCH.try_into().expect("supported arch");
    let filter = SeccompFilter::new(
        [(libc::SYS_io_uring_setup, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .expect("filter");
    let prog: BpfProgram = filter.try_into().expect("compile filter");
    seccompiler::apply_filter_all_threads(&prog).expect("install seccomp filter");
}

fn seccomp_child() {
    deny_io_uring_setup();
    // The filter really is in force.
    let mut params = [0u8; 120]; // struct io_uring_params
                                 // SAFETY: io_uring_setup reads and writes a 120-byte io_uring_params; `params` is one.
    let r = unsafe { libc::syscall(libc::SYS_io_uring_setup, 8u32, params.as_mut_ptr()) };
    assert_eq!(r, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EPERM)
    );

    // Auto (the default, RINGWAY_BACKEND unset): epoll, saying why.
    let rt = build_and_report(Runtime::builder().worker_threads(2), "auto").expect("build");
    let info = rt.backend().clone();
    assert_eq!(info.kind, Backend::Epoll, "{info}");
    assert!(
        info.fallbacks.iter().any(|f| f.contains("EPERM")),
        "fallbacks do not say EPERM: {:?}",
        info.fallbacks
    );
    echo_round_trip(&rt, 100, 64 * 1024);
    drop(rt);

    // io_uring forced: a clear error, no silent fallback.
    let err = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Uring)
        .build()
        .expect_err("a forced io_uring must fail under this filter");
    let msg = err.to_string();
    println!("forced io_uring refused: {msg}");
    assert!(msg.contains("io_uring") && msg.contains("EPERM"), "{msg}");
}

// ---- memlock: RLIMIT_MEMLOCK = 0 -------------------------------------------------------

#[test]
fn memlock_limit_zero_still_runs() {
    match child_mode().as_deref() {
        Some("memlock") => return memlock_child(false),
        Some("memlock-no-ipc-lock") => return memlock_child(true),
        _ => {}
    }
    for mode in ["memlock", "memlock-no-ipc-lock"] {
        let text = child_must_pass("memlock_limit_zero_still_runs", mode, &[]);
        let lines = backend_lines(&text);
        assert!(!lines.is_empty(), "no backend line:\n{text}");
        println!("{mode} child said:\n  {}", lines.join("\n  "));
    }
}

// ---- memlock: room for the rings, not for a growing pool's buffer ring -----------------

/// The growing pool's buffer ring has an entry for every buffer it may grow to, charged
/// to RLIMIT_MEMLOCK without CAP_IPC_LOCK. A limit with room for the rings and a fixed
/// pool's ring but not for that one must keep io_uring, with a pool that cannot grow,
/// and say so.
#[test]
fn a_memlock_limit_too_small_for_a_growing_pool_keeps_io_uring() {
    if child_mode().as_deref() == Some("memlock-small") {
        return memlock_small_child();
    }
    let text = child_must_pass(
        "a_memlock_limit_too_small_for_a_growing_pool_keeps_io_uring",
        "memlock-small",
        &[],
    );
    let lines = backend_lines(&text);
    assert!(!lines.is_empty(), "no backend line:\n{text}");
    println!("memlock-small child said:\n  {}", lines.join("\n  "));
}

fn memlock_small_child() {
    // ~40 KiB of rings (256 SQ, 1,024 CQ entries) fit; a buffer ring of 32,768 entries
    // (512 KiB) does not, one of 128 (2 KiB) does.
    set_memlock(256 * 1024);
    drop_cap_ipc_lock();
    let mut b = Runtime::builder();
    b.worker_threads(1)
        .backend(Backend::Uring)
        .buffer_pool(128, 64 * 1024)
        .buffer_pool_max(32768);
    let rt = build_and_report(&mut b, "uring, pool of 128 growing to 32768")
        .expect("io_uring with a pool that cannot grow");
    let info = rt.backend().clone();
    assert_eq!(info.kind, Backend::Uring, "{info}");
    assert!(
        info.fallbacks
            .iter()
            .any(|f| f.contains("32768 entries: ENOMEM") && f.contains("stays at 128")),
        "the pool's fixed size is said: {:?}",
        info.fallbacks
    );
    let stats = rt.block_on(async { ringway::runtime::pool_stats() });
    assert_eq!((stats.total, stats.capacity), (128, 128));
    echo_round_trip(&rt, 100, 64 * 1024);
}

fn set_memlock_zero() {
    set_memlock(0);
}

fn set_memlock(bytes: u64) {
    let zero = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit and getrlimit read/write one rlimit each, which live here.
    unsafe {
        assert_eq!(
            libc::setrlimit(libc::RLIMIT_MEMLOCK, &zero),
            0,
            "setrlimit: {}",
            std::io::Error::last_os_error()
        );
        let mut now = libc::rlimit {
            rlim_cur: 1,
            rlim_max: 1,
        };
        assert_eq!(libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut now), 0);
        assert_eq!((now.rlim_cur, now.rlim_max), (bytes, bytes));
    }
}

/// Drops CAP_IPC_LOCK from this process's effective and permitted sets (as root the
/// kernel skips memlock accounting for io_uring memory while it is held).
fn drop_cap_ipc_lock() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_IPC_LOCK: u32 = 14;
    let mut hdr = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget/capset take a header and two data structs in the v3 layout above.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()),
            0,
            "capget: {}",
            std::io::Error::last_os_error()
        );
        data[0].effective &= !(1 << CAP_IPC_LOCK);
        data[0].permitted &= !(1 << CAP_IPC_LOCK);
        assert_eq!(
            libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()),
            0,
            "capset: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// With RLIMIT_MEMLOCK at 0 and without CAP_IPC_LOCK, the kernel charges the ring's
/// memory to the limit and refuses it: ENOMEM, which must lead to epoll, said why. With
/// CAP_IPC_LOCK (root keeps it unless dropped) the charge is skipped and io_uring must
/// still be chosen: the limit alone is no reason to give up the fast path.
fn memlock_child(drop_cap: bool) {
    set_memlock_zero();
    if drop_cap {
        drop_cap_ipc_lock();
    }
    let rt = build_and_report(Runtime::builder().worker_threads(1), "auto")
        .expect("a runtime must build with RLIMIT_MEMLOCK = 0");
    let info = rt.backend().clone();
    if drop_cap {
        assert_eq!(
            info.kind,
            Backend::Epoll,
            "the ENOMEM rung was not forced: {info}"
        );
        assert!(
            info.fallbacks.iter().any(|f| f.contains("ENOMEM")),
            "the reason is kept: {:?}",
            info.fallbacks
        );
    } else {
        assert_eq!(
            info.kind,
            Backend::Uring,
            "CAP_IPC_LOCK exempts the ring: {info}"
        );
    }
    echo_round_trip(&rt, 100, 64 * 1024);
    drop(rt);

    // Each backend forced: epoll must work; io_uring must work exactly when Auto chose it,
    // and otherwise say why it cannot.
    let rt = build_and_report(
        Runtime::builder().worker_threads(1).backend(Backend::Epoll),
        "epoll",
    )
    .expect("epoll needs no locked memory");
    assert_eq!(rt.backend().kind, Backend::Epoll);
    echo_round_trip(&rt, 20, 16 * 1024);
    drop(rt);
    let forced = build_and_report(
        Runtime::builder().worker_threads(1).backend(Backend::Uring),
        "uring",
    );
    if drop_cap {
        let e = forced.expect_err("forced io_uring must be refused with ENOMEM");
        println!("{BACKEND_LINE}forced io_uring refused: {e}");
        let msg = e.to_string();
        assert!(msg.contains("io_uring") && msg.contains("ENOMEM"), "{msg}");
    } else {
        let rt = forced.expect("forced io_uring with CAP_IPC_LOCK");
        assert_eq!(rt.backend().kind, Backend::Uring);
        echo_round_trip(&rt, 20, 16 * 1024);
    }
}

// ---- RINGWAY_BACKEND -----------------------------------------------------------------------

#[test]
fn backend_env_override() {
    match child_mode().as_deref() {
        Some("env-epoll") => return env_epoll_child(),
        Some("env-uring") => return env_uring_child(),
        Some("env-bogus") => return env_bogus_child(),
        _ => {}
    }
    const T: &str = "backend_env_override";
    let text = child_must_pass(T, "env-epoll", &[("RINGWAY_BACKEND", "epoll")]);
    println!("epoll child said: {:?}", backend_lines(&text));
    let text = child_must_pass(T, "env-uring", &[("RINGWAY_BACKEND", "uring")]);
    println!("uring child said: {:?}", backend_lines(&text));
    let text = child_must_pass(T, "env-bogus", &[("RINGWAY_BACKEND", "bogus")]);
    assert!(text.contains("bogus backend refused:"), "{text}");
}

fn env_epoll_child() {
    assert_eq!(std::env::var("RINGWAY_BACKEND").as_deref(), Ok("epoll"));
    // No backend set in the builder: the environment decides.
    let rt = build_and_report(Runtime::builder().worker_threads(1), "env epoll").unwrap();
    assert_eq!(rt.backend().kind, Backend::Epoll);
    assert!(rt.backend().fallbacks.is_empty(), "{}", rt.backend());
    echo_round_trip(&rt, 20, 16 * 1024);
}

fn env_uring_child() {
    assert_eq!(std::env::var("RINGWAY_BACKEND").as_deref(), Ok("uring"));
    match build_and_report(Runtime::builder().worker_threads(1), "env uring") {
        Ok(rt) => {
            assert_eq!(rt.backend().kind, Backend::Uring);
            echo_round_trip(&rt, 20, 16 * 1024);
        }
        // A machine without io_uring: the forced choice must fail, and say so.
        Err(e) => assert!(e.to_string().contains("io_uring"), "{e}"),
    }
    // A backend set in the builder wins over the environment.
    let rt = build_and_report(
        Runtime::builder().worker_threads(1).backend(Backend::Epoll),
        "builder epoll over env uring",
    )
    .unwrap();
    assert_eq!(rt.backend().kind, Backend::Epoll);
}

fn env_bogus_child() {
    let err = Runtime::builder()
        .worker_threads(1)
        .build()
        .expect_err("RINGWAY_BACKEND=bogus must be refused");
    let msg = err.to_string();
    println!("bogus backend refused: {msg}");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    for word in ["bogus", "auto", "uring", "epoll"] {
        assert!(msg.contains(word), "message does not name `{word}`: {msg}");
    }
}
