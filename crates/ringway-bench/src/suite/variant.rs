//! Running one scenario variant: every peer started fresh, checked, warmed up, then
//! measured round by round with the peers interleaved (A B C A B C), then its syscalls
//! counted in a run of its own.
//!
//! All the variant's servers live on the server cores at once, idle but for the one
//! being measured; the CPU the idle ones use meanwhile is recorded with each round
//! (`others_cpu_share`), so a server that does not stay quiet when idle shows.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::canned::App;
use crate::procstat::{process_tree, read_tree_cpu_ns};
use crate::server::{self, RunningServer, KILL_GRACE};
use crate::suite::client::{self, ClientRun, Sizing};
use crate::suite::conformance;
use crate::suite::peers::{Launch, PeerSpec, Service};
use crate::suite::results::{LatencyUs, NotMeasured, Round};
use crate::suite::scenarios::{Shape, Variant};
use crate::suite::syscalls::PerfCounter;
use crate::suite::Progress;

pub mod idle;

/// What a variant needs from the run.
#[derive(Debug, Clone)]
pub struct VariantEnv {
    /// The `ringway` binary (the client is `ringway load`).
    pub ringway: PathBuf,
    /// Server CPU list.
    pub server_cpus: String,
    /// Client CPU list.
    pub client_cpus: String,
    /// Seconds per round.
    pub duration: f64,
    /// Warm-up seconds.
    pub warmup: f64,
    /// Rounds.
    pub rounds: usize,
    /// Clean-round threshold.
    pub clean_share: f64,
    /// Count syscalls (perf is here and not turned off).
    pub syscalls: bool,
    /// Scratch directory.
    pub work_dir: PathBuf,
    /// Offered rate of 100% for open-loop shapes.
    pub open_loop_base: Option<f64>,
    /// Directory of the helper binaries (`hostile-client`, `idle-conns`).
    pub bin_dir: PathBuf,
    /// Cross-check S5 c50 with wrk (wrk is here and not turned off).
    pub wrk: bool,
}

/// A peer of the variant whose server is up.
#[derive(Debug)]
pub struct Live {
    /// The peer.
    pub peer: PeerSpec,
    /// Its server.
    pub server: RunningServer,
    /// req/s of its warm-up.
    pub warmup_rps: Option<f64>,
    /// Its response size from the conformance check.
    pub response_bytes: Option<usize>,
}

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
}

fn not_measured(v: &Variant, peer: &str, status: &str, reason: String) -> NotMeasured {
    NotMeasured {
        peer: peer.to_string(),
        scenario: v.scenario.to_string(),
        variant: v.name.clone(),
        status: status.to_string(),
        reason,
    }
}

/// Stops a server and anything it started (nginx's workers), by pid.
pub fn stop_tree(server: &mut RunningServer) {
    let tree = process_tree(server.proc.pid());
    let _ = server.proc.stop(KILL_GRACE);
    for pid in tree.into_iter().skip(1) {
        // Only processes that descend from our own child: nginx workers whose master
        // was killed before it could stop them.
        let _ = crate::process::send_signal(pid, libc::SIGKILL);
    }
}

/// Starts, checks and warms up one peer; `Err` says why it is not measured.
pub fn bring_up(
    env: &VariantEnv,
    v: &Variant,
    peer: &PeerSpec,
    ctx: &crate::suite::peers::LaunchCtx,
) -> Result<Live, NotMeasured> {
    let spec = match (peer.launch)(ctx, v.service) {
        Launch::Run(spec) => spec,
        Launch::NotApplicable(why) => {
            return Err(not_measured(v, peer.name, "not applicable", why.into()))
        }
        Launch::Unavailable(why) => return Err(not_measured(v, peer.name, "unavailable", why)),
    };
    let mut server = server::start(&spec, Some(&env.server_cpus))
        .map_err(|e| not_measured(v, peer.name, "failed to start", e))?;
    let check = match v.service {
        Service::Http(app) => {
            conformance::check_http(server.addr(), app, peer.deviations).map(|c| Some(c.size))
        }
        Service::Python(p) if p.is_http() => {
            conformance::check_http(server.addr(), App::Hello, peer.deviations)
                .map(|c| Some(c.size))
        }
        Service::Echo | Service::Python(_) => conformance::check_echo(server.addr()).map(|_| None),
        // The TLS server is the same program as the plain one, checked in the HTTP
        // scenarios; the load's own framing checks every response here.
        Service::Tls => Ok(None),
    };
    let response_bytes = match check {
        Ok(size) => size,
        Err(e) => {
            stop_tree(&mut server);
            return Err(not_measured(v, peer.name, "failed conformance", e));
        }
    };
    let mut live = Live {
        peer: peer.clone(),
        server,
        warmup_rps: None,
        response_bytes,
    };
    let sizing = Sizing {
        seconds: env.warmup,
        warmup_rps: None,
        rate: None,
    };
    let args = client::load_args(v.service, &v.shape, live.server.port, sizing, true);
    match client::run(&env.ringway, Some(&env.client_cpus), &args, limit(env)) {
        Ok(run) => live.warmup_rps = Some(run.report.rps),
        Err(e) => {
            stop_tree(&mut live.server);
            return Err(not_measured(v, peer.name, "failed warm-up", e));
        }
    }
    Ok(live)
}

