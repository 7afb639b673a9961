//! What a run produces: every round as measured, one row per peer and scenario variant
//! summarising its rounds, and `results.json` holding both with the run's metadata.
//!
//! A row summarises the clean rounds (client or server kept at least 90% of its core);
//! when no round of a peer was clean it uses the successful ones and says so
//! (`from_unclean`). Each row carries its ratio to ringway/uring measured in the same
//! run: `ratio_to_ringway` is the peer's req/s over ringway/uring's (above 1: the peer
//! served more), `cpu_ratio_to_ringway` its server CPU per request over ringway/uring's
//! (above 1: the peer spent more).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::stats::summarize;

/// The peer every ratio is taken against.
pub const RINGWAY: &str = "ringway-uring";
/// ringway's Python loop: the reference of S14, where ringway-uring has no server.
pub const PY_RINGWAY: &str = "py-ringway";
/// uvicorn on ringway's Python loop: the reference of S15.
pub const UVICORN_RINGWAY: &str = "uvicorn-ringway";

/// The peer whose row the other rows of `scenario` are ratios to: ringway/uring,
/// ringway's Python loop in S14, uvicorn on it in S15.
pub fn reference_peer(scenario: &str) -> &'static str {
    match scenario {
        "S14" => PY_RINGWAY,
        "S15" => UVICORN_RINGWAY,
        _ => RINGWAY,
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyUs {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

/// Share of the server's and the client's CPUs (their time over a round's window)
/// that other processes may take before the round is [`Round::contended`]. /proc/stat
/// counts busy time in 10 ms ticks: over a 0.25 s round on two CPUs that is 50 ticks,
/// read to within two or three, so 10% (5 ticks) is the least that is told reliably
/// from the accounting's own error.
pub const CONTENDED_SHARE: f64 = 0.10;

/// One measured round of one peer in one variant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Round {
    /// Peer name.
    pub peer: String,
    /// `S1`..`S14`.
    pub scenario: String,
    /// Variant name.
    pub variant: String,
    /// Round number from 1.
    pub round: usize,
    /// The round produced numbers.
    pub ok: bool,
    /// Why not.
    pub error: Option<String>,
    /// Completed requests (or echoed messages).
    pub requests: u64,
    /// Measured seconds (the client's).
    pub duration_s: f64,
    /// Requests per second.
    pub rps: f64,
    /// Latency.
    pub latency_us: LatencyUs,
    /// Errors by class, as the client counted them.
    pub errors: BTreeMap<String, u64>,
    /// Server CPU (user + system, whole process tree, and the stall sleepers' on the
    /// server's CPUs) over the client's run.
    pub server_cpu_s: f64,
    /// Of `server_cpu_s`, what the stall sleepers on the server's CPUs ran,
    /// milliseconds: the kernel's interrupt work for the server while a sleeper was
    /// current, and the sleepers' own (a clock read, a sleep and the switches, 1000
    /// times a second: 13-17 ms a second at S1 c1 all told).
    pub sleeper_cpu_ms: f64,
    /// Server CPU per request, microseconds.
    pub cpu_us_per_req: f64,
    /// Client CPU over the client's wall time.
    pub client_cpu_share: f64,
    /// Server CPU over the client's wall time.
    pub server_cpu_share: f64,
    /// CPU the other (idle) servers of the variant used meanwhile, over the wall time.
    pub others_cpu_share: f64,
    /// `ok`, and the client or the server kept at least the clean share of its core.
    pub clean: bool,
    /// The window held a host stall (a sleeper woke late, or the host stole time from
    /// the server's or the client's CPU): its tail is shown, not ranked.
    pub stalled: bool,
    /// The longest late wake-up of the stall sleepers in the window, milliseconds.
    pub stall_max_ms: f64,
    /// Late wake-ups past the threshold in the window.
    pub stalls: usize,
    /// Steal time of the server's and the client's CPUs over the window, milliseconds.
    pub steal_ms: f64,
    /// CPU time that processes other than the measured ones (the server's tree, the
    /// client, the variant's idle servers) took on the server's and the client's CPUs
    /// over the window, milliseconds: another build, a browser, a second benchmark.
    pub foreign_cpu_ms: f64,
    /// The foreign CPU was at least [`CONTENDED_SHARE`] of the two CPUs' time over the
    /// window: the server or the client waited for a core that something else had, so
    /// the round's timed figures are shown but not ranked (verdicts leave it out).
    pub contended: bool,
    /// Shape-specific figures (`batch_us_p50`, `iteration_ms_median`, `offered_rps`, ...).
    pub extra: BTreeMap<String, f64>,
    /// Latency histogram (`[value_us, count]`), kept for the curves, not written out.
    #[serde(skip)]
    pub histogram: Vec<(f64, u64)>,
}

/// One peer in one variant: the summary of its rounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Row {
    /// Peer name.
    pub peer: String,
    /// `S1`..`S14`.
    pub scenario: String,
    /// Variant name.
    pub variant: String,
    /// Variant title.
    pub title: String,
    /// Median req/s.
    pub rps: f64,
    /// Smallest req/s of the rounds used.
    pub rps_min: f64,
    /// Largest req/s of the rounds used.
    pub rps_max: f64,
    /// Median of each percentile over the rounds used.
    pub latency_us: LatencyUs,
    /// Errors by class, summed over all rounds.
    pub errors: BTreeMap<String, u64>,
    /// Sum of `errors`.
    pub errors_total: u64,
    /// Median server CPU per request, microseconds.
    pub cpu_us_per_req: Option<f64>,
    /// Smallest and largest of the rounds used.
    pub cpu_us_per_req_range: Option<(f64, f64)>,
    /// Server syscalls per request (a run of its own under perf).
    pub syscalls_per_req: Option<f64>,
    /// Of which `io_uring_enter`.
    pub io_uring_enter_per_req: Option<f64>,
    /// User-space instructions per request under callgrind (`--instructions`).
    pub instructions_per_req: Option<f64>,
    /// Resident memory per idle connection, KiB (S12).
    pub rss_per_conn_kib: Option<f64>,
    /// req/s over ringway/uring's in the same variant.
    pub ratio_to_ringway: Option<f64>,
    /// Server CPU per request over ringway/uring's in the same variant.
    pub cpu_ratio_to_ringway: Option<f64>,
    /// Rounds run.
    pub rounds: usize,
    /// Rounds that were clean.
    pub clean_rounds: usize,
    /// No clean round: the figures come from unclean ones.
    pub from_unclean: bool,
    /// Rounds whose window held a host stall.
    pub stalled_rounds: usize,
    /// Rounds whose CPUs other processes used (see [`Round::contended`]).
    pub contended_rounds: usize,
    /// Median p99 of the used rounds without a host stall (the tail that is ranked).
    pub p99_stall_free: Option<f64>,
    /// Medians of the rounds' shape-specific figures.
    pub extra: BTreeMap<String, f64>,
    /// `(percentile, latency_us)` of the median round, for the percentile curves.
    pub latency_curve: Vec<(f64, f64)>,
    /// Size of one response on the wire (from the conformance check).
    pub response_bytes: Option<usize>,
    /// wrk's req/s against the same server, run back to back with a `ringway load` run
    /// (S5 c50; see [`WrkCheck`] for that pair).
    pub wrk_rps: Option<f64>,
}

