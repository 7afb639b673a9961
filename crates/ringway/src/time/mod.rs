//! Time: [`sleep`], [`timeout`], [`interval`] and the turn clock [`now`].
//!
//! Each core keeps one timer structure. On io_uring its nearest deadline is one
//! absolute `TIMEOUT` op in the ring (moved earlier in place when a nearer one comes):
//! the core looks at its timers, and reads the clock, only in the turn after it fires.
//! On epoll the nearest deadline bounds the driver's wait. Either way a timer costs no
//! syscall of its own, and fires at the first loop turn after its deadline: late by at
//! most one turn, never early.
//!
//! ## The turn clock
//!
//! [`now`] reads the monotonic clock once per loop turn: the first call after the core
//! comes back from waiting for I/O reads it, later calls in that turn return the same
//! reading. A server that asks for the time per request (hyper computes each header-read
//! deadline from its timer's `now()`) then pays one clock read per turn, not one per
//! request. What the reading promises:
//!
//! - it is never later than [`Instant::now`], and readings on one core never go back;
//! - it is earlier than [`Instant::now`] by at most the time the core has spent since
//!   that first call, running the turn's tasks (a turn runs at most 256 task polls
//!   before it looks at I/O again, and the clock is read afresh after that look);
//! - so `now() + d` may come up to that long before `d` has passed from the call.
//!   ringway's own timers do not use it where that would matter: a [`sleep`]`(d)`
//!   still reads the clock at its first poll and never completes before `d` has passed
//!   since then. A [`sleep_until`] compares its deadline with the turn clock, which is
//!   safe (an earlier clock can only make it wait, and the timer then fires at the
//!   first turn that finds the deadline passed).

#[cfg(test)]
mod tests;
mod timers;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use timers::TimerKey;
pub(crate) use timers::Timers;

use crate::runtime::context::{try_with_timers, with_timers};

/// The current core's turn clock (see the [module docs](self#the-turn-clock)): the
/// monotonic time as read at most once per loop turn, never later than
/// [`Instant::now`]. Outside a runtime it is [`Instant::now`].
pub fn now() -> Instant {
    try_with_timers(Timers::now).unwrap_or_else(Instant::now)
}

/// Waits until `duration` has passed, counted from the sleep's first poll (read from
/// the real clock, not the turn clock: it never completes early).
pub fn sleep(duration: Duration) -> Sleep {
    Sleep {
        deadline: Deadline::After(duration),
        key: None,
    }
}

/// Waits until `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline: Deadline::At(deadline),
        key: None,
    }
}

/// When a [`Sleep`] fires: a fixed instant, or a duration that becomes one at the first
/// poll (which is when a `sleep` or `timeout` starts counting; it saves a clock read
/// per timeout that never gets polled, and one per timeout that does).
#[derive(Debug, Clone, Copy)]
enum Deadline {
    At(Instant),
    After(Duration),
}

/// Future of [`sleep`] and [`sleep_until`]. Dropping it removes its timer.
///
/// Keep one `Sleep` and [`reset`](Self::reset) it rather than making a new one per
/// wait: moving a registered timer later costs a store.
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Deadline,
    key: Option<TimerKey>,
}

impl Sleep {
    /// When it fires. For a `sleep(duration)` not polled yet, `duration` from now.
    pub fn deadline(&self) -> Instant {
        match self.deadline {
            Deadline::At(at) => at,
            Deadline::After(d) => Instant::now() + d,
        }
    }

    /// Moves the deadline. A registered timer is moved in place (later: a store;
    /// earlier: a re-file); a sleep that has fired waits again.
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = Deadline::At(deadline);
        if let Some(key) = self.key {
            let moved = try_with_timers(|t| t.reset(key, deadline)).unwrap_or(false);
            if !moved {
                self.key = None;
            }
        }
    }

    /// True once the sleep has fired (its future returned `Ready`, or would).
    pub fn is_elapsed(&self) -> bool {
        match (self.key, self.deadline) {
            (Some(key), _) => !try_with_timers(|t| t.is_live(key)).unwrap_or(false),
            (None, Deadline::At(at)) => Instant::now() >= at,
            (None, Deadline::After(d)) => d.is_zero(),
        }
    }

    fn cancel_timer(&mut self) {
        if let Some(key) = self.key.take() {
            try_with_timers(|t| t.remove(key));
        }
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(key) = self.key {
            // Registered: the timer says whether it fired; no clock read.
            if with_timers(|t| t.update(key, cx.waker())) {
                return Poll::Pending;
            }
            self.key = None;
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        let key = with_timers(|t| {
            let deadline = match deadline {
                // The turn clock is never ahead of the real one: if it says the
                // deadline has passed, it has; if it was a little behind, the timer
                // fires at the next turn.
                Deadline::At(at) if at <= t.now() => return None,
                Deadline::At(at) => at,
                Deadline::After(d) if d.is_zero() => return None,
                // Counted from now, really: the turn clock could be behind. The reading
                // serves as the turn clock if the turn has none yet.
                Deadline::After(d) => {
                    let now = Instant::now();
                    t.note_now(now);
                    now + d
                }
            };
            Some((deadline, t.insert(deadline, cx.waker().clone())))
        });
        match key {
            None => Poll::Ready(()),
            Some((deadline, key)) => {
                self.deadline = Deadline::At(deadline);
                self.key = Some(key);
                Poll::Pending
            }
        }
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

impl<F> std::fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeout")
            .field("sleep", &self.sleep)
            .finish_non_exhaustive()
    }
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
    with_timers(|t| t.len())
}
