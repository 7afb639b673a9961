//! What one core's accept loop decides besides accepting: whether the server may take
//! one more connection ([`Config::max_connections`](crate::Config::max_connections),
//! nginx's `worker_connections`), and the back-off when accepting fails (EMFILE and the
//! like), with its one warning per episode.
//!
//! An episode of failed accepts starts with a failure and ends once no accept has
//! failed for [`EPISODE_QUIET`]: a flood at the descriptor limit, where accepts fail
//! and succeed by turns as connections come and go, is one episode, and one warning
//! that says how many accepts were refused.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long accepting backs off after a failure (instead of spinning on EMFILE).
pub(crate) const BACKOFF: Duration = Duration::from_millis(20);

/// An episode of failed accepts ends once none has failed for this long.
pub(crate) const EPISODE_QUIET: Duration = Duration::from_secs(1);

/// An episode still going after this long is reported on the way (and counted anew),
/// so that a server stuck at its limit says so.
const EPISODE_REPORT: Duration = Duration::from_secs(60);

/// The connections one server holds open, on all its cores, against its limit.
#[derive(Debug)]
pub(crate) struct OpenConnections {
    open: AtomicUsize,
    max: usize,
}

impl OpenConnections {
    pub(crate) fn new(max: usize) -> Self {
        OpenConnections {
            open: AtomicUsize::new(0),
            max,
        }
    }

    /// Counts one connection in, if the limit allows; false (and nothing counted) if
    /// the server holds `max` already. Each `true` is matched by one
    /// [`leave`](Self::leave).
    pub(crate) fn enter(&self) -> bool {
        // One atomic step, so that cores accepting at once cannot pass the limit
        // together.
        self.open
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Counts one connection out.
    pub(crate) fn leave(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Connections open now.
    #[cfg(test)]
    fn now(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

/// The failed accepts of the current episode, if one is going on.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    episode: Option<Episode>,
}

#[derive(Debug)]
struct Episode {
    started: Instant,
    last: Instant,
    count: u64,
    error: String,
}

impl Refusals {
    /// An accept failed with `e` at `now`: counted in the episode (which it starts if
    /// none is going on).
    pub(crate) fn failed(&mut self, e: &io::Error, now: Instant) {
        let ep = self.episode.get_or_insert_with(|| Episode {
            started: now,
            last: now,
            count: 0,
            error: String::new(),
        });
        ep.last = now;
        ep.count += 1;
        if ep.error.is_empty() {
            ep.error = e.to_string();
        }
        if now.duration_since(ep.started) >= EPISODE_REPORT {
            self.report();
        }
    }

    /// When the episode going on ends if no accept fails before; `None` if none is.
    pub(crate) fn quiet_at(&self) -> Option<Instant> {
        self.episode.as_ref().map(|ep| ep.last + EPISODE_QUIET)
    }

    /// Ends the episode if none failed for [`EPISODE_QUIET`] before `now` (or `force`,
    /// when the server stops), with its one warning.
    pub(crate) fn settle(&mut self, now: Instant, force: bool) {
        if force || self.quiet_at().is_some_and(|at| at <= now) {
            self.report();
        }
    }

    /// Prints the episode's warning (its span: first to last failure) and forgets it.
    fn report(&mut self) {
        if let Some(ep) = self.episode.take() {
            tracing::warn!(
                "accept refused {} connection{} over {:.1} s ({}); backed off {} ms after each \
                 (one warning per episode: raise the descriptor limit, `ulimit -n`, or lower \
                 the server's max connections)",
                ep.count,
                if ep.count == 1 { "" } else { "s" },
                ep.last.duration_since(ep.started).as_secs_f64(),
                ep.error,
                BACKOFF.as_millis(),
            );
        }
    }

    /// The failures counted in the episode going on (0 without one).
    #[cfg(test)]
    fn count(&self) -> u64 {
        self.episode.as_ref().map_or(0, |ep| ep.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_counts_in_and_out() {
        let open = OpenConnections::new(2);
        assert!(open.enter() && open.enter());
        assert!(!open.enter(), "a third over a limit of two");
        assert_eq!(open.now(), 2);
        open.leave();
        assert!(open.enter());
        assert_eq!(open.now(), 2);
    }

    #[test]
    fn an_episode_ends_after_a_quiet_second() {
        let t0 = Instant::now();
        let e = io::Error::from_raw_os_error(libc::EMFILE);
        let mut r = Refusals::default();
        assert_eq!(r.quiet_at(), None);
        // Failures 100 ms apart for two seconds: one episode.
        for i in 0..20 {
            let now = t0 + Duration::from_millis(100 * i);
            r.settle(now, false);
            r.failed(&e, now);
        }
        assert_eq!(r.count(), 20);
        let last = t0 + Duration::from_millis(1900);
        assert_eq!(r.quiet_at(), Some(last + EPISODE_QUIET));
        r.settle(last + Duration::from_millis(999), false);
        assert_eq!(r.count(), 20, "not quiet for a second yet");
        r.settle(last + EPISODE_QUIET, false);
        assert_eq!((r.count(), r.quiet_at()), (0, None), "over");
        // The next failure starts a new one.
        r.failed(&e, last + Duration::from_secs(5));
        assert_eq!(r.count(), 1);
        r.settle(last + Duration::from_secs(5), true);
        assert_eq!(r.count(), 0, "reported when the server stops");
    }
}