/// The percentiles of the latency curves.
pub const CURVE_PERCENTILES: &[f64] = &[
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0,
];

/// `(percentile, value)` points of a `[value, count]` histogram.
pub fn curve(histogram: &[(f64, u64)]) -> Vec<(f64, f64)> {
    let total: u64 = histogram.iter().map(|(_, c)| c).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut sorted = histogram.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    CURVE_PERCENTILES
        .iter()
        .map(|&p| {
            let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            let value = sorted
                .iter()
                .find(|(_, c)| {
                    seen += c;
                    seen >= rank
                })
                .map(|(v, _)| *v)
                .unwrap_or(sorted[sorted.len() - 1].0);
            (p, value)
        })
        .collect()
}

fn median_of(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    summarize(&v).map_or(0.0, |s| s.median)
}

/// Summarises the rounds of one peer in one variant.
pub fn aggregate(rounds: &[&Round], title: &str) -> Row {
    let first = rounds.first().copied().cloned().unwrap_or_default();
    let clean: Vec<&Round> = rounds.iter().copied().filter(|r| r.clean).collect();
    let from_unclean = clean.is_empty();
    let used: Vec<&Round> = if from_unclean {
        rounds.iter().copied().filter(|r| r.ok).collect()
    } else {
        clean.clone()
    };
    let rps: Vec<f64> = used.iter().map(|r| r.rps).collect();
    let cpu: Vec<f64> = used.iter().map(|r| r.cpu_us_per_req).collect();
    let rps_s = summarize(&rps);
    let cpu_s = summarize(&cpu);
    let stall_free: Vec<f64> = used
        .iter()
        .filter(|r| !r.stalled)
        .map(|r| r.latency_us.p99)
        .collect();
    let lat = LatencyUs {
        p50: median_of(used.iter().map(|r| r.latency_us.p50)),
        p90: median_of(used.iter().map(|r| r.latency_us.p90)),
        p99: median_of(used.iter().map(|r| r.latency_us.p99)),
        p999: median_of(used.iter().map(|r| r.latency_us.p999)),
        max: median_of(used.iter().map(|r| r.latency_us.max)),
    };
    let mut errors = BTreeMap::new();
    for r in rounds {
        for (k, v) in &r.errors {
            *errors.entry(k.clone()).or_insert(0) += v;
        }
    }
    let mut extra = BTreeMap::new();
    let keys: Vec<String> = used
        .iter()
        .flat_map(|r| r.extra.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for k in keys {
        extra.insert(
            k.clone(),
            median_of(used.iter().filter_map(|r| r.extra.get(&k).copied())),
        );
    }
    // The curve of the round whose req/s is the median (closest to it).
    let median_round = rps_s.and_then(|s| {
        used.iter().min_by(|a, b| {
            (a.rps - s.median)
                .abs()
                .total_cmp(&(b.rps - s.median).abs())
        })
    });
    Row {
        peer: first.peer.clone(),
        scenario: first.scenario.clone(),
        variant: first.variant.clone(),
        title: title.to_string(),
        rps: rps_s.map_or(0.0, |s| s.median),
        rps_min: rps_s.map_or(0.0, |s| s.min),
        rps_max: rps_s.map_or(0.0, |s| s.max),
        latency_us: lat,
        errors_total: errors.values().sum(),
        errors,
        cpu_us_per_req: cpu_s.map(|s| s.median),
        cpu_us_per_req_range: cpu_s.map(|s| (s.min, s.max)),
        rounds: rounds.len(),
        clean_rounds: clean.len(),
        from_unclean: from_unclean && !used.is_empty(),
        stalled_rounds: rounds.iter().filter(|r| r.stalled).count(),
        contended_rounds: rounds.iter().filter(|r| r.contended).count(),
        p99_stall_free: summarize(&stall_free).map(|s| s.median),
        extra,
        latency_curve: median_round
            .map(|r| curve(&r.histogram))
            .unwrap_or_default(),
        ..Row::default()
    }
}

/// Fills every row's ratios to ringway/uring's row of the same variant.
pub fn fill_ratios(rows: &mut [Row]) {
    let base: BTreeMap<(String, String), (f64, Option<f64>)> = rows
        .iter()
        .filter(|r| r.peer == reference_peer(&r.scenario) && r.rps > 0.0)
        .map(|r| {
            (
                (r.scenario.clone(), r.variant.clone()),
                (r.rps, r.cpu_us_per_req),
            )
        })
        .collect();
    for r in rows.iter_mut() {
        if let Some((rps, cpu)) = base.get(&(r.scenario.clone(), r.variant.clone())) {
            r.ratio_to_ringway = (r.rps > 0.0).then(|| r.rps / rps);
            r.cpu_ratio_to_ringway = match (r.cpu_us_per_req, cpu) {
                (Some(c), Some(b)) if *b > 0.0 => Some(c / b),
                _ => None,
            };
        }
    }
}

/// A peer that was not measured in a variant, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotMeasured {
    /// Peer name.
    pub peer: String,
    /// `S1`..`S14`.
    pub scenario: String,
    /// Variant name.
    pub variant: String,
    /// `unavailable` (cannot run here), `not applicable` (has no such server),
    /// `failed to start`, `failed conformance`.
    pub status: String,
    /// The details, with the command that fixes it where there is one.
    pub reason: String,
}

