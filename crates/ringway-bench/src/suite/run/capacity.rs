//! Capacity at a latency bound: for each HTTP peer, the highest offered rate at which
//! its p99 stays under 1 ms (and under 10 ms), S5-shaped (50 connections, hello), found
//! by stepping the open-loop rate up.
//!
//! Every peer is up at once and the steps are interleaved (step 1 of every peer, then
//! step 2, ...), so a slow minute of the host lands on all of them. A step is one
//! open-loop window of `ringway load -R RATE`, latency timed from each request's
//! intended send time. A window that holds a host stall ([`crate::measure::stalls`]) is
//! run again once; if it stalls again it is kept, shown, and not used. A peer stops
//! stepping when its p99 passes 10 ms in a stall-free window or it cannot keep up with
//! the offered rate (it completes less than [`KEEP_UP`] of it). Its capacity at a bound
//! is the highest rate of the stall-free steps that stayed under the bound with every
//! stall-free step below it under the bound too.

use crate::suite::progress::Progress;
use crate::suite::registry::{LaunchCtx, PeerSpec};
use crate::suite::results::{Capacity, Round};
use crate::suite::run::bring_up::{bring_up, stop_tree};
use crate::suite::run::env::{Live, VariantEnv};
use crate::suite::run::round::measure;
use crate::suite::run::variant::VariantOutcome;
use crate::suite::scenarios::{Shape, Variant};

/// The offered rates, in percent of the run's capacity base (ringway's S5 c50).
pub const STEPS: &[u32] = &[10, 25, 40, 55, 70, 85, 100, 115];
/// A peer keeps up when it completes at least this share of the offered rate.
pub const KEEP_UP: f64 = 0.95;
/// The two bounds, microseconds.
pub const BOUNDS_US: [f64; 2] = [1_000.0, 10_000.0];

/// The highest stall-free rate under `bound_us`, every stall-free step below it under
/// the bound as well; `rounds` are one peer's steps.
pub fn at_bound(rounds: &[&Round], bound_us: f64) -> Option<f64> {
    let mut steps: Vec<(f64, f64, bool)> = rounds
        .iter()
        .filter(|r| r.ok && !r.stalled)
        .filter_map(|r| {
            let offered = *r.extra.get("offered_rps")?;
            let kept_up = r.rps >= KEEP_UP * offered;
            Some((offered, r.latency_us.p99, kept_up))
        })
        .collect();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut best = None;
    for (offered, p99, kept_up) in steps {
        if p99 >= bound_us || !kept_up {
            break;
        }
        best = Some(offered);
    }
    best
}

/// The capacity of `peer` from its steps.
pub fn capacity(peer: &str, rounds: &[Round]) -> Capacity {
    let mine: Vec<&Round> = rounds.iter().filter(|r| r.peer == peer).collect();
    Capacity {
        peer: peer.to_string(),
        at_1ms: at_bound(&mine, BOUNDS_US[0]),
        at_10ms: at_bound(&mine, BOUNDS_US[1]),
        steps: mine.len(),
        stalled_steps: mine.iter().filter(|r| r.stalled).count(),
    }
}

/// The variant of one step (an open loop at `percent` of the base).
fn step_variant(v: &Variant, percent: u32) -> Variant {
    let conns = v.shape.connections();
    Variant {
        shape: Shape::Open { conns, percent },
        ..v.clone()
    }
}

/// `true` when a peer that gave `r` at this step should not be offered more.
fn saturated(r: &Round) -> bool {
    let offered = r.extra.get("offered_rps").copied().unwrap_or(0.0);
    !r.ok || (!r.stalled && (r.latency_us.p99 >= BOUNDS_US[1] || r.rps < KEEP_UP * offered))
}

/// Runs the capacity search of `v` (an S9-shaped variant) for every peer.
pub fn run(
    env: &VariantEnv,
    v: &Variant,
    peers: &[PeerSpec],
    ctx: &LaunchCtx,
    progress: &Progress,
) -> VariantOutcome {
    let mut out = VariantOutcome::default();
    let mut lives: Vec<Live> = Vec::new();
    for peer in peers {
        progress.set_message(format!("{}: starting {}", v.id(), peer.name));
        match bring_up(env, v, peer, ctx) {
            Ok(live) => lives.push(live),
            Err(nm) => out.not_measured.push(nm),
        }
        progress.inc(1);
    }
    let mut going = vec![true; lives.len()];
    for (n, &percent) in STEPS.iter().enumerate() {
        let step = step_variant(v, percent);
        for i in 0..lives.len() {
            if !going[i] {
                continue;
            }
            progress.set_message(format!("{}: {percent}% {}", v.id(), lives[i].peer.name));
            let mut r = measure(env, &step, &mut lives, i, n + 1);
            if r.stalled {
                r = measure(env, &step, &mut lives, i, n + 1);
            }
            r.variant = v.name.clone();
            going[i] = !saturated(&r);
            out.rounds.push(r);
        }
        progress.inc(1);
    }
    for live in &mut lives {
        stop_tree(&mut live.server);
    }
    out
}

/// Steps [`run`] reports to the progress display.
pub fn steps(peers: usize) -> u64 {
    (peers + STEPS.len()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::results::LatencyUs;

    fn step(offered: f64, rps: f64, p99: f64, stalled: bool) -> Round {
        Round {
            peer: "x".into(),
            ok: true,
            rps,
            stalled,
            latency_us: LatencyUs {
                p99,
                ..LatencyUs::default()
            },
            extra: [("offered_rps".to_string(), offered)].into(),
            ..Round::default()
        }
    }

    #[test]
    fn capacity_is_the_last_rate_under_the_bound_before_the_first_over_it() {
        let rounds = vec![
            step(10_000.0, 10_000.0, 300.0, false),
            step(20_000.0, 20_000.0, 700.0, false),
            // A host stall: shown, not used (its 40 ms tail does not end the search).
            step(30_000.0, 30_000.0, 40_000.0, true),
            step(40_000.0, 39_900.0, 900.0, false),
            step(50_000.0, 49_000.0, 4_000.0, false),
            step(60_000.0, 59_000.0, 800.0, false),
            step(70_000.0, 50_000.0, 9_000.0, false),
        ];
        let c = capacity("x", &rounds);
        // 60k is under 1 ms again, but 50k was over it: the bound held up to 40k.
        assert_eq!(c.at_1ms, Some(40_000.0));
        // 70k could not be kept up with (50k of 70k).
        assert_eq!(c.at_10ms, Some(60_000.0));
        assert_eq!((c.steps, c.stalled_steps), (7, 1));
        assert!(saturated(&rounds[6]));
        assert!(
            !saturated(&rounds[2]),
            "a stalled window does not end the search"
        );
        assert_eq!(capacity("nobody", &rounds).at_1ms, None);
    }
}
