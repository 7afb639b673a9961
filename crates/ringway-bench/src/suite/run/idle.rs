//! The idle-connections scenario (S12): RSS per idle keep-alive connection and what
//! holding them does to the p99 of a loaded 50.
//!
//! Per peer, in turn (10,000 idle connections to every peer of the run at once would be
//! 10,000 sockets times the peers): a baseline round without idle connections, the RSS
//! of the server's process tree, then `idle-conns` opens the idle connections (one
//! request each, so the server has set up what it keeps per connection) on the client
//! cores, the RSS again, and the rounds run while they are held. RSS per connection is
//! the difference over the count; the baseline p99 is kept beside (`p99_without_idle_us`).

use std::time::Duration;

use crate::measure::process::{Stream, Watched};
use crate::measure::procstat::read_tree_rss_kib;
use crate::suite::progress::Progress;
use crate::suite::registry::{LaunchCtx, PeerSpec};
use crate::suite::run::bring_up::{bring_up, stop_tree};
use crate::suite::run::env::VariantEnv;
use crate::suite::run::round::measure;
use crate::suite::run::variant::{steps, VariantOutcome};
use crate::suite::scenarios::{Shape, Variant};

/// Starts `idle-conns` on the client cores and waits until it holds `idle` connections
/// to `port`.
fn hold_idle(env: &VariantEnv, port: u16, idle: usize) -> Result<Watched, String> {
    let argv = vec![
        env.bin_dir.join("idle-conns").display().to_string(),
        "--addr".into(),
        format!("127.0.0.1:{port}"),
        "--conns".into(),
        idle.to_string(),
    ];
    let mut holder = Watched::spawn_in(Some(&env.client_cpus), &argv, &[], None)
        .map_err(|e| format!("cannot start idle-conns: {e}"))?;
    let held = holder.wait_for_line(
        Stream::Stdout,
        |l| l.starts_with("holding"),
        Duration::from_secs(120),
    );
    if held.is_err() {
        let tail = holder.stderr_tail();
        let _ = holder.stop(Duration::from_secs(2));
        return Err(format!("the idle connections could not be opened: {tail}"));
    }
    Ok(holder)
}

/// Runs S12 for every peer, one after the other.
pub fn run(
    env: &VariantEnv,
    v: &Variant,
    peers: &[PeerSpec],
    ctx: &LaunchCtx,
    progress: &Progress,
) -> VariantOutcome {
    let mut out = VariantOutcome::default();
    let Shape::Idle { idle, .. } = v.shape else {
        return out;
    };
    for peer in peers {
        progress.set_message(format!(
            "{}: {} with {idle} idle connections",
            v.id(),
            peer.name
        ));
        let live = match bring_up(env, v, peer, ctx) {
            Ok(l) => l,
            Err(nm) => {
                out.not_measured.push(nm);
                progress.inc(steps(env, v, 1));
                continue;
            }
        };
        progress.inc(1);
        let mut lives = vec![live];
        let baseline = measure(env, v, &mut lives, 0, 0);
        let before = read_tree_rss_kib(lives[0].server.proc.pid());
        let mut holder = match hold_idle(env, lives[0].server.port, idle) {
            Ok(h) => h,
            Err(e) => {
                progress.println(format!("  {} {}: {e}", v.id(), peer.name));
                stop_tree(&mut lives[0].server);
                continue;
            }
        };
        let after = read_tree_rss_kib(lives[0].server.proc.pid());
        if let (Ok(b), Ok(a)) = (before, after) {
            out.rss_per_conn_kib.insert(
                peer.name.to_string(),
                a.saturating_sub(b) as f64 / idle as f64,
            );
        }
        for round in 1..=env.rounds {
            let mut r = measure(env, v, &mut lives, 0, round);
            if baseline.ok {
                r.extra
                    .insert("p99_without_idle_us".into(), baseline.latency_us.p99);
            }
            out.rounds.push(r);
            progress.inc(1);
        }
        let _ = holder.stop(Duration::from_secs(2));
        stop_tree(&mut lives[0].server);
        if env.syscalls {
            progress.inc(1);
        }
    }
    out
}