/// What the report says about each peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Name.
    pub name: String,
    /// What it is.
    pub about: String,
    /// `parses` or `counts heads`.
    pub http: String,
    /// Its declared deviations from the canned response, in words.
    pub deviations: Vec<String>,
    /// Size of its hello response in bytes (when checked).
    pub response_bytes: Option<usize>,
}

/// One peer's capacity at a latency bound (the highest offered rate whose p99 stayed
/// under the bound in stall-free windows).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// Peer name.
    pub peer: String,
    /// Highest offered req/s with p99 under 1 ms.
    pub at_1ms: Option<f64>,
    /// Highest offered req/s with p99 under 10 ms.
    pub at_10ms: Option<f64>,
    /// Steps run (stalled ones included).
    pub steps: usize,
    /// Steps whose window held a host stall twice (shown, not used).
    pub stalled_steps: usize,
}

/// The wrk cross-check of one peer (S5 c50).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrkCheck {
    /// Peer name.
    pub peer: String,
    /// wrk's req/s.
    pub wrk_rps: f64,
    /// ringway load's median req/s in S5 c50.
    pub load_rps: f64,
    /// wrk over ringway load.
    pub ratio: f64,
    /// Within 10%.
    pub agrees: bool,
}

/// A profile taken with `--profile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileInfo {
    /// Peer profiled.
    pub peer: String,
    /// Variant it ran.
    pub variant: String,
    /// Samples perf took.
    pub samples: u64,
    /// The flamegraph, an SVG document.
    pub svg: String,
}

