//! One measured round of one peer: a client run on the client cores, the server's CPU
//! (its process tree, and the interrupt work its core did in the stall sleeper's time)
//! over it, the CPU the variant's idle servers used meanwhile, and S13's hostile client
//! beside the load.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::measure::launch::KILL_GRACE;
use crate::measure::process::Watched;
use crate::measure::procstat::{
    clock_ticks_per_second, read_cpu_steal, read_cpus_busy, read_tree_cpu_ns,
};
use crate::measure::stalls::summarize;
use crate::suite::registry::nginx::cpu_list;
use crate::suite::results::{LatencyUs, Round, CONTENDED_SHARE};
use crate::suite::run::client::{self, ClientRun};
use crate::suite::run::env::{limit, open_rate, sizing, Live, VariantEnv};
use crate::suite::scenarios::{Shape, Variant};

/// Measures one round of `lives[i]`.
pub fn measure(env: &VariantEnv, v: &Variant, lives: &mut [Live], i: usize, round: usize) -> Round {
    let mut r = Round {
        peer: lives[i].peer.name.to_string(),
        scenario: v.scenario.to_string(),
        variant: v.name.clone(),
        round,
        ..Round::default()
    };
    let others: Vec<u32> = lives
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, l)| l.server.proc.pid())
        .collect();
    let others_cpu = || cpu_of(&others);
    let live = &mut lives[i];
    let pid = live.server.proc.pid();
    let args = client::load_args(
        v.service,
        &v.shape,
        live.server.port,
        sizing(env, v, live),
        false,
    );
    let hostile = match v.shape {
        Shape::Hostile { upload_mb, .. } => match hostile_start(env, live.server.port, upload_mb) {
            Ok(h) => Some(h),
            Err(e) => {
                r.error = Some(e);
                return r;
            }
        },
        _ => None,
    };
    let others_before = others_cpu();
    let sleepers_before = Sleepers::read(env);
    let before = read_tree_cpu_ns(pid);
    let host = HostWindow::open(env);
    let run = client::run(&env.ringway, Some(&env.client_cpus), &args, limit(env));
    let after = read_tree_cpu_ns(pid);
    let sleepers = Sleepers::read(env).since(sleepers_before);
    let busy = host.close(env, &mut r);
    let others_after = others_cpu();
    if let Some(h) = hostile {
        match hostile_finish(h) {
            Ok(counts) => r.extra.extend(counts),
            Err(e) => {
                r.error = Some(e);
                return r;
            }
        }
    }
    if !live.server.alive() {
        r.error = Some(format!(
            "the server died: {}",
            live.server.proc.stderr_tail()
        ));
        return r;
    }
    let run: ClientRun = match run {
        Ok(run) => run,
        Err(e) => {
            r.error = Some(e);
            return r;
        }
    };
    let (Ok(before), Ok(after)) = (before, after) else {
        r.error = Some("could not read the server's CPU time from /proc".into());
        return r;
    };
    fill(
        &mut r,
        env,
        &v.shape,
        &run,
        after.saturating_sub(before) + sleepers.server_ns,
        others_after.saturating_sub(others_before),
    );
    r.sleeper_cpu_ms = sleepers.server_ns as f64 / 1e6;
    if let Some(busy) = busy {
        // The sleepers on the client's cores are the instrument's, not foreign.
        let ours = r.server_cpu_s
            + run.cpu.as_secs_f64()
            + r.others_cpu_share * run.wall.as_secs_f64()
            + sleepers.client_ns as f64 / 1e9;
        judge_contention(&mut r, busy, ours, env.watched_cpus.len());
    }
    r
}

/// The stall sleepers' CPU time (see `measure::stalls`), on the server's cores and on
/// the client's. On the server's it is charged to the server: mostly interrupt work the
/// kernel did for the server's traffic while a sleeper happened to be current.
#[derive(Debug, Clone, Copy, Default)]
struct Sleepers {
    server_ns: u64,
    client_ns: u64,
}

impl Sleepers {
    fn read(env: &VariantEnv) -> Sleepers {
        let Some(watch) = &env.stalls else {
            return Sleepers::default();
        };
        let server = cpu_list(&env.server_cpus);
        // A CPU both sides share (a one-CPU run) counts once, as the server's.
        let client: Vec<usize> = cpu_list(&env.client_cpus)
            .into_iter()
            .filter(|c| !server.contains(c))
            .collect();
        Sleepers {
            server_ns: watch.cpu_ns_on(&server),
            client_ns: watch.cpu_ns_on(&client),
        }
    }