fn limit(env: &VariantEnv) -> Duration {
    Duration::from_secs_f64(env.duration.max(env.warmup) * 3.0 + 60.0)
}

/// The sizing of a measured round of `live`.
pub fn sizing(env: &VariantEnv, v: &Variant, live: &Live) -> Sizing {
    Sizing {
        seconds: env.duration,
        warmup_rps: live.warmup_rps,
        rate: match v.shape {
            Shape::Open { percent, .. } => {
                env.open_loop_base.map(|b| b * f64::from(percent) / 100.0)
            }
            _ => None,
        },
    }
}

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
    let others_cpu = || -> u64 {
        others
            .iter()
            .map(|p| read_tree_cpu_ns(*p).unwrap_or(0))
            .sum()
    };
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
        Shape::Hostile { .. } => match hostile_start(env, live.server.port) {
            Ok(h) => Some(h),
            Err(e) => {
                r.error = Some(e);
                return r;
            }
        },
        _ => None,
    };
    let others_before = others_cpu();
    let before = read_tree_cpu_ns(pid);
    let run = client::run(&env.ringway, Some(&env.client_cpus), &args, limit(env));
    let after = read_tree_cpu_ns(pid);
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
        after.saturating_sub(before),
        others_after.saturating_sub(others_before),
    );
    r
}

/// Starts the hostile client of S13 beside the load.
fn hostile_start(env: &VariantEnv, port: u16) -> Result<crate::process::Watched, String> {
    let bin = env.bin_dir.join("hostile-client");
    let argv = vec![
        bin.display().to_string(),
        "--addr".into(),
        format!("127.0.0.1:{port}"),
        "--duration".into(),
        env.duration.to_string(),
    ];
    crate::process::Watched::spawn_in(Some(&env.client_cpus), &argv, &[], None).map_err(|e| {
        format!(
            "cannot start {}: {e} (cargo build --release -p ringway-bench)",
            bin.display()
        )
    })
}

/// Waits for the hostile client and returns its counts.
fn hostile_finish(mut h: crate::process::Watched) -> Result<BTreeMap<String, f64>, String> {
    use crate::process::{Event, Stream};
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
    if let Shape::Open { .. } = shape {
        if let Some(rate) = sizing_rate(env, shape) {
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

fn sizing_rate(env: &VariantEnv, shape: &Shape) -> Option<f64> {
    match shape {
        Shape::Open { percent, .. } => env.open_loop_base.map(|b| b * f64::from(*percent) / 100.0),
        _ => None,
    }
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
    ctx: &crate::suite::peers::LaunchCtx,
    progress: &Progress,
) -> VariantOutcome {
    let mut out = VariantOutcome::default();
    let mut lives: Vec<Live> = Vec::new();
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
    if env.syscalls {
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
    }
    if env.wrk && v.scenario == "S5" && v.name == "c50" {
        for live in &lives {
            progress.set_message(format!("{}: wrk cross-check of {}", v.id(), live.peer.name));
            match crate::suite::wrk::cross_check(env, v, live) {
                Ok(w) => out.wrk.push(w),
                Err(e) => progress.println(format!("  wrk cross-check of {}: {e}", live.peer.name)),
            }
            progress.inc(1);
        }
    }
    for live in &mut lives {
        stop_tree(&mut live.server);
    }
    out
}

/// Steps [`run_variant`] reports to the progress display for `peers` peers in `v`.
pub fn steps(env: &VariantEnv, v: &Variant, peers: usize) -> u64 {
    let wrk = env.wrk && v.scenario == "S5" && v.name == "c50";
    (peers * (1 + env.rounds + usize::from(env.syscalls) + usize::from(wrk))) as u64
}
