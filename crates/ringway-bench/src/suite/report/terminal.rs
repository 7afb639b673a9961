//! The terminal table: the headline, then one table per scenario variant, then what was
//! not measured and why.

use crate::measure::text_table::{fmt_rate, render};
use crate::suite::report::compare::Change;
use crate::suite::report::headline::headlines;
use crate::suite::results::{Results, Row};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.digits$}"))
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.2}"))
}

fn rps_cell(r: &Row) -> String {
    if r.rounds > 1 {
        format!(
            "{} ({}–{})",
            fmt_rate(r.rps),
            fmt_rate(r.rps_min),
            fmt_rate(r.rps_max)
        )
    } else {
        fmt_rate(r.rps)
    }
}

/// Which optional columns a variant's table has.
#[derive(Debug, Clone, Copy)]
struct Columns {
    sys: bool,
    instr: bool,
    rss: bool,
    wrk: bool,
    cmp: bool,
}

impl Columns {
    fn of(rows: &[&Row], changes: &[Change]) -> Columns {
        Columns {
            instr: rows.iter().any(|r| r.instructions_per_req.is_some()),
            sys: rows.iter().any(|r| r.syscalls_per_req.is_some()),
            rss: rows.iter().any(|r| r.rss_per_conn_kib.is_some()),
            wrk: rows.iter().any(|r| r.wrk_rps.is_some()),
            cmp: !changes.is_empty(),
        }
    }

    fn headers(self) -> Vec<&'static str> {
        let mut headers = vec![
            "peer",
            "req/s median (min–max)",
            "x ringway",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "CPU µs/req",
            "CPU x ringway",
        ];
        if self.sys {
            headers.push("syscalls/req");
        }
        if self.instr {
            headers.push("instr/req");
        }
        if self.rss {
            headers.push("RSS KiB/conn");
        }
        if self.wrk {
            headers.push("wrk req/s");
        }
        headers.extend(["errors", "clean", "stalled", "contended"]);
        if self.cmp {
            headers.extend(["Δ req/s", "Δ CPU/req"]);
        }
        headers
    }

    fn cells(self, r: &Row, change: Option<&Change>) -> Vec<String> {
        let mut cells = vec![
            if r.from_unclean {
                format!("{}*", r.peer)
            } else {
                r.peer.clone()
            },
            rps_cell(r),
            ratio(r.ratio_to_ringway),
            format!("{:.0}", r.latency_us.p50),
            format!("{:.0}", r.latency_us.p99),
            format!("{:.0}", r.latency_us.p999),
            opt(r.cpu_us_per_req, 2),
            ratio(r.cpu_ratio_to_ringway),
        ];
        if self.sys {
            cells.push(opt(r.syscalls_per_req, 3));
        }
        if self.instr {
            cells.push(opt(r.instructions_per_req, 0));
        }
        if self.rss {
            cells.push(opt(r.rss_per_conn_kib, 2));
        }
        if self.wrk {
            cells.push(r.wrk_rps.map_or("-".into(), fmt_rate));
        }
        cells.push(r.errors_total.to_string());
        cells.push(format!("{}/{}", r.clean_rounds, r.rounds));
        cells.push(r.stalled_rounds.to_string());
        cells.push(r.contended_rounds.to_string());
        if self.cmp {
            let pct = |x: f64| format!("{:+.1}%", (x - 1.0) * 100.0);
            cells.push(change.and_then(|c| c.rps).map_or("new".into(), pct));
            cells.push(change.and_then(|c| c.cpu).map_or("-".into(), pct));
        }
        cells
    }
}

/// The table of one variant. `changes` adds a column per compared figure.
pub fn variant_table(
    results: &Results,
    scenario: &str,
    variant: &str,
    changes: &[Change],
) -> String {
    let rows: Vec<&Row> = results
        .rows
        .iter()
        .filter(|r| r.scenario == scenario && r.variant == variant)
        .collect();
    let columns = Columns::of(&rows, changes);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let change = changes
                .iter()
                .find(|c| c.peer == r.peer && c.scenario == scenario && c.variant == variant);
            columns.cells(r, change)
        })
        .collect();
    render(&columns.headers(), &body)
}