    fn since(self, earlier: Sleepers) -> Sleepers {
        Sleepers {
            server_ns: self.server_ns.saturating_sub(earlier.server_ns),
            client_ns: self.client_ns.saturating_sub(earlier.client_ns),
        }
    }
}

/// Marks `r` contended when the watched CPUs were busier over its window (`busy`) than
/// the measured processes account for (`ours`, seconds), by [`CONTENDED_SHARE`] or more
/// of the `cpus` CPUs' time.
fn judge_contention(r: &mut Round, busy: BusyWindow, ours: f64, cpus: usize) {
    let foreign = (busy.busy_s - ours).max(0.0);
    r.foreign_cpu_ms = foreign * 1e3;
    r.contended = foreign >= CONTENDED_SHARE * busy.wall_s * cpus.max(1) as f64;
}

/// The watched CPUs' busy time over a round's window, and the window's length.
#[derive(Debug, Clone, Copy)]
struct BusyWindow {
    busy_s: f64,
    wall_s: f64,
}

/// What the host did around a round: the window's start and the steal of the watched
/// CPUs then.
struct HostWindow {
    start: Instant,
    steal: Option<u64>,
    busy: Option<u64>,
}

/// Steal ticks of `cpus` summed, `None` if any is unreadable.
fn steal_of(cpus: &[usize]) -> Option<u64> {
    cpus.iter().map(|&c| read_cpu_steal(c).ok()).sum()
}

impl HostWindow {
    fn open(env: &VariantEnv) -> HostWindow {
        HostWindow {
            start: Instant::now(),
            steal: steal_of(&env.watched_cpus),
            busy: read_cpus_busy(&env.watched_cpus).ok(),
        }
    }

    /// Records the window's stalls and steal in `r`; marks it stalled when a sleeper
    /// woke late or the host stole [`STEAL_STALL_MS`] or more. Returns the watched
    /// CPUs' busy time over the window, for [`judge_contention`].
    fn close(self, env: &VariantEnv, r: &mut Round) -> Option<BusyWindow> {
        let end = Instant::now();
        let busy = match (self.busy, read_cpus_busy(&env.watched_cpus)) {
            (Some(a), Ok(b)) if !env.watched_cpus.is_empty() => Some(BusyWindow {
                busy_s: b.saturating_sub(a) as f64 / clock_ticks_per_second() as f64,
                wall_s: (end - self.start).as_secs_f64(),
            }),
            _ => None,
        };
        if let Some(watch) = &env.stalls {
            let w = summarize(&watch.between(self.start, end));
            r.stall_max_ms = w.max_ms;
            r.stalls = w.count;
        }
        if let (Some(a), Some(b)) = (self.steal, steal_of(&env.watched_cpus)) {
            r.steal_ms = b.saturating_sub(a) as f64 * 1e3 / clock_ticks_per_second() as f64;
        }
        r.stalled = r.stalls > 0 || r.steal_ms >= STEAL_STALL_MS;
        busy
    }
}

/// Steal over a window (both CPUs together) that marks it stalled, milliseconds: two
/// ticks of the kernel's accounting.
pub const STEAL_STALL_MS: f64 = 20.0;

/// CPU nanoseconds of the process trees of `pids` (the variant's idle servers).
fn cpu_of(pids: &[u32]) -> u64 {
    pids.iter().map(|p| read_tree_cpu_ns(*p).unwrap_or(0)).sum()
}

/// Starts the hostile client of S13 beside the load (with its slow uploader if
/// `upload_mb > 0`).
fn hostile_start(env: &VariantEnv, port: u16, upload_mb: u32) -> Result<Watched, String> {
    let bin = env.bin_dir.join("hostile-client");
    let argv = vec![
        bin.display().to_string(),
        "--addr".into(),
        format!("127.0.0.1:{port}"),
        "--duration".into(),
        env.duration.to_string(),
        "--upload-mb".into(),
        upload_mb.to_string(),
    ];
    Watched::spawn_in(Some(&env.client_cpus), &argv, &[], None).map_err(|e| {
        format!(
            "cannot start {}: {e} (cargo build --release -p ringway-bench)",
            bin.display()
        )
    })
}

