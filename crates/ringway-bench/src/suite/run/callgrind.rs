//! `--instructions`: user-space instructions per request, counted by valgrind's
//! callgrind over a fixed window — the one figure that does not move with this
//! machine's noise.
//!
//! Each server runs under `valgrind --tool=callgrind` (pinned like the others); a
//! warm-up load runs first, then its counters are zeroed (`callgrind_control -z`), the
//! measured load runs, the counters are dumped (`callgrind_control -d`), and the dumps'
//! totals (every process of the server's tree) are divided by the requests the client
//! completed in that window. Under callgrind a server runs tens of times slower, so it
//! batches more per turn than at full speed; the count is still exact for what it did,
//! and every peer is measured the same way. Counted in the closed-loop variants of S5,
//! S7, S8, S14 and S15 (the shapes of the known figures in `docs/benchmarks.md`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::measure::launch::{self, LaunchSpec};
use crate::measure::procstat::process_tree;
use crate::suite::progress::Progress;
use crate::suite::registry::{Launch, LaunchCtx, PeerSpec};
use crate::suite::report::headline::{Figure, FLOOR};
use crate::suite::report::verdict::counted_rival;
use crate::suite::results::{reference_peer, Row};
use crate::suite::run::bring_up::stop_tree;
use crate::suite::run::client::{self, Sizing};
use crate::suite::run::env::VariantEnv;
use crate::suite::scenarios::VETH_SUFFIX;
use crate::suite::scenarios::{Shape, Variant};

/// How long a count runs: warm-up then measured window, seconds of client load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Seconds of warm-up under callgrind (not counted).
    pub warmup_s: f64,
    /// Seconds of the measured window.
    pub measured_s: f64,
}

/// `--instructions`: every peer, the longer window.
pub const FULL: Window = Window {
    warmup_s: 1.0,
    measured_s: 2.0,
};
/// The default run's counts for the headline (ringway, the best peer, the floor): a
/// shorter window, the count per request is exact for what ran all the same.
pub const HEADLINE: Window = Window {
    warmup_s: 0.5,
    measured_s: 1.0,
};

/// `true` for the variants whose instructions are counted.
pub fn eligible(v: &Variant) -> bool {
    !v.name.ends_with(VETH_SUFFIX)
        && matches!(v.scenario, "S5" | "S7" | "S8" | "S14" | "S15")
        && matches!(
            v.shape,
            Shape::Closed { .. } | Shape::Echo { .. } | Shape::EchoFramed { .. }
        )
}

/// The `totals:` (or `summary:`) figure of a callgrind dump.
pub fn parse_total(dump: &str) -> Option<u64> {
    let field = |key: &str| {
        dump.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    field("totals:").or_else(|| field("summary:"))
}

/// The newest numbered dump (`PREFIX.N`) of each file starting with `prefix` in `dir`.
fn dumps(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut best: std::collections::BTreeMap<String, (u32, PathBuf)> = Default::default();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(rest) = name.strip_prefix(prefix) else {
                continue;
            };
            let Some((base, n)) = rest.rsplit_once('.') else {
                continue;
            };
            let Ok(n) = n.parse::<u32>() else { continue };
            let slot = best.entry(base.to_string()).or_insert((0, PathBuf::new()));
            if n >= slot.0 {
                *slot = (n, e.path());
            }
        }
    }
    best.into_values().map(|(_, p)| p).collect()
}

fn control(flag: &str, pid: u32) -> bool {
    Command::new("callgrind_control")
        .args([flag, &pid.to_string()])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Instructions per request of `peer` in `v`.
pub fn count(
    env: &VariantEnv,
    v: &Variant,
    peer: &PeerSpec,
    ctx: &LaunchCtx,
    window: Window,
) -> Result<f64, String> {
    let spec = match (peer.launch)(ctx, v.service) {
        Launch::Run(spec) => spec,
        Launch::NotApplicable(why) => return Err(why.to_string()),
        Launch::Unavailable(why) => return Err(why),
    };
    let prefix = format!("cg-{}-{}-", peer.name, std::process::id());
    let out_file = env.work_dir.join(format!("{prefix}%p.out"));
    let mut argv = vec![
        "valgrind".to_string(),
        "--tool=callgrind".to_string(),
        // Servers that start their workers with exec (granian's, a Python server's
        // spawned processes) are counted too: one dump per process, summed.
        "--trace-children=yes".to_string(),
        format!("--callgrind-out-file={}", out_file.display()),
    ];
    argv.extend(spec.argv.iter().cloned());
    let wrapped = LaunchSpec { argv, ..spec };
    let mut srv = launch::start(&wrapped, Some(&env.server_cpus))?;
    let sizing = |secs: f64| Sizing {
        seconds: secs,
        warmup_rps: None,
        rate: None,
    };
    let limit = Duration::from_secs(120);
    let result = (|| {
        let warm = client::load_args(
            v.service,
            &v.shape,
            srv.port,
            sizing(window.warmup_s),
            false,
        );
        client::run(&env.ringway, Some(&env.client_cpus), &warm, limit)?;
        let tree = process_tree(srv.proc.pid());
        for p in &tree {
            control("-z", *p);
        }
        let args = client::load_args(
            v.service,
            &v.shape,
            srv.port,
            sizing(window.measured_s),
            false,
        );
        let run = client::run(&env.ringway, Some(&env.client_cpus), &args, limit)?;
        for p in &tree {
            control("-d", *p);
        }
        Ok::<u64, String>(run.report.requests)
    })();
    stop_tree(&mut srv);
    let requests = result?;
    let files = dumps(&env.work_dir, &prefix);
    let mut total = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        total += parse_total(&text).ok_or_else(|| format!("no totals in {}", f.display()))?;
    }
    for f in std::fs::read_dir(&env.work_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        if f.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(f.path());
        }
    }
    if files.is_empty() || requests == 0 {
        return Err(format!(
            "no dump or no request ({} dumps, {requests} requests)",
            files.len()
        ));
    }
    Ok(total as f64 / requests as f64)
}

