//! One connection slot of the closed- and open-loop shapes: a loop that opens a
//! connection, runs exchanges on it until its quota is done or it breaks, and opens
//! the next, until the budget is spent (the deadline, if any, cuts it from outside).
//!
//! With `-x N` a connection claims its N requests when it opens, so that the number of
//! connections is exactly `ceil(requests / N)`; otherwise requests are claimed one
//! pipeline batch at a time.

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::core_phase::CorePhase;
use super::http::Outcome;
use super::pacer::Pacer;
use super::session::Session;
use crate::config::Shape;

/// Pause after a failed connect, so a dead server is not hammered in a hot loop.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// Runs slot `slot` (numbered over all cores) until the budget is spent.
pub(super) async fn run(phase: Rc<CorePhase>, slot: usize) {
    let plan = phase.plan.clone();
    let n = plan.targets.len();
    let same_origin = plan
        .targets
        .iter()
        .all(|t| t.addr == plan.targets[0].addr && t.scheme == plan.targets[0].scheme);
    let depth = plan.pipeline as u64;
    let mut url = slot % n;
    let mut pacer = match plan.shape {
        Shape::Open { rate } => Some(Pacer::new(
            phase.start,
            slot,
            plan.connections,
            rate,
            plan.pipeline,
        )),
        _ => None,
    };
    let mut held = 0u64;
    loop {
        if phase.fatal.borrow().is_some() {
            return;
        }
        match plan.per_connection {
            Some(x) => held = phase.claim(x),
            None if held == 0 => held = phase.claim(depth),
            None => {}
        }
        if held == 0 {
            return;
        }
        // In open loop (and with -x) the connect is part of the first request's time.
        let mut first_intended = next_intended(&mut pacer).await;
        if first_intended.is_none() && plan.per_connection.is_some() {
            // Connection churn: the first request of a connection pays for opening it.
            first_intended = Some(Instant::now());
        }
        let target = if same_origin { 0 } else { url };
        let Some(mut session) = Session::connect(&phase, target, slot).await else {
            held -= 1;
            if plan.per_connection.is_some() {
                phase.refund(held);
                held = 0;
            }
            ringway::time::sleep(CONNECT_BACKOFF).await;
            continue;
        };
        loop {
            if plan.per_connection.is_none() && held == 0 {
                held = phase.claim(depth);
            }
            let k = held.min(depth);
            if k == 0 {
                break;
            }
            let intended = match first_intended.take() {
                Some(t) => Some(t),
                None => next_intended(&mut pacer).await,
            };
            held -= k;
            let outcome = session.exchange(&phase, url, k as usize, intended).await;
            if same_origin {
                url = (url + k as usize) % n;
            }
            if outcome != Outcome::Open {
                break;
            }
        }
        if plan.per_connection.is_some() {
            phase.refund(held);
            held = 0;
        }
        if !same_origin {
            url = (url + 1) % n;
        }
    }
}

/// Open loop: waits for the next intended send time and returns it. Closed loop: now.
async fn next_intended(pacer: &mut Option<Pacer>) -> Option<Instant> {
    let p = pacer.as_mut()?;
    let t = p.next();
    if t > Instant::now() {
        ringway::time::sleep_until(t).await;
    }
    Some(t)
}
