//! Raw round records and the per-scenario summary table built from them.
//!
//! Every round of every peer is kept as a [`RoundRecord`] (written out verbatim by
//! `--json`); the table shows, per peer, the median and range of messages/s and of
//! server CPU per message over its clean rounds, and the ratio of its CPU per message
//! to the floor's and to tokio's measured in the same run.

use serde::Serialize;

use crate::measure::stats::{summarize, Summary};
use crate::measure::text_table::{fmt_rate, fmt_summary, render};

/// One round of one peer in one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundRecord {
    /// Scenario id (`50x64`).
    pub scenario: String,
    /// Connections in the scenario.
    pub conns: usize,
    /// Message size in the scenario.
    pub size: usize,
    /// Peer name.
    pub peer: String,
    /// Round number, from 1.
    pub round: usize,
    /// The round produced numbers (server up, client finished without errors).
    pub ok: bool,
    /// Why the round failed, if it did.
    pub error: Option<String>,
    /// Round trips completed in the measured window.
    pub messages: u64,
    /// Length of the measured window.
    pub duration_s: f64,
    /// Round trips per second.
    pub msgs_per_s: f64,
    /// Errors the client counted (verification failures, lost connections).
    pub client_errors: u64,
    /// Server user + system CPU over the measured window.
    pub server_cpu_s: f64,
    /// Server CPU per round trip, in microseconds.
    pub server_cpu_us_per_msg: f64,
    /// Client CPU time over wall time in the measured window.
    pub client_cpu_share: f64,
    /// Server CPU time over wall time in the measured window.
    pub server_cpu_share: f64,
    /// Time the host took from the server's and the client's cores during the window
    /// (steal, from `/proc/stat`), as a share of the window; `None` if unreadable.
    pub steal_share: Option<f64>,
    /// `ok`, and one side was saturated (client or server CPU share at or above the
    /// threshold): otherwise the host starved both cores and the round is disturbed.
    pub clean: bool,
}

/// What the table shows for one peer.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerSummary {
    /// Peer name.
    pub peer: String,
    /// Messages per second over the rounds used.
    pub rate: Option<Summary>,
    /// Server CPU µs per message over the rounds used.
    pub cpu: Option<Summary>,
    /// Clean rounds.
    pub clean: usize,
    /// All rounds attempted.
    pub rounds: usize,
    /// No round was clean, so the summaries use the unclean (but successful) ones.
    pub from_unclean: bool,
}

/// Summarises `peer`'s rounds: clean rounds when there are any, otherwise successful ones.
pub fn summarize_peer(records: &[RoundRecord], peer: &str) -> PeerSummary {
    let mine: Vec<&RoundRecord> = records.iter().filter(|r| r.peer == peer).collect();
    let clean: Vec<&RoundRecord> = mine.iter().copied().filter(|r| r.clean).collect();
    let from_unclean = clean.is_empty();
    let used: Vec<&RoundRecord> = if from_unclean {
        mine.iter().copied().filter(|r| r.ok).collect()
    } else {
        clean.clone()
    };
    let rates: Vec<f64> = used.iter().map(|r| r.msgs_per_s).collect();
    let cpus: Vec<f64> = used.iter().map(|r| r.server_cpu_us_per_msg).collect();
    PeerSummary {
        peer: peer.to_string(),
        rate: summarize(&rates),
        cpu: summarize(&cpus),
        clean: clean.len(),
        rounds: mine.len(),
        from_unclean: from_unclean && !used.is_empty(),
    }
}

fn ratio(cpu: &Option<Summary>, base: Option<&PeerSummary>) -> String {
    match (cpu, base.and_then(|b| b.cpu.as_ref())) {
        (Some(c), Some(b)) if b.median > 0.0 => format!("{:.2}", c.median / b.median),
        _ => "-".to_string(),
    }
}

