//! `ringway bench`: ringway and its peers side by side on every scenario of
//! benchmarks.md, measured by the rules written there.
//!
//! A run picks the scenario variants ([`scenarios`]) and the peers ([`peers`]), then
//! for each variant starts every peer fresh on the server cores, checks its response
//! ([`conformance`]), warms it up, and measures it round by round with the peers
//! interleaved and `ringway load` on the client cores ([`variant`]). It writes
//! `results.json` ([`results`]), prints the tables ([`terminal`]) and writes one
//! self-contained HTML report with its charts ([`html`], [`charts`]). Options add the
//! user-space instructions per request under callgrind ([`callgrind`]), a flamegraph of
//! one peer ([`profile`]) and the change against an earlier run ([`compare`]).

pub mod callgrind;
pub mod charts;
pub mod client;
pub mod compare;
pub mod conformance;
pub mod headline;
pub mod html;
pub mod meta;
pub mod nginx;
pub mod peers;
pub mod profile;
mod progress;
pub mod python;
pub mod results;
pub mod scenarios;
pub mod setup;
pub mod syscalls;
pub mod terminal;
pub mod variant;
pub mod wrk;

use std::path::PathBuf;
use std::time::Instant;

pub use progress::Progress;

use crate::suite::peers::{Launch, LaunchCtx, PeerSpec, Service};
use crate::suite::results::{fill_ratios, PeerInfo, Results, Row, RINGWAY};
use crate::suite::scenarios::{Shape, Variant};
use crate::suite::variant::{run_variant, VariantEnv};

/// Everything a run can be asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Peers (comma-separated names), or the default set.
    pub peers: Option<String>,
    /// Scenarios or variants (`S5`, `S5:c1000`), or the default ones.
    pub scenarios: Option<String>,
    /// Every variant of every scenario.
    pub full: bool,
    /// Seconds per measured round.
    pub duration: f64,
    /// Warm-up seconds per peer and variant.
    pub warmup: f64,
    /// Rounds per variant.
    pub rounds: usize,
    /// Output directory (results.json, report.html).
    pub out: PathBuf,
    /// Count user-space instructions per request under callgrind.
    pub instructions: bool,
    /// Record this peer under `perf record` and put its flamegraph in the report.
    pub profile: Option<String>,
    /// The variant the profile runs (default S5 c50, else the first selected).
    pub profile_scenario: Option<String>,
    /// An earlier results.json to compare with.
    pub compare: Option<PathBuf>,
    /// Server CPU list (`taskset -c`).
    pub server_cpus: String,
    /// Client CPU list.
    pub client_cpus: String,
    /// Clean-round threshold.
    pub clean_share: f64,
    /// Directory of `ringway` and the peer binaries.
    pub bin_dir: PathBuf,
    /// Show a progress bar on a terminal.
    pub progress: bool,
    /// Count syscalls per request (needs perf).
    pub syscalls: bool,
    /// Cross-check S5 with wrk (needs wrk).
    pub wrk: bool,
    /// The command line, recorded in the results.
    pub command: String,
}

impl Options {
    /// The defaults of `ringway bench` with no arguments: the short run.
    pub fn defaults(bin_dir: PathBuf) -> Options {
        let (server_cpus, client_cpus) = setup::default_cpus();
        Options {
            peers: None,
            scenarios: None,
            full: false,
            duration: 0.5,
            warmup: 0.25,
            rounds: 3,
            out: PathBuf::from("target/bench"),
            instructions: false,
            profile: None,
            profile_scenario: None,
            compare: None,
            server_cpus,
            client_cpus,
            clean_share: 0.9,
            bin_dir,
            progress: true,
            syscalls: true,
            wrk: true,
            command: String::new(),
        }
    }
}

/// What a finished run leaves.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Everything measured.
    pub results: Results,
    /// `results.json`.
    pub json: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
    /// The terminal tables.
    pub text: String,
}

