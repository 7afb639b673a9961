//! Time: [`sleep`], [`timeout`] and [`interval`].
//!
//! Each core keeps one timer structure; the nearest deadline bounds the driver's wait,
//! so a timer costs no syscall of its own. A timer fires at the first loop turn after
//! its deadline: late by at most one turn, never early.

mod timers;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use timers::TimerKey;
pub(crate) use timers::Timers;

use crate::runtime::core::{try_with_current, with_current};

/// Waits until `duration` has passed.
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(Instant::now() + duration)
}

/// Waits until `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        key: None,
    }
}

/// Future of [`sleep`]. Dropping it removes its timer.
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    key: Option<TimerKey>,
}

impl Sleep {
    /// When it fires.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline (re-registering the timer).
    pub fn reset(&mut self, deadline: Instant) {
        self.cancel_timer();
        self.deadline = deadline;
    }

    fn cancel_timer(&mut self) {
        if let Some(key) = self.key.take() {
            try_with_current(|c| c.timers.borrow_mut().remove(key));
        }
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            self.cancel_timer();
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        match self.key {
            Some(key) => {
                let live = with_current(|c| c.timers.borrow_mut().update(key, cx.waker()));
                if !live {
                    // Fired (the wake is how we got here) but the clock read above raced
                    // with it: register again for the remaining time.
                    self.key = Some(with_current(|c| {
                        c.timers.borrow_mut().insert(deadline, cx.waker().clone())
                    }));
                }
            }
            None => {
                self.key = Some(with_current(|c| {
                    c.timers.borrow_mut().insert(deadline, cx.waker().clone())
                }));
            }
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.cancel_timer();
    }
}

/// The error of a [`timeout`] that expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, "deadline has elapsed")
    }
}

/// Runs `fut`, giving up after `duration`. Giving up drops `fut`, which cancels its I/O.
pub fn timeout<F: Future>(duration: Duration, fut: F) -> Timeout<F> {
    Timeout {
        fut,
        sleep: sleep(duration),
    }
}

/// Future of [`timeout`].
#[must_use = "futures do nothing unless awaited"]
pub struct Timeout<F> {
    fut: F,
    sleep: Sleep,
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `fut` is structurally pinned: never moved out of the pinned Timeout.
        let (fut, sleep) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.fut), Pin::new(&mut this.sleep))
        };
        if let Poll::Ready(v) = fut.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Ticks every `period`, the first tick at once. Missed ticks are not bunched up: after
/// a stall the next tick is one period after the late one.
pub fn interval(period: Duration) -> Interval {
    assert!(!period.is_zero(), "interval period must be non-zero");
    Interval {
        period,
        next: Instant::now(),
        sleep: None,
    }
}

/// Returned by [`interval`].
#[derive(Debug)]
pub struct Interval {
    period: Duration,
    next: Instant,
    sleep: Option<Sleep>,
}

impl Interval {
    /// Waits for the next tick; returns its scheduled time.
    pub async fn tick(&mut self) -> Instant {
        let at = self.next;
        let sleep = self.sleep.get_or_insert_with(|| sleep_until(at));
        sleep.reset(at);
        sleep.await;
        let now = Instant::now();
        self.next = if now > at + self.period {
            now + self.period
        } else {
            at + self.period
        };
        at
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}

/// Timers registered on the current core (for tests and metrics).
pub fn pending_timers() -> usize {
    with_current(|c| c.timers.borrow().len())
}
