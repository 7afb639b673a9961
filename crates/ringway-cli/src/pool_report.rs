//! The receive pool's counters, summed over a server's cores, for its stop line: what a
//! benchmark reads beside its timed figures (counted, so the machine's noise does not
//! move them).

use ringway::driver::DriverStats;
use ringway::runtime::{driver_stats, pool_stats};
use ringway::Runtime;

/// One core's counters that say what its receive pool went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PoolReport {
    /// Buffers per core (at the stop: the pool grows when its receives find it dry).
    pub total: usize,
    /// Times a core's pool doubled.
    pub grown: u64,
    /// What one receive may pin (`usize::MAX`: no share).
    pub share: usize,
    /// The most buffers pinned at once, on the core where that was most.
    pub peak_pinned: usize,
    /// Receives stopped because their waiting pieces pinned their share.
    pub share_stops: u64,
    /// Receives stopped for any reason of their readers' (share, backlog).
    pub backlogged: u64,
    /// Receives parked on a dry pool.
    pub starved: u64,
    /// Receives stopped by the pool-pressure rule, and the buffers it gave back.
    pub pressure_stops: u64,
    pub reclaimed: u64,
}

impl PoolReport {
    fn of_core(d: DriverStats, p: ringway::buf::PoolStats) -> PoolReport {
        PoolReport {
            total: p.total,
            grown: d.pool_grown,
            share: p.share,
            peak_pinned: p.peak_pinned,
            share_stops: d.recv_share_stops,
            backlogged: d.recv_backlogged,
            starved: d.pool_starved,
            pressure_stops: d.pool_pressure_stops,
            reclaimed: d.pool_reclaimed,
        }
    }

    /// Counts added, the peak the highest.
    fn and(self, o: PoolReport) -> PoolReport {
        PoolReport {
            total: self.total.max(o.total),
            grown: self.grown + o.grown,
            share: self.share.min(o.share),
            peak_pinned: self.peak_pinned.max(o.peak_pinned),
            share_stops: self.share_stops + o.share_stops,
            backlogged: self.backlogged + o.backlogged,
            starved: self.starved + o.starved,
            pressure_stops: self.pressure_stops + o.pressure_stops,
            reclaimed: self.reclaimed + o.reclaimed,
        }
    }

    /// Every core's counters, read on each core; `None` if a core is gone.
    pub(crate) fn collect(rt: &Runtime) -> Option<PoolReport> {
        let cores = rt
            .handle()
            .spawn_on_each(|_| async { PoolReport::of_core(driver_stats(), pool_stats()) });
        rt.block_on(async move {
            let mut sum: Option<PoolReport> = None;
            for c in cores {
                let r = c.await.ok()?;
                sum = Some(sum.map_or(r, |s| s.and(r)));
            }
            sum
        })
    }
}

impl std::fmt::Display for PoolReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let share = match self.share {
            usize::MAX => "off".to_string(),
            n => n.to_string(),
        };
        write!(
            f,
            "peak_pinned {} of {} grown {} share {share} share_stops {} backlogged {} \
             starved {} pressure_stops {} reclaimed {}",
            self.peak_pinned,
            self.total,
            self.grown,
            self.share_stops,
            self.backlogged,
            self.starved,
            self.pressure_stops,
            self.reclaimed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_add_up_and_the_peak_is_the_highest() {
        let a = PoolReport {
            total: 64,
            grown: 1,
            share: 8,
            peak_pinned: 9,
            share_stops: 3,
            backlogged: 4,
            starved: 1,
            pressure_stops: 2,
            reclaimed: 10,
        };
        let b = PoolReport {
            peak_pinned: 17,
            share: usize::MAX,
            ..a
        };
        let s = a.and(b);
        assert_eq!((s.peak_pinned, s.share_stops, s.reclaimed), (17, 6, 20));
        assert_eq!(
            PoolReport {
                share: usize::MAX,
                ..s
            }
            .to_string(),
            "peak_pinned 17 of 64 grown 2 share off share_stops 6 backlogged 8 starved 2 \
             pressure_stops 4 reclaimed 20"
        );
    }

    #[test]
    fn a_runtime_reports_its_pool() {
        let rt = Runtime::builder().worker_threads(2).build().unwrap();
        let r = PoolReport::collect(&rt).expect("both cores answer");
        assert_eq!((r.total, r.share), (128, 16));
        assert_eq!(
            (r.peak_pinned, r.pressure_stops),
            (0, 0),
            "nothing received"
        );
    }
}
