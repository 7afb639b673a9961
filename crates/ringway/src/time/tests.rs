//! The turn clock's promises, on a real core: one clock read per turn, never ahead of
//! the real clock, and no sleep that ends early because of it.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use super::{now, pending_timers, sleep, sleep_until};
use crate::runtime::context::with_timers;
use crate::{Backend, Runtime};

/// Runs `f` on a one-core runtime of each backend (io_uring where the kernel has it).
fn on_both(f: impl Fn() -> std::pin::Pin<Box<dyn Future<Output = ()>>>) {
    for backend in [Backend::Auto, Backend::Epoll] {
        let rt = Runtime::builder()
            .worker_threads(1)
            .backend(backend)
            .build()
            .expect("runtime");
        rt.block_on(f());
    }
}

fn clock_reads() -> u64 {
    with_timers(|t| t.clock_reads)
}

fn due_passes() -> u64 {
    with_timers(|t| t.due_passes)
}

#[test]
fn the_turn_clock_is_read_once_per_turn_and_never_runs_ahead() {
    on_both(|| {
        Box::pin(async {
            let reads = clock_reads();
            let first = now();
            let again = now();
            assert_eq!(first, again, "one turn, one reading");
            assert_eq!(clock_reads(), reads + 1, "the second call read no clock");
            assert!(first <= Instant::now(), "the turn clock ran ahead");

            // A turn later (the driver is asked, even if it does not wait): read afresh.
            crate::runtime::yield_now().await;
            let next = now();
            assert_eq!(clock_reads(), reads + 2);
            assert!(next >= first);

            // After a wait, the clock has moved by at least the wait.
            sleep(Duration::from_millis(2)).await;
            let after = now();
            assert!(
                after >= first + Duration::from_millis(2),
                "the turn clock did not see the 2 ms sleep"
            );
            assert!(after <= Instant::now());
        })
    });
}

#[test]
fn a_sleep_counts_from_its_first_poll_even_when_the_turn_clock_lags() {
    on_both(|| {
        Box::pin(async {
            let stale = now();
            // The turn goes on for 20 ms: the turn clock is now 20 ms behind.
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(now(), stale, "still the same turn");
            let made = Instant::now();
            sleep(Duration::from_millis(10)).await;
            assert!(
                made.elapsed() >= Duration::from_millis(10),
                "a sleep counted from the lagging turn clock ended early"
            );
        })
    });
}

#[test]
fn sleep_until_checks_the_turn_clock_and_fires_what_it_missed() {
    on_both(|| {
        Box::pin(async {
            // Due by the turn clock: ready at its first poll, no timer registered.
            let mut due = pin!(sleep_until(now()));
            let first = std::future::poll_fn(|cx| Poll::Ready(due.as_mut().poll(cx))).await;
            assert_eq!(first, Poll::Ready(()));
            assert_eq!(pending_timers(), 0);

            // Due by the real clock but after the (lagging) turn clock: it waits for the
            // next turn's timer check, which fires it; nothing is left behind.
            let _ = now();
            std::thread::sleep(Duration::from_millis(5));
            let at = Instant::now();
            sleep_until(at).await;
            assert!(Instant::now() >= at);
            assert_eq!(pending_timers(), 0);
        })
    });
}

#[test]
fn outside_a_runtime_the_turn_clock_is_the_real_clock() {
    let before = Instant::now();
    let t = now();
    assert!(t >= before && t <= Instant::now());
}

#[test]
fn entering_a_core_again_reads_the_clock_afresh() {
    let rt = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Epoll)
        .build()
        .expect("runtime");
    let first = rt.block_on(async { now() });
    std::thread::sleep(Duration::from_millis(5));
    let second = rt.block_on(async { now() });
    assert!(
        second >= first + Duration::from_millis(5),
        "block_on reused the turn clock of an earlier call"
    );
}

#[test]
fn on_io_uring_the_timers_are_looked_at_only_when_the_kernel_says_one_is_due() {
    let Ok(rt) = Runtime::builder()
        .worker_threads(1)
        .backend(Backend::Uring)
        .build()
    else {
        return; // no io_uring here: nothing to check
    };
    rt.block_on(async {
        // A timer far off, as a server's idle deadline is.
        let far = crate::spawn(sleep(Duration::from_secs(60)));
        crate::runtime::yield_now().await;
        let before = due_passes();
        for _ in 0..200 {
            crate::runtime::yield_now().await;
        }
        // Once per turn would be 200 (as on epoll, where each wait is bounded by the
        // next deadline, read against the clock).
        assert!(
            due_passes() - before < 10,
            "{} looks at the timers in 200 turns with none due",
            due_passes() - before
        );
        drop(far);
    });
}

#[test]
fn a_nearer_timer_moves_the_cores_wake_up_earlier() {
    // On its own thread, so that a sleep stuck behind the far timer fails the test
    // rather than holding it for an hour.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        on_both(|| {
            Box::pin(async {
                // The core's wake-up is set for an hour from now; a 5 ms sleep made after
                // it must not wait for that (io_uring moves the kernel's timer earlier).
                let far = crate::spawn(sleep(Duration::from_secs(3600)));
                crate::runtime::yield_now().await;
                crate::runtime::yield_now().await;
                let made = Instant::now();
                sleep(Duration::from_millis(5)).await;
                assert!(made.elapsed() >= Duration::from_millis(5));
                // And again, once that timer has fired: a fresh one is armed.
                sleep(Duration::from_millis(5)).await;
                drop(far);
            })
        });
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(120))
        .expect("a 5 ms sleep waited for the core's hour-long timer");
}
