//! A run put together: the variants and peers chosen, the scratch directory and the
//! tools found ([`Sequence::prepare`]), every variant measured in turn with S9's
//! capacity found first ([`Sequence::measure_variants`]), then what is counted after the
//! rounds: instructions under callgrind and a flamegraph
//! ([`Sequence::count_and_profile`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::measure::netns::Veth;
use crate::measure::stalls::StallWatch;
use crate::peers::canned::App;
use crate::suite::meta;
use crate::suite::options::Options;
use crate::suite::progress::Progress;
use crate::suite::registry::{self, Launch, LaunchCtx, PeerSpec, Service};
use crate::suite::results::{fill_ratios, Meta, PeerInfo, Results};
use crate::suite::run::env::VariantEnv;
use crate::suite::run::variant::{self, run_variant, VariantOutcome};
use crate::suite::run::{callgrind, capacity, idle, open_loop, profile};
use crate::suite::scenarios::{self, Net, Shape, Variant, VETH_SUFFIX};
use crate::suite::setup;

/// Everything a run decided before its first round.
#[derive(Debug)]
pub(super) struct Sequence<'a> {
    opts: &'a Options,
    registry: Vec<PeerSpec>,
    catalogue: Vec<Variant>,
    variants: Vec<Variant>,
    selected: Vec<PeerSpec>,
    ctx: LaunchCtx,
    env: VariantEnv,
    /// The run's metadata so far (the elapsed time is added at the end).
    pub(super) meta: Meta,
    progress: Progress,
    profile: Option<String>,
    instructions: bool,
    /// Count the headline's instructions (valgrind is here and not turned off).
    counted: bool,
    /// The scratch directory, removed when the run is over.
    pub(super) work_dir: PathBuf,
    /// The veth pair of `--net veth` or `both` (removed when the run is over).
    veth: RefCell<Option<Veth>>,
}

