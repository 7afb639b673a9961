//! `--compare OLD.json`: each row's change against the same peer and variant of an
//! earlier run, as ratios new / old (req/s, server CPU per request, p99, instructions).
//!
//! Absolute figures drift 20–30% between runs on a shared VM; instruction counts do not.
//! The report says so beside the comparison.

use std::path::Path;

use serde::Serialize;

use crate::suite::report::headline::headlines;
use crate::suite::report::verdict::Call;
use crate::suite::results::Results;

/// One row's change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Peer.
    pub peer: String,
    /// Scenario.
    pub scenario: String,
    /// Variant.
    pub variant: String,
    /// New req/s over old.
    pub rps: Option<f64>,
    /// New CPU per request over old.
    pub cpu: Option<f64>,
    /// New p99 over old.
    pub p99: Option<f64>,
    /// New instructions per request over old.
    pub instructions: Option<f64>,
}

fn ratio(new: Option<f64>, old: Option<f64>) -> Option<f64> {
    match (new, old) {
        (Some(n), Some(o)) if o > 0.0 && n > 0.0 => Some(n / o),
        _ => None,
    }
}

/// One variant's verdict in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictPair {
    /// `S5`.
    pub scenario: String,
    /// `c50`.
    pub variant: String,
    /// The earlier run's call, if it had one.
    pub old: Option<Call>,
    /// This run's call, if it has one.
    pub new: Option<Call>,
}

/// The headline verdicts of both runs, variant by variant (the variants both have):
/// two default runs in a row on one machine should give the same call everywhere.
pub fn verdicts(new: &Results, old: &Results) -> Vec<VerdictPair> {
    let before = headlines(old);
    headlines(new)
        .into_iter()
        .filter_map(|h| {
            let o = before
                .iter()
                .find(|o| o.scenario == h.scenario && o.variant == h.variant)?;
            Some(VerdictPair {
                old: o.call(),
                new: h.call(),
                scenario: h.scenario,
                variant: h.variant,
            })
        })
        .collect()
}

/// The terminal's lines for [`verdicts`].
pub fn verdicts_text(pairs: &[VerdictPair]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let words = |c: Option<Call>| c.map_or("no verdict", Call::words);
    let same = pairs.iter().filter(|p| p.old == p.new).count();
    let mut out = format!(
        "\n== Verdicts against the earlier run: {same} of {} the same\n",
        pairs.len()
    );
    for p in pairs {
        out.push_str(&format!(
            "  {} {:<12} {:<20} -> {}{}\n",
            p.scenario,
            p.variant,
            words(p.old),
            words(p.new),
            if p.old == p.new { "" } else { "   CHANGED" }
        ));
    }
    out
}

/// Reads an earlier `results.json`.
pub fn load(path: &Path) -> Result<Results, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--compare {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("--compare {}: not a results.json ({e})", path.display()))
}

/// The changes of every row of `new` that `old` also has.
pub fn changes(new: &Results, old: &Results) -> Vec<Change> {
    new.rows
        .iter()
        .filter_map(|n| {
            let o = old.row(&n.peer, &n.scenario, &n.variant)?;
            Some(Change {
                peer: n.peer.clone(),
                scenario: n.scenario.clone(),
                variant: n.variant.clone(),
                rps: ratio(Some(n.rps), Some(o.rps)),
                cpu: ratio(n.cpu_us_per_req, o.cpu_us_per_req),
                p99: ratio(Some(n.latency_us.p99), Some(o.latency_us.p99)),
                instructions: ratio(n.instructions_per_req, o.instructions_per_req),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::results::Row;

    #[test]
    fn changes_match_rows_by_peer_and_variant() {
        let row = |peer: &str, rps: f64, instr: Option<f64>| Row {
            peer: peer.into(),
            scenario: "S5".into(),
            variant: "c50".into(),
            rps,
            cpu_us_per_req: Some(rps / 100.0),
            instructions_per_req: instr,
            ..Row::default()
        };
        let old = Results {
            rows: vec![row("a", 100.0, Some(1000.0))],
            ..Results::default()
        };
        let new = Results {
            rows: vec![row("a", 110.0, Some(900.0)), row("b", 50.0, None)],
            ..Results::default()
        };
        let c = changes(&new, &old);
        assert_eq!(c.len(), 1, "b is new");
        assert!((c[0].rps.unwrap() - 1.1).abs() < 1e-9);
        assert!((c[0].instructions.unwrap() - 0.9).abs() < 1e-9);
        let dir = std::env::temp_dir().join(format!("cmp-{}.json", std::process::id()));
        std::fs::write(&dir, serde_json::to_string(&old).unwrap()).unwrap();
        assert_eq!(load(&dir).unwrap(), old);
        std::fs::write(&dir, "{}").unwrap();
        assert!(load(&dir).unwrap_err().contains("not a results.json"));
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn verdicts_of_two_runs_are_paired_by_variant() {
        use crate::suite::results::{aggregate, Round, RINGWAY};
        let run = |peer_cpu: f64| {
            let rounds: Vec<Round> = (1..=5)
                .flat_map(|n| {
                    [(RINGWAY, 4.0), ("x", peer_cpu)].map(|(peer, cpu)| Round {
                        peer: peer.into(),
                        scenario: "S5".into(),
                        variant: "c50".into(),
                        round: n,
                        ok: true,
                        clean: true,
                        cpu_us_per_req: cpu + 0.01 * n as f64,
                        ..Round::default()
                    })
                })
                .collect();
            let rows = [RINGWAY, "x"]
                .iter()
                .map(|p| {
                    let mine: Vec<&Round> = rounds.iter().filter(|r| r.peer == *p).collect();
                    aggregate(&mine, "t")
                })
                .collect();
            Results {
                rows,
                rounds,
                ..Results::default()
            }
        };
        let same = verdicts(&run(6.0), &run(6.2));
        assert_eq!(same.len(), 1);
        assert_eq!(
            (same[0].old, same[0].new),
            (Some(Call::Ahead), Some(Call::Ahead))
        );
        assert!(verdicts_text(&same).contains("1 of 1 the same"));
        let changed = verdicts(&run(4.0), &run(6.0));
        assert_eq!(changed[0].new, Some(Call::Level));
        assert!(verdicts_text(&changed).contains("CHANGED"));
    }
}