/// Run metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// ringway's version and the workspace commit.
    pub ringway: String,
    /// When, seconds since the epoch.
    pub unix_time: u64,
    /// `uname -r`.
    pub kernel: String,
    /// CPU model.
    pub cpu: String,
    /// Online CPUs.
    pub cpus: usize,
    /// `/sys/devices/system/cpu/vulnerabilities/*`, one line per entry.
    pub mitigations: Vec<String>,
    /// Versions of the peers' crates and tools.
    pub versions: BTreeMap<String, String>,
    /// Server CPU list.
    pub server_cpus: String,
    /// Client CPU list.
    pub client_cpus: String,
    /// Seconds per measured round.
    pub duration_s: f64,
    /// Warm-up seconds per peer and variant.
    pub warmup_s: f64,
    /// Rounds per variant.
    pub rounds: usize,
    /// The clean-round threshold.
    pub clean_share: f64,
    /// The command line that made this run.
    pub command: String,
    /// Tools that were missing, each with its install line.
    pub missing_tools: Vec<String>,
    /// Wall time of the whole run.
    pub elapsed_s: f64,
    /// Capacity S9's rates are percentages of, and where it came from.
    pub open_loop_base: Option<(f64, String)>,
    /// Where the traffic went: loopback, or a veth pair between two namespaces.
    pub net: String,
    /// The stall sleepers ran under `SCHED_FIFO` (else only long stalls count).
    pub stall_watch_fifo: bool,
    /// The late wake-up that marks a window stalled, milliseconds.
    pub stall_threshold_ms: f64,
}

/// `results.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// How and where.
    pub meta: Meta,
    /// One per peer and variant measured.
    pub rows: Vec<Row>,
    /// The peers and variants not measured, with the reason.
    pub not_measured: Vec<NotMeasured>,
    /// The peers of the run.
    pub peers: Vec<PeerInfo>,
    /// The wrk cross-check.
    #[serde(default)]
    pub wrk: Vec<WrkCheck>,
    /// The flamegraph of `--profile`.
    #[serde(default)]
    pub profile: Option<ProfileInfo>,
    /// Capacity at a latency bound, per peer (S9 capacity).
    #[serde(default)]
    pub capacity: Vec<Capacity>,
    /// Every round.
    pub rounds: Vec<Round>,
}

