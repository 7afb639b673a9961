//! Running one scenario variant: every peer started fresh, checked, warmed up, then
//! measured round by round with the peers interleaved (A B C A B C), then its syscalls
//! counted in a run of its own.
//!
//! All the variant's servers live on the server cores at once, idle but for the one
//! being measured; the CPU the idle ones use meanwhile is recorded with each round
//! (`others_cpu_share`), so a server that does not stay quiet when idle shows.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::measure::procstat::process_tree;
use crate::suite::progress::Progress;
use crate::suite::registry::{LaunchCtx, PeerSpec};
use crate::suite::results::{aggregate, fill_ratios, NotMeasured, Round, Row};
use crate::suite::run::bring_up::{bring_up, stop_tree};
use crate::suite::run::client;
use crate::suite::run::env::{limit, sizing, Live, VariantEnv};
use crate::suite::run::round::measure;
use crate::suite::run::syscalls::PerfCounter;
use crate::suite::scenarios::Variant;

/// What a variant produced.
#[derive(Debug, Default)]
pub struct VariantOutcome {
    /// Every round.
    pub rounds: Vec<Round>,
    /// Peers not measured.
    pub not_measured: Vec<NotMeasured>,
    /// Syscalls per request, and of them io_uring_enter, per peer.
    pub syscalls: BTreeMap<String, (f64, f64)>,
    /// Response sizes per peer.
    pub response_bytes: BTreeMap<String, usize>,
    /// Warm-up req/s per peer.
    pub warmup_rps: BTreeMap<String, f64>,
    /// Resident memory per idle connection, KiB, per peer (S12).
    pub rss_per_conn_kib: BTreeMap<String, f64>,
    /// The wrk cross-check (S5 c50).
    pub wrk: Vec<crate::suite::results::WrkCheck>,
    /// Seconds spent in each phase (bring-up, rounds, syscalls, wrk), in order: where
    /// the run's time budget goes.
    pub phases: Vec<(&'static str, f64)>,
}

/// Counts `live`'s syscalls over one client run of its own; per request.
pub fn count_syscalls(env: &VariantEnv, v: &Variant, live: &Live) -> Result<(f64, f64), String> {
    let pids = process_tree(live.server.proc.pid());
    let tag = format!("{}-{}", std::process::id(), live.server.port);
    let mut perf = PerfCounter::attach(&pids, &env.work_dir, &tag, Some(&env.client_cpus))?;
    let seconds = env.duration.min(0.5);
    let mut s = sizing(env, v, live);
    s.seconds = seconds;
    let args = client::load_args(v.service, &v.shape, live.server.port, s, false);
    let enabled = perf.enable();
    let run =
        enabled.and_then(|_| client::run(&env.ringway, Some(&env.client_cpus), &args, limit(env)));
    let disabled = perf.disable();
    let count = perf.finish();
    let run = run?;
    disabled?;
    let count = count?;
    let n = run.report.requests.max(1) as f64;
    Ok((count.total as f64 / n, count.io_uring_enter as f64 / n))
}

/// Runs the variant with `peers`: bring up, interleaved rounds, syscalls, stop.
pub fn run_variant(
    env: &VariantEnv,
    v: &Variant,
    peers: &[PeerSpec],
    ctx: &LaunchCtx,
    progress: &Progress,
) -> VariantOutcome {
    let mut out = VariantOutcome::default();
    let mut lives: Vec<Live> = Vec::new();
    let mut phase = Instant::now();
    let mut lap = |out: &mut VariantOutcome, name: &'static str| {
        out.phases.push((name, phase.elapsed().as_secs_f64()));
        phase = Instant::now();
    };
    for peer in peers {
        progress.set_message(format!("{}: starting {}", v.id(), peer.name));
        match bring_up(env, v, peer, ctx) {
            Ok(live) => {
                if let Some(b) = live.response_bytes {
                    out.response_bytes.insert(peer.name.to_string(), b);
                }
                if let Some(r) = live.warmup_rps {
                    out.warmup_rps.insert(peer.name.to_string(), r);
                }
                lives.push(live);
            }
            Err(nm) => {
                if nm.status != "not applicable" {
                    progress.println(format!(
                        "  {} {}: {} ({})",
                        v.id(),
                        nm.peer,
                        nm.status,
                        nm.reason
                    ));
                }
                out.not_measured.push(nm);
            }
        }
        progress.inc(1);
    }
    lap(&mut out, "bring-up");
    for round in 1..=env.rounds {
        for i in 0..lives.len() {
            progress.set_message(format!("{}: round {round} {}", v.id(), lives[i].peer.name));
            let r = measure(env, v, &mut lives, i, round);
            if let Some(e) = &r.error {
                progress.println(format!("  {} {} round {round} FAILED: {e}", v.id(), r.peer));
            }
            out.rounds.push(r);
            progress.inc(1);
        }
    }
    lap(&mut out, "rounds");
    if env.syscalls && counts_syscalls(v) {
        for live in &lives {
            progress.set_message(format!("{}: syscalls of {}", v.id(), live.peer.name));
            match count_syscalls(env, v, live) {
                Ok(per) => {
                    out.syscalls.insert(live.peer.name.to_string(), per);
                }
                Err(e) => progress.println(format!(
                    "  {} {}: syscalls not counted: {e}",
                    v.id(),
                    live.peer.name
                )),
            }
            progress.inc(1);
        }
        lap(&mut out, "syscalls");
    }
    if env.wrk && v.scenario == "S5" && v.name == "c50" {
        for live in &lives {
            progress.set_message(format!("{}: wrk cross-check of {}", v.id(), live.peer.name));
            match crate::suite::run::wrk::cross_check(env, v, live) {
                Ok(w) => out.wrk.push(w),
                Err(e) => progress.println(format!("  wrk cross-check of {}: {e}", live.peer.name)),
            }
            progress.inc(1);
        }
        lap(&mut out, "wrk");
    }
    for live in &mut lives {
        stop_tree(&mut live.server);
    }
    out
}