/// Renders the table of one scenario's records, one row per peer in `peers` order.
/// Ratios are to the peers named `floor` and `tokio` when they have numbers.
pub fn render_scenario(records: &[RoundRecord], peers: &[String]) -> String {
    let summaries: Vec<PeerSummary> = peers.iter().map(|p| summarize_peer(records, p)).collect();
    let floor = summaries.iter().find(|s| s.peer == "floor");
    let tokio = summaries.iter().find(|s| s.peer == "tokio");
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| {
            let name = if s.from_unclean {
                format!("{}*", s.peer)
            } else {
                s.peer.clone()
            };
            let rate = s
                .rate
                .as_ref()
                .map(|r| fmt_summary(r, fmt_rate))
                .unwrap_or_else(|| "failed".to_string());
            let cpu = s
                .cpu
                .as_ref()
                .map(|c| fmt_summary(c, |x| format!("{x:.2}")))
                .unwrap_or_else(|| "-".to_string());
            vec![
                name,
                rate,
                cpu,
                ratio(&s.cpu, floor),
                ratio(&s.cpu, tokio),
                format!("{}/{}", s.clean, s.rounds),
            ]
        })
        .collect();
    render(
        &[
            "peer",
            "msgs/s median (min–max)",
            "server CPU µs/msg median (min–max)",
            "x floor",
            "x tokio",
            "clean",
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(peer: &str, round: usize, rate: f64, cpu: f64, clean: bool) -> RoundRecord {
        RoundRecord {
            scenario: "50x64".into(),
            conns: 50,
            size: 64,
            peer: peer.into(),
            round,
            ok: true,
            error: None,
            messages: (rate * 5.0) as u64,
            duration_s: 5.0,
            msgs_per_s: rate,
            client_errors: 0,
            server_cpu_s: cpu * rate * 5.0 / 1e6,
            server_cpu_us_per_msg: cpu,
            client_cpu_share: if clean { 0.97 } else { 0.6 },
            server_cpu_share: 0.5,
            steal_share: Some(0.0),
            clean,
        }
    }

    #[test]
    fn unclean_rounds_are_left_out_when_clean_ones_exist() {
        let records = vec![
            rec("tokio", 1, 100_000.0, 6.0, true),
            rec("tokio", 2, 50_000.0, 30.0, false),
            rec("tokio", 3, 110_000.0, 5.0, true),
        ];
        let s = summarize_peer(&records, "tokio");
        assert_eq!((s.clean, s.rounds, s.from_unclean), (2, 3, false));
        let cpu = s.cpu.unwrap();
        assert_eq!((cpu.median, cpu.min, cpu.max), (5.5, 5.0, 6.0));
        assert_eq!(s.rate.unwrap().median, 105_000.0);
    }

    #[test]
    fn only_unclean_rounds_are_used_but_flagged() {
        let mut failed = rec("monoio", 2, 0.0, 0.0, false);
        failed.ok = false;
        let records = vec![rec("monoio", 1, 90_000.0, 10.0, false), failed];
        let s = summarize_peer(&records, "monoio");
        assert!(s.from_unclean);
        assert_eq!(s.cpu.unwrap().count, 1, "the failed round is not a sample");
    }

    #[test]
    fn table_has_ratios_to_floor_and_tokio() {
        let records = vec![
            rec("floor", 1, 170_000.0, 4.0, true),
            rec("tokio", 1, 160_000.0, 5.0, true),
            rec("monoio", 1, 90_000.0, 10.0, true),
        ];
        let peers: Vec<String> = ["tokio", "monoio", "floor", "ghost"]
            .map(String::from)
            .into();
        let text = render_scenario(&records, &peers);
        let row = |name: &str| -> Vec<String> {
            let line = text.lines().find(|l| l.starts_with(name)).unwrap();
            line.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        };
        assert_eq!(
            row("tokio"),
            ["tokio", "160.0k", "5.00", "1.25", "1.00", "1/1"]
        );
        assert_eq!(
            row("monoio"),
            ["monoio", "90.0k", "10.00", "2.50", "2.00", "1/1"]
        );
        assert_eq!(
            row("floor"),
            ["floor", "170.0k", "4.00", "1.00", "0.80", "1/1"]
        );
        assert_eq!(row("ghost"), ["ghost", "failed", "-", "-", "-", "0/0"]);
    }
}
