//! The engine: one task per connection slot on each client core, all driven by the
//! ringway runtime (one core per client thread), measuring into core-local stats that
//! are merged when a phase ends.
//!
//! A *phase* is one timed run of the configured shape (the warm-up, or one iteration):
//! the connections and the request budget are split across cores, every core runs its
//! slots until the budget is spent or the deadline passes, and the phase returns the
//! merged measurements with its wall-clock time.

mod batch;
mod core_phase;
mod echo;
mod http;
mod pacer;
pub(crate) mod plan;
mod session;
mod slot;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ringway::Runtime;

use self::core_phase::CorePhase;
use self::plan::Plan;
use crate::config::Shape;
use crate::stats::Stats;

/// What one phase measured.
pub(crate) struct PhaseResult {
    /// Merged over cores.
    pub stats: Stats,
    /// Wall-clock time of the phase.
    pub elapsed: Duration,
    /// Why no connection could be made at all, if so.
    pub fatal: Option<String>,
}

/// `total` split over `parts`, part `i` (the first ones get the remainder).
fn share(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((i as u64) < total % parts)
}

/// Runs one phase on `rt`: `budget` request attempts at most, `duration` at most.
pub(crate) fn run_phase(
    rt: &Runtime,
    plan: &Arc<Plan>,
    budget: Option<u64>,
    duration: Option<Duration>,
    progress: &[Arc<AtomicU64>],
) -> PhaseResult {
    let cores = rt.cores();
    let handle = rt.handle();
    let start = Instant::now();
    let deadline = duration.map(|d| start + d);
    let mut first_slot = 0;
    let mut handles = Vec::with_capacity(cores);
    for (core, counter) in progress.iter().enumerate().take(cores) {
        let conns = share(plan.connections as u64, cores, core) as usize;
        let core_budget = match budget {
            // Budgets follow connections, so every core's slots have work in proportion.
            Some(n) => share_weighted(n, plan.connections, first_slot, conns),
            None => u64::MAX,
        };
        let plan = plan.clone();
        let prog = counter.clone();
        let slot0 = first_slot;
        handles.push(handle.spawn_on(core, move || {
            core_main(plan, slot0, conns, core_budget, start, deadline, prog)
        }));
        first_slot += conns;
    }
    rt.block_on(async move {
        let mut stats = Stats::default();
        let mut fatal = None;
        for h in handles {
            match h.await {
                Ok((s, f)) => {
                    stats.merge(&s);
                    fatal = fatal.or(f);
                }
                Err(e) => fatal = fatal.or(Some(format!("a client core failed: {e}"))),
            }
        }
        let fatal = if stats.connections == 0 { fatal } else { None };
        PhaseResult {
            stats,
            elapsed: start.elapsed(),
            fatal,
        }
    })
}

/// The part of `total` that belongs to slots `first..first + count` of `slots`, such
/// that the parts of consecutive ranges add up to `total` exactly.
fn share_weighted(total: u64, slots: usize, first: usize, count: usize) -> u64 {
    let upto = |s: usize| (total as u128 * s as u128 / slots as u128) as u64;
    upto(first + count) - upto(first)
}

async fn core_main(
    plan: Arc<Plan>,
    first_slot: usize,
    conns: usize,
    budget: u64,
    start: Instant,
    deadline: Option<Instant>,
    progress: Arc<AtomicU64>,
) -> (Stats, Option<String>) {
    let phase = CorePhase::new(plan, budget, start, progress);
    let c = phase.clone();
    let work = async move {
        match c.plan.shape {
            Shape::Batch { size } => batch::run(c.clone(), size).await,
            _ => {
                let tasks: Vec<_> = (0..conns)
                    .map(|i| ringway::spawn(slot::run(c.clone(), first_slot + i)))
                    .collect();
                for t in tasks {
                    let _ = t.await;
                }
            }
        }
    };
    match deadline {
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            // Dropping the work at the deadline cancels every request still in flight:
            // they are neither completed nor failed.
            let _ = ringway::time::timeout(left, work).await;
        }
        None => work.await,
    }
    let stats = phase.stats.replace(Stats::default());
    let fatal = phase.fatal.borrow_mut().take();
    (stats, fatal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for total in [0u64, 1, 7, 100, 1001] {
            for parts in 1..5 {
                let sum: u64 = (0..parts).map(|i| share(total, parts, i)).sum();
                assert_eq!(sum, total);
            }
            let slots = 7;
            let sum: u64 = [(0, 3), (3, 2), (5, 2)]
                .iter()
                .map(|&(f, c)| share_weighted(total, slots, f, c))
                .sum();
            assert_eq!(sum, total);
        }
    }
}