impl Results {
    /// The row of `peer` in `scenario`/`variant`.
    pub fn row(&self, peer: &str, scenario: &str, variant: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.peer == peer && r.scenario == scenario && r.variant == variant)
    }

    /// `(scenario, variant)` pairs in the order of the rows.
    pub fn variants(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in &self.rows {
            let k = (r.scenario.clone(), r.variant.clone());
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    /// Peer names in the order of the rows.
    pub fn peer_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self.peers.iter().map(|p| p.name.clone()).collect();
        for r in &self.rows {
            if !out.contains(&r.peer) {
                out.push(r.peer.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(peer: &str, n: usize, rps: f64, cpu: f64, clean: bool) -> Round {
        Round {
            peer: peer.into(),
            scenario: "S5".into(),
            variant: "c50".into(),
            round: n,
            ok: true,
            rps,
            cpu_us_per_req: cpu,
            clean,
            latency_us: LatencyUs {
                p50: rps / 1000.0,
                ..LatencyUs::default()
            },
            errors: [("read".to_string(), 1)].into(),
            extra: [("offered_rps".to_string(), rps * 2.0)].into(),
            histogram: vec![(10.0, 98), (20.0, 1), (500.0, 1)],
            ..Round::default()
        }
    }

    #[test]
    fn rows_use_clean_rounds_and_sum_errors() {
        let rs = [
            round("a", 1, 100.0, 5.0, true),
            round("a", 2, 10.0, 50.0, false),
            round("a", 3, 120.0, 4.0, true),
        ];
        let row = aggregate(&rs.iter().collect::<Vec<_>>(), "t");
        assert_eq!((row.rps, row.rps_min, row.rps_max), (110.0, 100.0, 120.0));
        assert_eq!(row.cpu_us_per_req, Some(4.5));
        assert_eq!(row.errors_total, 3, "errors of every round count");
        assert_eq!(
            (row.rounds, row.clean_rounds, row.from_unclean),
            (3, 2, false)
        );
        assert_eq!(row.extra["offered_rps"], 220.0);
        assert_eq!(row.latency_curve.last(), Some(&(100.0, 500.0)));
        let unclean = [round("b", 1, 10.0, 1.0, false)];
        let row = aggregate(&unclean.iter().collect::<Vec<_>>(), "t");
        assert!(row.from_unclean);
        assert_eq!(row.rps, 10.0);
    }

    #[test]
    fn percentile_curve_of_a_histogram() {
        let c = curve(&[(1.0, 90), (2.0, 9), (50.0, 1)]);
        let at = |p: f64| c.iter().find(|(q, _)| *q == p).unwrap().1;
        assert_eq!(at(50.0), 1.0);
        assert_eq!(at(90.0), 1.0);
        assert_eq!(at(95.0), 2.0);
        assert_eq!(at(99.0), 2.0);
        assert_eq!(at(99.5), 50.0);
        assert_eq!(at(100.0), 50.0);
        assert!(curve(&[]).is_empty());
    }

    #[test]
    fn ratios_are_to_ringway_in_the_same_variant() {
        let mut rows = vec![
            Row {
                peer: RINGWAY.into(),
                scenario: "S5".into(),
                variant: "c50".into(),
                rps: 200.0,
                cpu_us_per_req: Some(4.0),
                ..Row::default()
            },
            Row {
                peer: "nginx".into(),
                scenario: "S5".into(),
                variant: "c50".into(),
                rps: 100.0,
                cpu_us_per_req: Some(5.0),
                ..Row::default()
            },
            Row {
                peer: "nginx".into(),
                scenario: "S8".into(),
                variant: "p16".into(),
                rps: 100.0,
                ..Row::default()
            },
        ];
        fill_ratios(&mut rows);
        assert_eq!(rows[0].ratio_to_ringway, Some(1.0));
        assert_eq!(rows[1].ratio_to_ringway, Some(0.5));
        assert_eq!(rows[1].cpu_ratio_to_ringway, Some(1.25));
        assert_eq!(rows[2].ratio_to_ringway, None, "no ringway row in S8");
    }
}
