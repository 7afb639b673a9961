//! The batch shape: `size` requests at once, one per connection, wait for all of them,
//! record the batch's time, repeat. Connections persist between batches unless `-x`
//! says otherwise (`-x 1`: fresh connections for every batch).

use std::rc::Rc;
use std::time::Instant;

use super::core_phase::CorePhase;
use super::http::Outcome;
use super::session::Session;
use crate::stats::record;

/// Runs batches until the budget is spent (the deadline, if any, cuts it from outside).
pub(super) async fn run(phase: Rc<CorePhase>, size: usize) {
    let mut sessions: Vec<Option<(Session, u64)>> = (0..size).map(|_| None).collect();
    loop {
        if phase.fatal.borrow().is_some() {
            return;
        }
        let k = phase.claim(size as u64) as usize;
        if k == 0 {
            return;
        }
        let t0 = Instant::now();
        let handles: Vec<_> = (0..k)
            .map(|i| ringway::spawn(one(phase.clone(), sessions[i].take(), i)))
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            sessions[i] = h.await.ok().flatten();
        }
        record(&mut phase.stats.borrow_mut().batches, t0.elapsed());
    }
}

/// One request of a batch on connection `i` (opened if needed). Returns the
/// connection, with the requests it has carried, if it may carry more.
async fn one(phase: Rc<CorePhase>, s: Option<(Session, u64)>, i: usize) -> Option<(Session, u64)> {
    let n = phase.plan.targets.len();
    let t0 = Instant::now();
    let (mut session, used) = match s {
        Some(s) => s,
        None => (Session::connect(&phase, i % n, i).await?, 0),
    };
    match session.exchange(&phase, i % n, 1, Some(t0)).await {
        Outcome::Open => {
            let used = used + 1;
            match phase.plan.per_connection {
                Some(x) if used >= x => None,
                _ => Some((session, used)),
            }
        }
        Outcome::Closed | Outcome::Failed => None,
    }
}