impl<'a> Sequence<'a> {
    /// Chooses the variants and peers, prepares the scratch directory, pins the harness,
    /// looks for the tools and says which are missing.
    pub(super) fn prepare(opts: &'a Options) -> Result<Sequence<'a>, String> {
        let registry = registry::registry();
        let mut selected = registry::select(&registry, opts.peers.as_deref(), opts.full)?;
        if opts.baseline.is_some() {
            registry::add_baseline(&registry, &mut selected);
        }
        let catalogue = scenarios::catalogue();
        let variants = scenarios::on_net(
            scenarios::select(&catalogue, opts.scenarios.as_deref(), opts.full)?,
            opts.net,
        );
        let veth = match opts.net {
            Net::Loopback => None,
            Net::Veth | Net::Both => Some(Veth::create()?),
        };
        let ringway = opts.bin_dir.join("ringway");
        if !ringway.is_file() {
            return Err(format!(
                "{} not found (the client is `ringway load`); build it: cargo build --release -p ringway-cli",
                ringway.display()
            ));
        }
        let scratch = setup::prepare(&opts.out, &opts.client_cpus, &variants)?;
        let tools = setup::tools();
        let mut meta = meta::machine();
        let found = setup::report_tools(
            &tools,
            &mut meta,
            opts.profile.as_deref(),
            opts.instructions,
        );
        record_options(&mut meta, opts);
        let mut ctx = launch_ctx(opts, &scratch, &variants);
        ctx.s15_modules = s15_modules(&variants);
        let env = variant_env(opts, ringway, &scratch, &found);
        let env = watch_stalls(env, &mut meta);
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
        registry::python::warn_if_missing(
            variants
                .iter()
                .any(|v| matches!(v.service, Service::Python(_))),
        );
        let total: u64 = variants
            .iter()
            .map(|v| match v.shape {
                Shape::Capacity { .. } => capacity::steps(selected.len()),
                _ => variant::steps(&env, v, selected.len()),
            })
            .sum();
        Ok(Sequence {
            opts,
            registry,
            catalogue,
            variants,
            selected,
            ctx,
            env,
            meta,
            progress: Progress::new(total, opts.progress),
            profile: found.profile,
            instructions: found.instructions,
            counted: opts.counted && found.valgrind,
            work_dir: scratch.work_dir,
            veth: RefCell::new(veth),
        })
    }

    /// Measures every variant in turn; S9's capacity is found before its first rate.
    pub(super) fn measure_variants(&self) -> Results {
        let mut results = Results {
            peers: self.selected.iter().map(peer_info).collect(),
            ..Results::default()
        };
        let mut env = self.env.clone();
        let mut open_loop_base = None;
        let mut warmups = BTreeMap::new();
        for v in &self.variants {
            if matches!(v.shape, Shape::Open { .. } | Shape::Capacity { .. })
                && env.open_loop_base.is_none()
            {
                let base = open_loop::base(&results.rows, &warmups)
                    .or_else(|| open_loop::probe(&env, &self.selected, &self.ctx, &self.progress));
                env.open_loop_base = base.as_ref().map(|b| b.0);
                open_loop_base = base;
            }
            let outcome = self.measure_one(&env, v);
            if v.scenario == "S5" && v.name == "c50" {
                warmups.extend(outcome.warmup_rps.clone());
            }
            self.record(&mut results, v, outcome);
        }
        results.meta.open_loop_base = open_loop_base;
        results
    }

    /// One variant, with its progress lines; a veth variant with the harness in the
    /// client's namespace and the servers in the server's.
    fn measure_one(&self, env: &VariantEnv, v: &Variant) -> VariantOutcome {
        self.progress.println(format!("== {}: {}", v.id(), v.title));
        let started = Instant::now();
        let mut ctx = self.ctx.clone();
        let mut veth = self.veth.borrow_mut();
        let over_veth = v.name.ends_with(VETH_SUFFIX);
        if let (true, Some(veth)) = (over_veth, veth.as_mut()) {
            if let Err(e) = veth.enter_client() {
                self.progress.println(format!("  {}: {e}", v.id()));
                return VariantOutcome::default();
            }
            ctx.server_prefix = veth.server_prefix();
        }
        let outcome = match v.shape {
            Shape::Idle { .. } => idle::run(env, v, &self.selected, &ctx, &self.progress),
            Shape::Capacity { .. } => capacity::run(env, v, &self.selected, &ctx, &self.progress),
            _ => run_variant(env, v, &self.selected, &ctx, &self.progress),
        };
        if let (true, Some(veth)) = (over_veth, veth.as_mut()) {
            if let Err(e) = veth.leave() {
                self.progress.println(format!("  leaving the veth: {e}"));
            }
        }
        let rows = match v.shape {
            Shape::Capacity { .. } => Vec::new(),
            _ => variant::rows(v, &self.selected, &outcome),
        };
        for r in &rows {
            self.progress.println(format!(
                "  {:<22} {:>9} req/s  {:>7} µs/req CPU  p99 {:>6.0} µs  {}/{} clean",
                r.peer,
                crate::measure::text_table::fmt_rate(r.rps),
                r.cpu_us_per_req.map_or("-".into(), |c| format!("{c:.2}")),
                r.latency_us.p99,
                r.clean_rounds,
                r.rounds
            ));
        }
        let phases: Vec<String> = outcome
            .phases
            .iter()
            .map(|(name, s)| format!("{name} {s:.0}"))
            .collect();
        self.progress.println(format!(
            "   ({:.0} s{}{})",
            started.elapsed().as_secs_f64(),
            if phases.is_empty() { "" } else { ": " },
            phases.join(", ")
        ));
        outcome
    }

    /// Puts a variant's outcome into the results: its rows, rounds, response sizes.
    fn record(&self, results: &mut Results, v: &Variant, outcome: VariantOutcome) {
        for (peer, bytes) in &outcome.response_bytes {
            if let Some(p) = results.peers.iter_mut().find(|p| &p.name == peer) {
                // A peer's hello response (the Python peers' is their HTTP server's).
                let hello = match v.service {
                    Service::Http(app) => app == App::Hello,
                    Service::Python(server) => server.is_http(),
                    Service::Asgi(endpoint) => {
                        endpoint == crate::suite::registry::Endpoint::Plaintext
                    }
                    _ => false,
                };
                if hello {
                    p.response_bytes = Some(*bytes);
                }
            }
        }
        if matches!(v.shape, Shape::Capacity { .. }) {
            results.capacity.extend(
                self.selected
                    .iter()
                    .filter(|p| outcome.rounds.iter().any(|r| r.peer == p.name))
                    .map(|p| capacity::capacity(p.name, &outcome.rounds)),
            );
        } else {
            results
                .rows
                .extend(variant::rows(v, &self.selected, &outcome));
        }
        results.wrk.extend(outcome.wrk);
        results.rounds.extend(outcome.rounds);
        results.not_measured.extend(outcome.not_measured);
    }

    /// `--instructions` and `--profile`, after the rounds; then the final ratios.
    pub(super) fn count_and_profile(&self, results: &mut Results) -> Result<(), String> {
        let open_loop_base = results.meta.open_loop_base.clone();
        let whom = if self.instructions {
            Some(callgrind::Whom::All)
        } else {
            self.counted.then_some(callgrind::Whom::Headline)
        };
        if let Some(whom) = whom {
            callgrind::count_all(
                &self.env,
                &self.variants,
                &self.selected,
                &self.ctx,
                &mut results.rows,
                &self.progress,
                whom,
            );
        }
        if let Some(peer) = &self.profile {
            let spec = self
                .registry
                .iter()
                .find(|p| p.name == peer)
                .ok_or_else(|| format!("--profile: unknown peer {peer:?}"))?;
            let v = profile::variant_for(&self.catalogue, self.opts.profile_scenario.as_deref())?;
            match profile::record(&self.env, &v, spec, &self.ctx, &self.progress) {
                Ok(p) => results.profile = Some(p),
                Err(e) => self.progress.println(format!("--profile {peer}: {e}")),
            }
        }
        self.progress.finish();
        fill_ratios(&mut results.rows);
        results.meta = Meta {
            open_loop_base,
            ..self.meta.clone()
        };
        Ok(())
    }
}

/// The measuring environment of every variant.
fn variant_env(
    opts: &Options,
    ringway: PathBuf,
    scratch: &setup::Scratch,
    found: &setup::Found,
) -> VariantEnv {
    VariantEnv {
        ringway,
        server_cpus: opts.server_cpus.clone(),
        client_cpus: opts.client_cpus.clone(),
        duration: opts.duration,
        warmup: opts.warmup,
        rounds: opts.rounds,
        clean_share: opts.clean_share,
        syscalls: opts.syscalls && found.perf,
        work_dir: scratch.work_dir.clone(),
        open_loop_base: None,
        bin_dir: opts.bin_dir.clone(),
        wrk: opts.wrk && found.wrk,
        stalls: None,
        watched_cpus: Vec::new(),
    }
}

/// S15's Python environment, made if a variant needs it: the modules that import there.
fn s15_modules(variants: &[Variant]) -> Option<Vec<String>> {
    if !variants.iter().any(|v| v.scenario == "S15") {
        return None;
    }
    match registry::frameworks::ensure_env(&|line| eprintln!("ringway bench: {line}")) {
        Ok(modules) => Some(modules),
        Err(e) => {
            eprintln!(
                "ringway bench: S15's Python environment could not be made ({e}); its peers are unavailable"
            );
            None
        }
    }
}

/// Starts the host-stall sleepers on the server's and the client's CPUs and records
/// how they run in `meta`.
fn watch_stalls(mut env: VariantEnv, meta: &mut Meta) -> VariantEnv {
    let mut cpus = registry::nginx::cpu_list(&env.server_cpus);
    for c in registry::nginx::cpu_list(&env.client_cpus) {
        if !cpus.contains(&c) {
            cpus.push(c);
        }
    }
    let watch = StallWatch::start(&cpus);
    meta.stall_watch_fifo = watch.fifo;
    meta.stall_threshold_ms = watch.threshold.as_secs_f64() * 1e3;
    env.stalls = Some(Arc::new(watch));
    env.watched_cpus = cpus;
    env
}

/// Where the peers run: binaries, scratch, server cores, the largest connection count.
fn launch_ctx(opts: &Options, scratch: &setup::Scratch, variants: &[Variant]) -> LaunchCtx {
    LaunchCtx {
        bin_dir: opts.bin_dir.clone(),
        work_dir: scratch.work_dir.clone(),
        server_cpus: opts.server_cpus.clone(),
        server_threads: registry::nginx::cpu_list(&opts.server_cpus).len().max(1),
        static_dir: scratch.static_dir.clone(),
        tls: scratch.tls.clone(),
        max_connections: variants
            .iter()
            .map(|v| v.shape.connections())
            .max()
            .unwrap_or(50),
        baseline_dir: opts.baseline.clone(),
        s15_modules: None,
        server_prefix: Vec::new(),
    }
}

/// The options that shape the figures, in the metadata.
fn record_options(meta: &mut Meta, opts: &Options) {
    meta.server_cpus = opts.server_cpus.clone();
    meta.client_cpus = opts.client_cpus.clone();
    meta.duration_s = opts.duration;
    meta.warmup_s = opts.warmup;
    meta.rounds = opts.rounds;
    meta.clean_share = opts.clean_share;
    meta.command = opts.command.clone();
    meta.net = match opts.net {
        Net::Loopback => "loopback",
        Net::Veth => "a veth pair between two network namespaces",
        Net::Both => "loopback, and a veth pair between two network namespaces (variants @veth)",
    }
    .into();
}

/// What the report says about a peer of the run.
fn peer_info(p: &PeerSpec) -> PeerInfo {
    PeerInfo {
        name: p.name.to_string(),
        about: p.about.to_string(),
        http: match p.http {
            registry::HttpWork::Parses => "parses".into(),
            registry::HttpWork::CountsHeads => "counts heads".into(),
        },
        deviations: p.deviations.iter().map(|d| d.to_string()).collect(),
        response_bytes: None,
    }
}
