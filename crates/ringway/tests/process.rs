//! `ringway::process` on both backends: output, piped stdio, exit codes and signals,
//! kill, the reaping of dropped children (inside and outside a runtime), and a program
//! that does not exist.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

use ringway::process::{Command, Stdio};
use ringway::time::{sleep, timeout};

const WAIT: Duration = Duration::from_secs(10);

/// True once `pid` is gone from the process table (reaped); a zombie is still there.
fn reaped(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[ringway::test(both)]
async fn output_collects_stdout_stderr_and_the_exit_code() {
    let out = Command::new("sh")
        .args(["-c", "echo out; echo err >&2; exit 3"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
}

#[ringway::test(both)]
async fn output_larger_than_a_pipe_is_read_whole() {
    // 1 MB on stdout and 100 kB on stderr: both pipes fill (64 KiB each), so both must
    // be read while the child runs.
    let out = Command::new("sh")
        .args([
            "-c",
            "head -c 100000 /dev/zero >&2; head -c 1000000 /dev/zero",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 1_000_000);
    assert_eq!(out.stderr.len(), 100_000);
    assert!(out.stdout.iter().all(|&b| b == 0));
}

#[ringway::test(both)]
async fn piped_stdin_and_stdout_are_streams() {
    let mut child = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let expect = data.clone();
    // Written by one task while this one reads: cat blocks once its stdout pipe fills.
    let writer = ringway::spawn(async move {
        let (r, _) = stdin.write_all(data).await;
        r.unwrap();
        // Dropping stdin closes it: cat sees end of file and exits.
    });
    let got = timeout(WAIT, stdout.read_to_end(Vec::new()))
        .await
        .unwrap()
        .unwrap();
    writer.await.unwrap();
    assert_eq!(got, expect);
    assert!(child.wait().await.unwrap().success());
}

#[ringway::test(both)]
async fn kill_ends_a_child_and_says_by_which_signal() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id().unwrap();
    assert!(child.try_wait().unwrap().is_none(), "sleep 30 still runs");
    let st = timeout(WAIT, child.kill()).await.unwrap().unwrap();
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    assert!(!st.success());
    assert!(reaped(pid), "waited for and reaped");
    assert_eq!(child.id(), None, "no pid once reaped");
    // Nothing left to signal: a clear error, never a signal to whoever has the pid now.
    let e = child.start_kill().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("reaped"), "{e}");
}

#[ringway::test(both)]
async fn a_program_that_does_not_exist_is_named_in_the_error() {
    let e = Command::new("ringway-no-such-program").spawn().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(e.to_string().contains("\"ringway-no-such-program\""), "{e}");
    let e = Command::new("/nonexistent/dir/prog")
        .output()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

#[ringway::test(both)]
async fn a_dropped_child_is_reaped_when_it_exits() {
    let child = Command::new("sleep").arg("0.1").spawn().unwrap();
    let pid = child.id().unwrap();
    drop(child);
    let start = Instant::now();
    while !reaped(pid) {
        assert!(start.elapsed() < WAIT, "child {pid} left a zombie");
        sleep(Duration::from_millis(10)).await;
    }
}

#[ringway::test(both)]
async fn kill_on_drop_kills_and_reaps() {
    let child = Command::new("sleep")
        .arg("30")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    drop(child);
    let start = Instant::now();
    while !reaped(pid) {
        assert!(start.elapsed() < WAIT, "child {pid} still there");
        sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn a_child_dropped_after_its_runtime_is_reaped_too() {
    for backend in [ringway::Backend::Uring, ringway::Backend::Epoll] {
        let rt = ringway::Runtime::builder()
            .worker_threads(1)
            .backend(backend)
            .build()
            .unwrap();
        let child = rt.block_on(async { Command::new("sleep").arg("0.1").spawn().unwrap() });
        let pid = child.id().unwrap();
        drop(rt);
        drop(child); // outside any runtime: the blocking pool reaps it
        let start = Instant::now();
        while !reaped(pid) {
            assert!(
                start.elapsed() < WAIT,
                "child {pid} left a zombie ({backend:?})"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[ringway::test(both)]
async fn no_sigchld_handler_is_installed() {
    let st = Command::new("true").status().await.unwrap();
    assert!(st.success());
    // SAFETY: reads the current disposition into a zeroed struct.
    let handler = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(
            libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut old),
            0
        );
        old.sa_sigaction
    };
    assert_eq!(handler, libc::SIG_DFL);
}

#[ringway::test(both, threads = 2)]
async fn children_wait_on_every_core() {
    let handle = ringway::Handle::current();
    let runs = handle.spawn_on_each(|core| async move {
        let out = Command::new("sh")
            .args(["-c", &format!("echo core {core}")])
            .output()
            .await
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    });
    let mut got = Vec::new();
    for r in runs {
        got.push(r.await.unwrap());
    }
    assert_eq!(got, ["core 0\n", "core 1\n"]);
}