/// `true` for the variants whose syscalls per request are counted: the shapes where a
/// verdict can rest on counted evidence or issue 28 names a syscall goal (S4, S5, S7,
/// S8, S10 to S15); the latency shapes (S1, S9) and the client-timed ones (S2, S3, S6)
/// leave that run out, which keeps the default run in its budget.
pub fn counts_syscalls(v: &Variant) -> bool {
    !matches!(v.scenario, "S1" | "S2" | "S3" | "S6" | "S9")
}

/// Steps [`run_variant`] reports to the progress display for `peers` peers in `v`.
pub fn steps(env: &VariantEnv, v: &Variant, peers: usize) -> u64 {
    let wrk = env.wrk && v.scenario == "S5" && v.name == "c50";
    let sys = env.syscalls && counts_syscalls(v);
    (peers * (1 + env.rounds + usize::from(sys) + usize::from(wrk))) as u64
}

/// The rows of one variant, in peer order, with the wrk cross-check and the ratios to
/// ringway in the same variant.
pub fn rows(v: &Variant, peers: &[PeerSpec], outcome: &VariantOutcome) -> Vec<Row> {
    let mut rows: Vec<Row> = peers
        .iter()
        .filter_map(|p| {
            let rounds: Vec<_> = outcome.rounds.iter().filter(|r| r.peer == p.name).collect();
            if rounds.is_empty() {
                return None;
            }
            let mut row = aggregate(&rounds, &v.title);
            if let Some((s, e)) = outcome.syscalls.get(p.name) {
                row.syscalls_per_req = Some(*s);
                row.io_uring_enter_per_req = Some(*e);
            }
            row.response_bytes = outcome.response_bytes.get(p.name).copied();
            row.rss_per_conn_kib = outcome.rss_per_conn_kib.get(p.name).copied();
            row.wrk_rps = outcome
                .wrk
                .iter()
                .find(|w| w.peer == p.name)
                .map(|w| w.wrk_rps);
            Some(row)
        })
        .collect();
    fill_ratios(&mut rows);
    rows
}
