//! One client core's part of a phase: what the connections of that core share (the
//! plan, the core's measurements, its share of the request budget, the phase's start). Everything here is core-local
//! (`Rc`, `Cell`), so the request path touches no atomics but the progress counter,
//! which only this core writes.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::plan::Plan;
use crate::config::Shape;
use crate::error::RequestFailure;
use crate::stats::{record, Stats};

/// One client core's part of a phase, shared by that core's connection tasks (see the
/// [module docs](self)).
pub(super) struct CorePhase {
    /// The run's plan.
    pub plan: Arc<Plan>,
    /// This core's measurements.
    pub stats: RefCell<Stats>,
    /// Request attempts this core may still start (`u64::MAX`: unlimited).
    budget: Cell<u64>,
    /// When the phase started (open-loop schedules count from here).
    pub start: Instant,
    /// Completed requests, read by the progress bar.
    pub progress: Arc<AtomicU64>,
    /// Request bytes per URL, this core's own copies (their reference counts stay here).
    pub requests: Vec<Bytes>,
    /// `pipeline` requests back to back, one buffer per first URL (pipelining only).
    batches: Vec<Bytes>,
    /// Whether any connection of this core ever succeeded.
    pub ever_connected: Cell<bool>,
    /// A connect error before any connection succeeded: the run cannot work; stop.
    pub fatal: RefCell<Option<String>>,
}

impl CorePhase {
    /// This core's part of a phase: `budget` request attempts, counted from `start`.
    pub(super) fn new(
        plan: Arc<Plan>,
        budget: u64,
        start: Instant,
        progress: Arc<AtomicU64>,
    ) -> Rc<Self> {
        let requests = plan
            .requests
            .iter()
            .map(|r| Bytes::copy_from_slice(r))
            .collect::<Vec<Bytes>>();
        let depth = plan.pipeline;
        let batches = if depth > 1 {
            (0..requests.len())
                .map(|first| concat(&requests, first, depth))
                .collect()
        } else {
            Vec::new()
        };
        Rc::new(CorePhase {
            plan,
            stats: RefCell::new(Stats::default()),
            budget: Cell::new(budget),
            start,
            progress,
            requests,
            batches,
            ever_connected: Cell::new(false),
            fatal: RefCell::new(None),
        })
    }

    /// Takes up to `want` request attempts from the budget; 0 when it is spent.
    pub(super) fn claim(&self, want: u64) -> u64 {
        let left = self.budget.get();
        if left == u64::MAX {
            return want;
        }
        let got = left.min(want);
        self.budget.set(left - got);
        got
    }

    /// Gives back attempts claimed but not used.
    pub(super) fn refund(&self, n: u64) {
        let left = self.budget.get();
        if left != u64::MAX {
            self.budget.set(left + n);
        }
    }

    /// Counts `n` failed request attempts of `class`.
    pub(super) fn fail(&self, class: RequestFailure, n: usize) {
        self.stats.borrow_mut().errors.add(class, n as u64);
        let done = self.progress.load(Ordering::Relaxed);
        self.progress.store(done + n as u64, Ordering::Relaxed);
    }

    /// Records a completed request: latency from `intended` (and, in open loop, from
    /// `sent` as well) to `now` (when its last bytes arrived), its status if it has
    /// one, and whether its body was right.
    pub(super) fn complete(
        &self,
        intended: Instant,
        sent: Instant,
        now: Instant,
        status: Option<u16>,
        ok: bool,
    ) {
        let mut s = self.stats.borrow_mut();
        record(&mut s.latency, now.saturating_duration_since(intended));
        if matches!(self.plan.shape, Shape::Open { .. }) {
            record(&mut s.uncorrected, now.saturating_duration_since(sent));
        }
        s.requests += 1;
        if let Some(code) = status {
            s.status(code);
        }
        if !ok {
            s.errors.add(RequestFailure::Body, 1);
        }
        drop(s);
        // Only this core writes its counter: a plain store, no read-modify-write.
        let done = self.progress.load(Ordering::Relaxed);
        self.progress.store(done + 1, Ordering::Relaxed);
    }

    /// The bytes of `k` requests starting at URL `first` (round-robin).
    pub(super) fn request_bytes(&self, first: usize, k: usize) -> Bytes {
        let n = self.requests.len();
        if k == 1 {
            return self.requests[first % n].clone();
        }
        if k == self.plan.pipeline {
            return self.batches[first % n].clone();
        }
        concat(&self.requests, first, k)
    }
}

fn concat(requests: &[Bytes], first: usize, k: usize) -> Bytes {
    let mut out = Vec::new();
    for i in 0..k {
        out.extend_from_slice(&requests[(first + i) % requests.len()]);
    }
    Bytes::from(out)
}