/// Which peers of an eligible variant are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whom {
    /// Every peer (`--instructions`).
    All,
    /// The headline's: ringway's reference peer, the floor, the scenario's counted rival
    /// (`counted_rival`) and the best other peer on the variant's figure (the default
    /// run, where valgrind is installed).
    Headline,
}

/// `true` if `peer`'s row in `rows` (of one variant) is counted for `whom`.
fn chosen(whom: Whom, peer: &str, rows: &[&Row], v: &Variant) -> bool {
    if whom == Whom::All {
        return true;
    }
    let reference = reference_peer(v.scenario);
    if peer == reference || peer == FLOOR || Some(peer) == counted_rival(v.scenario) {
        return true;
    }
    let figure = Figure::of(v.scenario);
    let best = rows
        .iter()
        .filter(|r| r.peer != reference && r.peer != FLOOR)
        .filter_map(|r| figure.value(r).map(|x| (r.peer.as_str(), x)))
        .fold(None::<(&str, f64)>, |acc, (p, x)| match acc {
            Some((_, b))
                if (figure.higher_is_better() && b >= x)
                    || (!figure.higher_is_better() && b <= x) =>
            {
                acc
            }
            _ => Some((p, x)),
        });
    best.is_some_and(|(p, _)| p == peer)
}

/// Counts the chosen peers of every eligible variant and puts the figures in their rows.
pub fn count_all(
    env: &VariantEnv,
    variants: &[Variant],
    peers: &[PeerSpec],
    ctx: &LaunchCtx,
    rows: &mut [Row],
    progress: &Progress,
    whom: Whom,
) {
    let window = if whom == Whom::All { FULL } else { HEADLINE };
    for v in variants.iter().filter(|v| eligible(v)) {
        let mine: Vec<Row> = rows
            .iter()
            .filter(|r| r.scenario == v.scenario && r.variant == v.name)
            .cloned()
            .collect();
        let refs: Vec<&Row> = mine.iter().collect();
        for peer in peers.iter().filter(|p| chosen(whom, p.name, &refs, v)) {
            let Some(row) = rows
                .iter_mut()
                .find(|r| r.peer == peer.name && r.scenario == v.scenario && r.variant == v.name)
            else {
                continue;
            };
            progress.set_message(format!("instructions: {} {}", v.id(), peer.name));
            match count(env, v, peer, ctx, window) {
                Ok(n) => {
                    progress.println(format!(
                        "  instructions {} {}: {n:.0} per request",
                        v.id(),
                        peer.name
                    ));
                    row.instructions_per_req = Some(n);
                }
                Err(e) => progress.println(format!(
                    "  instructions {} {}: not counted: {e}",
                    v.id(),
                    peer.name
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_dumps() {
        let dump =
            "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 999\ntotals: 443740805\n";
        assert_eq!(parse_total(dump), Some(443740805));
        assert_eq!(parse_total("summary: 12\n"), Some(12));
        assert_eq!(parse_total("nothing"), None);
        let dir = std::env::temp_dir().join(format!("cg-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "cg-x-1-10.out",
            "cg-x-1-10.out.1",
            "cg-x-1-10.out.2",
            "cg-x-1-11.out.1",
            "other.1",
        ] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let mut got: Vec<String> = dumps(&dir, "cg-x-1-")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        got.sort();
        assert_eq!(got, ["cg-x-1-10.out.2", "cg-x-1-11.out.1"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn closed_and_echo_shapes_of_s5_s7_s8_s14_are_counted() {
        let all = crate::suite::scenarios::catalogue();
        let counted: Vec<String> = all.iter().filter(|v| eligible(v)).map(|v| v.id()).collect();
        for id in [
            "S5 c50",
            "S7 64B",
            "S8 p16",
            "S14 protocol-64B",
            "S14 http-2writes",
        ] {
            assert!(
                counted.iter().any(|c| c == id),
                "{id} not counted: {counted:?}"
            );
        }
        assert!(
            !counted.iter().any(|c| c.starts_with("S9 ")),
            "open loop counted"
        );
        assert!(
            !counted.iter().any(|c| c.starts_with("S12 ")),
            "idle counted"
        );
    }
}