/// The capacity S9's rates are shares of: ringway/uring's S5 c50 req/s from this run,
/// else the best warm-up of the first open-loop variant.
fn open_loop_base(
    rows: &[Row],
    warmups: &std::collections::BTreeMap<String, f64>,
) -> Option<(f64, String)> {
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

/// Runs the suite.
pub fn run(opts: &Options) -> Result<Outcome, String> {
    let started = Instant::now();
    if opts.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    if !(opts.duration > 0.0 && opts.warmup >= 0.0) {
        return Err("--duration must be positive and --warmup not negative".into());
    }
    let registry = peers::registry();
    let mut selected = peers::select(&registry, opts.peers.as_deref())?;
    let catalogue = scenarios::catalogue();
    let variants = scenarios::select(&catalogue, opts.scenarios.as_deref(), opts.full)?;
    let ringway = opts.bin_dir.join("ringway");
    if !ringway.is_file() {
        return Err(format!(
            "{} not found (the client is `ringway load`); build it: cargo build --release -p ringway-cli",
            ringway.display()
        ));
    }
    std::fs::create_dir_all(&opts.out).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    let work_dir = opts.out.join("work");
    std::fs::create_dir_all(&work_dir).map_err(|e| format!("{}: {e}", work_dir.display()))?;
    let work_dir = work_dir.canonicalize().map_err(|e| e.to_string())?;
    let static_dir = work_dir.join("static");
    setup::write_body(&static_dir)?;
    let tls = if variants.iter().any(|v| v.service == Service::Tls) {
        Some(setup::write_tls(&work_dir)?)
    } else {
        None
    };
    setup::raise_fd_limit();
    setup::pin_self(&opts.client_cpus)?;

    let tools = setup::tools();
    let present = |name: &str| tools.iter().any(|t| t.name == name && t.present);
    let mut meta = meta::machine();
    for t in tools.iter().filter(|t| !t.present) {
        let line = format!(
            "{} (for {}): install it with: {}",
            t.name, t.for_what, t.install
        );
        eprintln!("ringway bench: {line}; its column is left out");
        meta.missing_tools.push(line);
    }
    // A missing tool leaves its figure out, never faked: say so and go on.
    let profile = opts.profile.clone().filter(|_| {
        present("perf") || {
            eprintln!(
                "ringway bench: --profile needs perf (apt-get install linux-perf): no flamegraph"
            );
            false
        }
    });
    let instructions = opts.instructions
        && (present("valgrind") && present("callgrind_control")
            || {
                eprintln!("ringway bench: --instructions needs valgrind (apt-get install valgrind): no instructions column");
                false
            });
    meta.server_cpus = opts.server_cpus.clone();
    meta.client_cpus = opts.client_cpus.clone();
    meta.duration_s = opts.duration;
    meta.warmup_s = opts.warmup;
    meta.rounds = opts.rounds;
    meta.clean_share = opts.clean_share;
    meta.command = opts.command.clone();

    let ctx = LaunchCtx {
        bin_dir: opts.bin_dir.clone(),
        work_dir: work_dir.clone(),
        server_cpus: opts.server_cpus.clone(),
        server_threads: nginx::cpu_list(&opts.server_cpus).len().max(1),
        static_dir,
        tls,
        max_connections: variants
            .iter()
            .map(|v| v.shape.connections())
            .max()
            .unwrap_or(50),
    };
    let mut env = VariantEnv {
        ringway: ringway.clone(),
        server_cpus: opts.server_cpus.clone(),
        client_cpus: opts.client_cpus.clone(),
        duration: opts.duration,
        warmup: opts.warmup,
        rounds: opts.rounds,
        clean_share: opts.clean_share,
        syscalls: opts.syscalls && present("perf"),
        work_dir: work_dir.clone(),
        open_loop_base: None,
        bin_dir: opts.bin_dir.clone(),
        wrk: opts.wrk && present("wrk"),
    };
    // Without --peers, a default peer that has no server for any selected variant (the
    // Python loops outside S14, nginx in an echo-only run) is left out of the run
    // instead of listed with nothing measured.
    if opts.peers.is_none() {
        selected.retain(|p| {
            variants
                .iter()
                .any(|v| !matches!((p.launch)(&ctx, v.service), Launch::NotApplicable(_)))
        });
    }
    if variants
        .iter()
        .any(|v| matches!(v.service, Service::Python(_)))
        && !python::venv_python(&python::py_dir()).is_file()
    {
        eprintln!(
            "ringway bench: S14 needs the Python bench environment {}; prepare it with: {} \
             (until then the Python peers are reported unavailable)",
            python::venv_python(&python::py_dir()).display(),
            python::SETUP
        );
    }
    let total: u64 = variants
        .iter()
        .map(|v| variant::steps(&env, v, selected.len()))
        .sum();
    let progress = Progress::new(total, opts.progress);

    let mut results = Results {
        peers: selected.iter().map(peer_info).collect(),
        ..Results::default()
    };
    let mut warmups = std::collections::BTreeMap::new();
    for v in &variants {
        if matches!(v.shape, Shape::Open { .. }) && env.open_loop_base.is_none() {
            let base = open_loop_base(&results.rows, &warmups)
                .or_else(|| probe_capacity(&env, &selected, &ctx, &progress));
            env.open_loop_base = base.as_ref().map(|b| b.0);
            meta.open_loop_base = base;
        }
        progress.println(format!("== {}: {}", v.id(), v.title));
        let variant_started = Instant::now();
        let outcome = if matches!(v.shape, Shape::Idle { .. }) {
            variant::idle::run(&env, v, &selected, &ctx, &progress)
        } else {
            run_variant(&env, v, &selected, &ctx, &progress)
        };
        for (peer, bytes) in &outcome.response_bytes {
            if let Some(p) = results.peers.iter_mut().find(|p| &p.name == peer) {
                // A peer's hello response (the Python peers' is their HTTP server's).
                let hello = match v.service {
                    Service::Http(app) => app == crate::canned::App::Hello,
                    Service::Python(server) => server.is_http(),
                    _ => false,
                };
                if hello {
                    p.response_bytes = Some(*bytes);
                }
            }
        }
        if v.scenario == "S5" && v.name == "c50" {
            warmups.extend(outcome.warmup_rps.clone());
        }
        let mut rows = summarize_variant(v, &selected, &outcome);
        for w in &outcome.wrk {
            if let Some(r) = rows.iter_mut().find(|r| r.peer == w.peer) {
                r.wrk_rps = Some(w.wrk_rps);
            }
        }
        fill_ratios(&mut rows);
        for r in &rows {
            progress.println(format!(
                "  {:<19} {:>9} req/s  {:>7} µs/req CPU  p99 {:>6.0} µs  {}/{} clean",
                r.peer,
                crate::table::fmt_rate(r.rps),
                r.cpu_us_per_req.map_or("-".into(), |c| format!("{c:.2}")),
                r.latency_us.p99,
                r.clean_rounds,
                r.rounds
            ));
        }
        progress.println(format!(
            "   ({:.0} s)",
            variant_started.elapsed().as_secs_f64()
        ));
        results.rows.extend(rows);
        results.wrk.extend(outcome.wrk);
        results.rounds.extend(outcome.rounds);
        results.not_measured.extend(outcome.not_measured);
    }
    if instructions {
        callgrind::count_all(
            &env,
            &variants,
            &selected,
            &ctx,
            &mut results.rows,
            &progress,
        );
    }
    if let Some(peer) = &profile {
        let spec = registry
            .iter()
            .find(|p| p.name == peer)
            .ok_or_else(|| format!("--profile: unknown peer {peer:?}"))?;
        let v = profile::variant_for(&catalogue, opts.profile_scenario.as_deref())?;
        match profile::record(&env, &v, spec, &ctx, &progress) {
            Ok(p) => results.profile = Some(p),
            Err(e) => progress.println(format!("--profile {peer}: {e}")),
        }
    }
    progress.finish();
    fill_ratios(&mut results.rows);
    meta.elapsed_s = started.elapsed().as_secs_f64();
    results.meta = meta;

    let changes = match &opts.compare {
        Some(path) => compare::changes(&results, &compare::load(path)?),
        None => Vec::new(),
    };
    let json = opts.out.join("results.json");
    let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
    std::fs::write(&json, text + "\n").map_err(|e| format!("{}: {e}", json.display()))?;
    let html = opts.out.join("report.html");
    std::fs::write(&html, html::render(&results, &changes))
        .map_err(|e| format!("{}: {e}", html.display()))?;
    let _ = std::fs::remove_dir_all(&work_dir);
    Ok(Outcome {
        text: terminal::render_all(&results, &changes),
        results,
        json,
        html,
    })
}

fn peer_info(p: &PeerSpec) -> PeerInfo {
    PeerInfo {
        name: p.name.to_string(),
        about: p.about.to_string(),
        http: match p.http {
            peers::HttpWork::Parses => "parses".into(),
            peers::HttpWork::CountsHeads => "counts heads".into(),
        },
        deviations: p.deviations.iter().map(|d| d.to_string()).collect(),
        response_bytes: None,
    }
}

/// Rows of one variant, in peer order.
fn summarize_variant(
    v: &Variant,
    peers: &[PeerSpec],
    outcome: &variant::VariantOutcome,
) -> Vec<Row> {
    peers
        .iter()
        .filter_map(|p| {
            let rounds: Vec<_> = outcome.rounds.iter().filter(|r| r.peer == p.name).collect();
            if rounds.is_empty() {
                return None;
            }
            let mut row = results::aggregate(&rounds, &v.title);
            if let Some((s, e)) = outcome.syscalls.get(p.name) {
                row.syscalls_per_req = Some(*s);
                row.io_uring_enter_per_req = Some(*e);
            }
            row.response_bytes = outcome.response_bytes.get(p.name).copied();
            if let Some(rss) = outcome.rss_per_conn_kib.get(p.name) {
                row.rss_per_conn_kib = Some(*rss);
            }
            Some(row)
        })
        .collect()
}

/// Capacity for S9 when S5 did not run: a closed-loop warm-up of ringway/uring (or the
/// first peer that starts) at 50 connections.
fn probe_capacity(
    env: &VariantEnv,
    peers: &[PeerSpec],
    ctx: &LaunchCtx,
    progress: &Progress,
) -> Option<(f64, String)> {
    let probe = Variant {
        scenario: "S5",
        name: "c50".into(),
        title: "capacity probe".into(),
        service: Service::Http(crate::canned::App::Hello),
        shape: Shape::Closed {
            conns: 50,
            pipeline: 1,
        },
        default: false,
        chart: scenarios::Chart::Throughput,
    };
    let mut order: Vec<&PeerSpec> = peers.iter().filter(|p| p.name == RINGWAY).collect();
    order.extend(peers.iter().filter(|p| p.name != RINGWAY));
    let mut probe_env = env.clone();
    probe_env.warmup = env.duration.max(env.warmup);
    for p in order {
        progress.set_message(format!("S9: capacity probe on {}", p.name));
        if let Ok(mut live) = variant::bring_up(&probe_env, &probe, p, ctx) {
            variant::stop_tree(&mut live.server);
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
