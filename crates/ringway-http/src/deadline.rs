//! A connection's deadlines (head, body, idle, send) on one lazily armed timer.
//!
//! Arming a runtime timer around every wait costs an insert and a remove per request.
//! Here each connection keeps one timer that is armed at most [`Deadline::new`]'s
//! `tick` ahead (the shortest configured timeout) and left alone while requests come
//! and go: a wait only notes its deadline. When the timer fires, the wait compares the
//! clock with its deadline and either gives up or re-arms for what is left. Since every
//! deadline is at least `tick` after the moment it is set, the timer never fires late
//! for it, and a busy connection pays no timer operation per request, only a read of
//! the coarse monotonic clock.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ringway::time::{sleep_until, Sleep};

/// How far ahead of the coarse clock's reading the timer may have fired (the coarse
/// clock lags the precise one by at most one kernel tick, 1-10 ms).
const SLACK_NS: u64 = 20_000_000;

/// The coarse monotonic clock in nanoseconds: a vDSO read of the last kernel tick, no
/// time-stamp counter. Precise to a tick, which is plenty for timeouts of seconds.
pub(crate) fn coarse_now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds in `d`, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The wait ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// One connection's timer (see the module doc).
#[derive(Debug)]
pub(crate) struct Deadline {
    /// The armed timer, and when it fires on the coarse clock.
    armed: Option<(Sleep, u64)>,
    tick: u64,
}

impl Deadline {
    /// A timer that is re-armed at most `tick` ahead; `tick` must not exceed the
    /// shortest timeout any wait will use.
    pub(crate) fn new(tick: Duration) -> Deadline {
        Deadline {
            armed: None,
            tick: nanos(tick).max(1_000_000),
        }
    }

    /// Runs `fut` until it completes or the coarse clock reaches `deadline`; `now` is
    /// a reading of [`coarse_now`] taken just before.
    pub(crate) async fn run<F: Future>(
        &mut self,
        now: u64,
        deadline: u64,
        fut: F,
    ) -> Result<F::Output, Elapsed> {
        let mut fut = pin!(fut);
        let mut now = Some(now);
        poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Ok(v));
            }
            // The first poll uses the caller's reading; a later one (a wake-up that did
            // not complete the future: maybe the timer) reads the clock.
            let now = now.take().unwrap_or_else(coarse_now);
            self.poll_timer(cx, now, deadline).map(Err)
        })
        .await
    }

    /// Pending while `deadline` is ahead (the timer armed, no later than it); ready
    /// once it has passed.
    #[inline]
    pub(crate) fn poll_timer(
        &mut self,
        cx: &mut Context<'_>,
        now: u64,
        deadline: u64,
    ) -> Poll<Elapsed> {
        // The common case, in the caller: a timer armed well before its time, no later
        // than the deadline (nothing to poll: its waker is registered already).
        if let Some((_, at)) = &self.armed {
            if *at <= deadline && now + SLACK_NS < *at {
                return Poll::Pending;
            }
        }
        self.poll_timer_armed(cx, now, deadline)
    }

    /// [`poll_timer`](Self::poll_timer) when the timer is due soon, not armed, or armed
    /// past the deadline.
    #[inline(never)]
    fn poll_timer_armed(
        &mut self,
        cx: &mut Context<'_>,
        mut now: u64,
        deadline: u64,
    ) -> Poll<Elapsed> {
        loop {
            if now >= deadline {
                return Poll::Ready(Elapsed);
            }
            match &mut self.armed {
                // Armed no later than the deadline and not due yet: the registration
                // (with this task's waker, which does not change) stands.
                Some((_, at)) if *at <= deadline && now + SLACK_NS < *at => {
                    return Poll::Pending;
                }
                Some((sleep, at)) if *at <= deadline => match Pin::new(sleep).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) => {
                        self.armed = None;
                        now = coarse_now();
                    }
                },
                _ => {
                    // Not armed, or armed too late for this deadline: arm anew.
                    let at = deadline.min(now + self.tick);
                    let when = Instant::now() + Duration::from_nanos(at - now);
                    let mut sleep = sleep_until(when);
                    match Pin::new(&mut sleep).poll(cx) {
                        Poll::Pending => {
                            self.armed = Some((sleep, at));
                            return Poll::Pending;
                        }
                        Poll::Ready(()) => now = coarse_now().max(at),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[ringway::test(both)]
    async fn waits_end_at_their_deadline_not_before() {
        let mut d = Deadline::new(Duration::from_millis(30));
        // Completes: no timeout.
        let now = coarse_now();
        assert_eq!(d.run(now, now + 1_000_000_000, async { 7 }).await, Ok(7));
        // Never completes: gives up at the deadline (re-armed several times on the
        // way, since it is 4 ticks away), not before.
        let start = Instant::now();
        let now = coarse_now();
        let r = d
            .run(now, now + 120_000_000, std::future::pending::<()>())
            .await;
        assert_eq!(r, Err(Elapsed));
        assert!(
            start.elapsed() >= Duration::from_millis(110),
            "{:?}",
            start.elapsed()
        );
        // A shorter deadline than the armed timer is still honoured.
        let now = coarse_now();
        let _ = d.run(now, now + 200_000_000, async {}).await;
        let start = Instant::now();
        let now = coarse_now();
        let r = d
            .run(now, now + 10_000_000, std::future::pending::<()>())
            .await;
        assert_eq!(r, Err(Elapsed));
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