/// Waits for the hostile client and returns its counts.
fn hostile_finish(mut h: Watched) -> Result<BTreeMap<String, f64>, String> {
    use crate::measure::process::{Event, Stream};
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut json = None;
    while let Ok(ev) = h.next_event(deadline) {
        if let Event::Line(Stream::Stdout, line) = ev {
            if line.starts_with('{') {
                json = Some(line);
            }
        }
    }
    let _ = h.stop(KILL_GRACE);
    let line =
        json.ok_or_else(|| format!("the hostile client printed nothing: {}", h.stderr_tail()))?;
    let map: BTreeMap<String, f64> =
        serde_json::from_str(&line).map_err(|e| format!("hostile client output {line:?}: {e}"))?;
    Ok(map
        .into_iter()
        .map(|(k, v)| (format!("hostile_{k}"), v))
        .collect())
}

/// Fills a round from the client's report and the CPU the server used.
fn fill(
    r: &mut Round,
    env: &VariantEnv,
    shape: &Shape,
    run: &ClientRun,
    server_ns: u64,
    others_ns: u64,
) {
    let rep = &run.report;
    let wall = run.wall.as_secs_f64().max(1e-9);
    r.requests = rep.requests;
    r.duration_s = rep.duration_s;
    r.rps = rep.rps;
    r.latency_us = LatencyUs {
        p50: rep.latency_us.p50,
        p90: rep.latency_us.p90,
        p99: rep.latency_us.p99,
        p999: rep.latency_us.p999,
        max: rep.latency_us.max,
    };
    r.errors = rep
        .errors
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (k.clone(), *n))
        .collect();
    r.histogram = rep.histogram.clone();
    r.server_cpu_s = server_ns as f64 / 1e9;
    r.cpu_us_per_req = if rep.requests > 0 {
        r.server_cpu_s * 1e6 / rep.requests as f64
    } else {
        0.0
    };
    r.client_cpu_share = run.cpu.as_secs_f64() / wall;
    r.server_cpu_share = r.server_cpu_s / wall;
    r.others_cpu_share = others_ns as f64 / 1e9 / wall;
    if let Some(b) = &rep.batch_us {
        r.extra.insert("batch_us_p50".into(), b.p50);
        r.extra.insert("batch_us_p99".into(), b.p99);
    }
    if !rep.iterations.is_empty() {
        let mut ms: Vec<f64> = rep.iterations.iter().map(|i| i.duration_s * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        r.extra
            .insert("iteration_ms_median".into(), ms[ms.len() / 2]);
        r.extra.insert("iteration_ms_max".into(), ms[ms.len() - 1]);
        r.extra.insert("iterations".into(), ms.len() as f64);
    }
    if shape.open() {
        if let Some(rate) = open_rate(env, shape) {
            r.extra.insert("offered_rps".into(), rate);
            r.extra
                .insert("achieved_share".into(), rep.rps / rate.max(1e-9));
        }
    }
    r.ok = rep.requests > 0;
    if !r.ok {
        r.error = Some(format!("no request completed; errors {:?}", rep.errors));
    }
    // One side kept its core: the host did not starve both.
    r.clean =
        r.ok && (r.client_cpu_share >= env.clean_share || r.server_cpu_share >= env.clean_share);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(busy_s: f64, ours: f64) -> Round {
        let mut r = Round::default();
        let w = BusyWindow {
            busy_s,
            wall_s: 0.25,
        };
        judge_contention(&mut r, w, ours, 2);
        r
    }

    #[test]
    fn a_round_is_contended_when_the_cpus_did_work_that_is_not_ours() {
        // Server saturating its core, client at 60%: all of the busy time is ours.
        let quiet = judged(0.40, 0.40);
        assert!(!quiet.contended);
        assert_eq!(quiet.foreign_cpu_ms, 0.0);
        // The tick accounting reads a little over: within the share, not contended.
        let rounding = judged(0.43, 0.40);
        assert!(!rounding.contended, "30 ms of 500 is under 10%");
        // A build took the rest of both CPUs: 100 ms of 500 ms is foreign.
        let busy = judged(0.50, 0.40);
        assert!(busy.contended);
        assert!((busy.foreign_cpu_ms - 100.0).abs() < 1e-6);
        // Ours over the busy ticks (accounting error the other way) is not negative.
        assert_eq!(judged(0.38, 0.40).foreign_cpu_ms, 0.0);
    }
}
