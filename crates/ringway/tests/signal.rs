//! `ringway::signal` on both backends: a signal sent to the thread, to the process, to
//! listeners on several cores, a signal the process ignored, ctrl-c in a child
//! process, and the signals that cannot be listened for.
//!
//! Each test uses a signal of its own: the harness runs them on parallel threads of one
//! process, and a signal sent to the process reaches every listener of its number.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use ringway::signal::{signal, SignalKind};
use ringway::time::timeout;
use ringway::{Backend, Runtime};

const WAIT: Duration = Duration::from_secs(10);

#[ringway::test(both)]
async fn a_signal_sent_to_this_thread_arrives() {
    let mut s = signal(SignalKind::user_defined1()).unwrap();
    // SAFETY: sends a signal that this thread now blocks to this thread.
    let sent = unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR1) };
    assert_eq!(sent, 0);
    assert_eq!(
        timeout(WAIT, s.recv()).await.expect("SIGUSR1 arrived"),
        Some(())
    );
    // (Whether more arrive depends on the other backend's run of this test, in a
    // thread beside this one: every listener of a number hears every signal of it.)
}

/// A process-directed signal may go to any thread, here the harness's own, which do
/// not block it: the reroute handler must bring it back to the listeners, on every
/// core, and the process must survive (SIGHUP's default action would end it).
#[test]
fn a_signal_sent_to_the_process_reaches_listeners_on_every_core() {
    for backend in [Backend::Uring, Backend::Epoll] {
        let rt = Runtime::builder()
            .worker_threads(2)
            .backend(backend)
            .build()
            .unwrap();
        let handle = rt.handle();
        rt.block_on(async move {
            let ready = std::sync::Arc::new(std::sync::Barrier::new(2));
            let r = ready.clone();
            let remote = handle.spawn_on(1, move || async move {
                let mut s = signal(SignalKind::hangup()).unwrap();
                // Polled once (its read in flight) before the signal is sent.
                let first = timeout(Duration::from_millis(1), s.recv()).await;
                assert!(first.is_err(), "no SIGHUP yet");
                r.wait();
                timeout(WAIT, s.recv()).await.is_ok()
            });
            let mut here = signal(SignalKind::hangup()).unwrap();
            let waited = ringway::spawn_blocking(move || ready.wait());
            waited.await.unwrap();
            // SAFETY: sends SIGHUP to this process; every listener's thread blocks it
            // and the handler reroutes it from any other.
            assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGHUP) }, 0);
            assert!(
                timeout(WAIT, here.recv()).await.is_ok(),
                "core 0 heard it ({backend:?})"
            );
            assert!(remote.await.unwrap(), "core 1 heard it ({backend:?})");
        });
    }
}

/// Rust programs start with SIGPIPE ignored; listening for it must still work (a write
/// to a pipe without a reader raises it in the writing thread).
#[ringway::test(both)]
async fn an_ignored_signal_arrives_once_listened_for() {
    let mut s = signal(SignalKind::pipe()).unwrap();
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fds into `fds`; the write below reads one live byte, and
    // both fds are closed here.
    unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        libc::close(fds[0]);
        let r = libc::write(fds[1], b"x".as_ptr().cast(), 1);
        assert_eq!(r, -1);
        assert_eq!(*libc::__errno_location(), libc::EPIPE);
        libc::close(fds[1]);
    }
    assert!(timeout(WAIT, s.recv()).await.is_ok(), "SIGPIPE arrived");
}

#[ringway::test(both)]
async fn dropping_a_listener_leaves_the_others_listening() {
    let mut kept = signal(SignalKind::window_change()).unwrap();
    let dropped = signal(SignalKind::window_change()).unwrap();
    drop(dropped);
    // SAFETY: a signal this thread blocks, to this thread.
    unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGWINCH) };
    assert!(timeout(WAIT, kept.recv()).await.is_ok());
    assert_eq!(
        ringway::runtime::live_ops(),
        0,
        "no read left behind but the kept one's"
    );
}

#[test]
fn signals_that_cannot_be_listened_for_say_why() {
    for (signum, words) in [
        (libc::SIGKILL, "SIGKILL) cannot be caught"),
        (libc::SIGSTOP, "SIGSTOP) cannot be caught"),
        (libc::SIGSEGV, "SIGSEGV) is raised by a fault"),
        (libc::SIGFPE, "SIGFPE) is raised by a fault"),
        (0, "signal 0 is not a signal number"),
        (65, "signal 65 is not a signal number"),
        (-3, "signal -3 is not a signal number"),
        (32, "reserved by the C library"),
    ] {
        let e = signal(SignalKind::from_raw(signum)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{signum}");
        assert!(e.to_string().contains(words), "{signum}: {e}");
    }
}

const CHILD_ENV: &str = "RINGWAY_SIGNAL_CHILD";

/// The child half of `ctrl_c_stops_a_child_process`: waits for ctrl-c, says so, exits.
#[test]
fn ctrl_c_child() {
    let Ok(backend) = std::env::var(CHILD_ENV) else {
        return; // only as a child
    };
    let backend = if backend == "epoll" {
        Backend::Epoll
    } else {
        Backend::Uring
    };
    let rt = Runtime::builder()
        .worker_threads(2)
        .backend(backend)
        .build()
        .unwrap();
    rt.block_on(async {
        let wait = ringway::spawn(ringway::signal::ctrl_c());
        ringway::time::sleep(Duration::from_millis(1)).await;
        println!("ready");
        wait.await.unwrap().unwrap();
        println!("got ctrl-c");
    });
}

#[test]
fn ctrl_c_stops_a_child_process() {
    for backend in ["uring", "epoll"] {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args(["--exact", "ctrl_c_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, backend)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            let ready = line.ends_with("ready");
            seen.push(line);
            if ready {
                break;
            }
        }
        assert!(
            seen.last().is_some_and(|l| l.ends_with("ready")),
            "{backend}: {seen:?}"
        );
        // SAFETY: signals our own child, by pid, which is not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        seen.extend(lines.map(Result::unwrap));
        let status = child.wait().unwrap();
        assert!(status.success(), "{backend}: {status}: {seen:?}");
        assert!(
            seen.iter().any(|l| l == "got ctrl-c"),
            "{backend}: {seen:?}"
        );
    }
}