/// S9's capacity at a latency bound, one line per peer.
fn capacity_table(results: &Results) -> String {
    if results.capacity.is_empty() {
        return String::new();
    }
    let fmt = |v: Option<f64>| v.map_or("<first step".to_string(), fmt_rate);
    let rows: Vec<Vec<String>> = results
        .capacity
        .iter()
        .map(|c| {
            vec![
                c.peer.clone(),
                fmt(c.at_1ms),
                fmt(c.at_10ms),
                format!("{} ({} stalled)", c.steps, c.stalled_steps),
            ]
        })
        .collect();
    format!(
        "\n== S9 capacity: highest offered req/s with p99 under the bound (stall-free windows)\n{}",
        render(&["peer", "p99 < 1 ms", "p99 < 10 ms", "steps"], &rows)
    )
}

/// The wrk cross-check, when it ran.
fn wrk_table(results: &Results) -> String {
    if results.wrk.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    out.push_str("\n== wrk cross-check (S5 c50, req/s)\n");
    let rows: Vec<Vec<String>> = results
        .wrk
        .iter()
        .map(|w| {
            vec![
                w.peer.clone(),
                fmt_rate(w.wrk_rps),
                fmt_rate(w.load_rps),
                format!("{:.2}", w.ratio),
                if w.agrees {
                    "yes".into()
                } else {
                    "NO (beyond 10%)".into()
                },
            ]
        })
        .collect();
    out.push_str(&render(
        &["peer", "wrk", "ringway load", "wrk / load", "within 10%"],
        &rows,
    ));
    out
}

/// The whole terminal report.
pub fn render_all(results: &Results, changes: &[Change]) -> String {
    let mut out = String::new();
    out.push_str("== Headline: ringway/uring against the best peer (floor excluded)\n");
    out.push_str("   (verdicts from paired rounds: ringway's advantage, above 1 better, with its interval;\n    ahead/behind only when the whole interval is beyond 2%; see docs/benchmarks.md)\n");
    for h in headlines(results) {
        out.push_str(&format!(
            "  {} {:<12} {}\n",
            h.scenario,
            h.variant,
            h.sentence()
        ));
    }
    out.push_str(&capacity_table(results));
    for (scenario, variant) in results.variants() {
        let title = results
            .rows
            .iter()
            .find(|r| r.scenario == scenario && r.variant == variant)
            .map(|r| r.title.clone())
            .unwrap_or_default();
        out.push_str(&format!("\n== {scenario} {variant}: {title}\n"));
        if let Some(n) = crate::suite::scenarios::note(&scenario) {
            out.push_str(&format!("   ({n})\n"));
        }
        out.push_str(&variant_table(results, &scenario, &variant, changes));
    }
    if results.rows.iter().any(|r| r.stalled_rounds > 0) {
        out.push_str(&format!(
            "\nstalled: rounds whose window held a host stall (a sleeper {} woke {:.0} ms or more late, or 20 ms of steal): their tails are shown, not ranked\n",
            if results.meta.stall_watch_fifo { "under SCHED_FIFO" } else { "(normal priority)" },
            results.meta.stall_threshold_ms
        ));
    }
    if results.rows.iter().any(|r| r.contended_rounds > 0) {
        out.push_str(&format!(
            "\ncontended: rounds in which other processes took {:.0}% or more of the server's and the client's CPUs (their busy time in /proc/stat beyond what the measured processes used): shown, never ranked\n",
            crate::suite::results::CONTENDED_SHARE * 100.0
        ));
    }
    if results.rows.iter().any(|r| r.from_unclean) {
        out.push_str(&format!(
            "\n* no clean round (clean: the client or the server kept >= {:.0}% of its core over the window): figures from unclean rounds\n",
            results.meta.clean_share * 100.0
        ));
    }
    out.push_str(&wrk_table(results));
    let notable: Vec<_> = results
        .not_measured
        .iter()
        .filter(|n| n.status != "not applicable")
        .collect();
    if !notable.is_empty() {
        out.push_str("\n== Not measured\n");
        for n in notable {
            out.push_str(&format!(
                "  {} {} {}: {}: {}\n",
                n.scenario, n.variant, n.peer, n.status, n.reason
            ));
        }
    }
    for m in &results.meta.missing_tools {
        out.push_str(&format!("  missing: {m}\n"));
    }
    out
}
