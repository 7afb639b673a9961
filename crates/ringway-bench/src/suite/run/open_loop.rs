//! S9's 100%: the capacity its offered rates are shares of, taken from this run's S5
//! c50 when it ran, else from a closed-loop probe.

use std::collections::BTreeMap;

use crate::peers::canned::App;
use crate::suite::progress::Progress;
use crate::suite::registry::{LaunchCtx, PeerSpec, Service};
use crate::suite::results::{Row, RINGWAY};
use crate::suite::run::bring_up::{bring_up, stop_tree};
use crate::suite::run::env::VariantEnv;
use crate::suite::scenarios::{Chart, Shape, Variant};

/// The capacity S9's rates are shares of: ringway/uring's S5 c50 req/s from this run,
/// else the best warm-up of the first open-loop variant.
pub fn base(rows: &[Row], warmups: &BTreeMap<String, f64>) -> Option<(f64, String)> {
    if let Some(r) = rows
        .iter()
        .find(|r| r.peer == RINGWAY && r.scenario == "S5" && r.variant == "c50" && r.rps > 0.0)
    {
        return Some((
            r.rps,
            "ringway-uring's S5 c50 median req/s in this run".into(),
        ));
    }
    if let Some(r) = warmups.get(RINGWAY) {
        return Some((
            *r,
            "ringway-uring's closed-loop warm-up (50 connections) in this run".into(),
        ));
    }
    warmups
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(p, r)| {
            (
                *r,
                format!("{p}'s closed-loop warm-up (the best) in this run"),
            )
        })
}

/// Capacity for S9 when S5 did not run: a closed-loop warm-up of ringway/uring (or the
/// first peer that starts) at 50 connections.
pub fn probe(
    env: &VariantEnv,
    peers: &[PeerSpec],
    ctx: &LaunchCtx,
    progress: &Progress,
) -> Option<(f64, String)> {
    let probe = Variant {
        scenario: "S5",
        name: "c50".into(),
        title: "capacity probe".into(),
        service: Service::Http(App::Hello),
        shape: Shape::Closed {
            conns: 50,
            pipeline: 1,
        },
        default: false,
        chart: Chart::Throughput,
    };
    let mut order: Vec<&PeerSpec> = peers.iter().filter(|p| p.name == RINGWAY).collect();
    order.extend(peers.iter().filter(|p| p.name != RINGWAY));
    let mut probe_env = env.clone();
    probe_env.warmup = env.duration.max(env.warmup);
    for p in order {
        progress.set_message(format!("S9: capacity probe on {}", p.name));
        if let Ok(mut live) = bring_up(&probe_env, &probe, p, ctx) {
            stop_tree(&mut live.server);
            if let Some(r) = live.warmup_rps {
                return Some((
                    r,
                    format!(
                        "{}'s closed-loop capacity probe (50 connections) in this run",
                        p.name
                    ),
                ));
            }
        }
    }
    None
}
