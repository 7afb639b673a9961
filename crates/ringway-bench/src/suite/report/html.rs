//! The HTML report: one self-contained, well-formed document (inline CSS, inline SVG
//! charts, no scripts of its own, nothing fetched) that opens with the headline, says
//! plainly where ringway loses and by how much, then gives each scenario its charts and
//! its table, the method and the machine, the peers and their declared deviations, what
//! was not measured, and optionally the comparison and the flamegraph.

use std::fmt::Write as _;

use crate::measure::text_table::fmt_rate;
use crate::suite::report::charts;
use crate::suite::report::compare::Change;
use crate::suite::report::headline::{headlines, Headline};
use crate::suite::report::verdict::Call;
use crate::suite::results::{Results, Row};
use crate::suite::scenarios::title as scenario_title;

/// Escapes text for element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}\
h1{margin-bottom:0.2em}table{border-collapse:collapse;margin:0.6em 0 1.4em}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}\
td:first-child,th:first-child{text-align:left}th{background:#f2f2f2}\
.lose{color:#b00;font-weight:bold}.win{color:#070}.level{color:#555}.charts{display:flex;flex-wrap:wrap;gap:12px}\
.chart{border:1px solid #ddd}.note{color:#555;font-size:13px}tr.ringway td{background:#fff3f3}\
code{background:#f4f4f4;padding:0 3px}";

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |x| format!("{x:.digits$}"))
}

fn headline_section(out: &mut String, hs: &[Headline]) {
    out.push_str("<h2 id=\"headline\">Headline: ringway against the best peer</h2>\n");
    out.push_str(
        "<p class=\"note\">Per scenario variant, the figure it exists to show: p99 latency in S1 and S9 \
         (rounds without a host stall only), server CPU per request in S5, S7, S14 and S15 (without \
         pipelining the client saturates first, so req/s there measures the client), req/s elsewhere. \
         The verdict pairs each round of ringway with the same round of the peer (they ran seconds \
         apart) and comes from the interval of the paired ratios (above 1: ringway better): ahead or \
         behind only when the whole interval is beyond 2%, level within noise otherwise. Counted \
         figures (instructions, syscalls per request) do not drift; a timed verdict that is level \
         defers to the instructions when they differ by more than 5%. The floor is the physical \
         limit, not a competitor: it is left out of \"best peer\" and shown beside. See \
         docs/benchmarks.md.</p>\n",
    );
    out.push_str("<table><tr><th>scenario</th><th>figure</th><th>ringway</th><th>best peer</th><th>its value</th><th>ringway's advantage (interval, pairs, confidence)</th><th>verdict</th><th>rests on</th><th>counted</th><th>floor</th></tr>\n");
    for h in hs {
        headline_row(out, h);
    }
    out.push_str("</table>\n");
    let losses: Vec<&Headline> = hs
        .iter()
        .filter(|h| !h.ringway_leads() || !h.behind.is_empty())
        .collect();
    out.push_str("<h3>Where ringway is behind</h3>\n");
    if losses.is_empty() {
        out.push_str("<p>Nowhere in this run: against every peer, on every figure above, ringway is ahead or level within noise.</p>\n");
    } else {
        out.push_str("<ul>\n");
        for h in losses {
            let _ = writeln!(
                out,
                "<li class=\"lose\">{} {}: {}</li>",
                esc(&h.scenario),
                esc(&h.variant),
                esc(&h.sentence())
            );
        }
        out.push_str("</ul>\n");
    }
}

/// One variant's line of the headline table.
fn headline_row(out: &mut String, h: &Headline) {
    let f = h.figure;
    let (best, value) = h
        .best
        .as_ref()
        .map_or(("–".to_string(), "–".to_string()), |(p, v)| {
            (p.clone(), f.format(*v))
        });
    let (verdict, class, evidence) = match h.verdict {
        Some((call, evidence)) => (
            call.words(),
            match call {
                Call::Ahead => "win",
                Call::Behind => "lose",
                Call::Level => "level",
            },
            evidence.words(),
        ),
        None => ("no verdict", "level", "–"),
    };
    let counted: Vec<String> = h.counted.iter().map(|c| c.describe()).collect();
    let _ = writeln!(
        out,
        "<tr><td>{} {}{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(&h.scenario),
        esc(&h.variant),
        if h.who == crate::suite::results::RINGWAY {
            String::new()
        } else {
            format!(" ({})", esc(&h.who))
        },
        esc(f.label()),
        f.format(h.ringway),
        if h.unclean { "*" } else { "" },
        esc(&best),
        value,
        h.timed.as_ref().map_or("–".into(), |t| esc(&t.describe())),
        verdict,
        evidence,
        esc(&counted.join("; ")),
        h.floor.map_or("–".into(), |v| f.format(v)),
    );
}

/// S9's capacity at a latency bound: a table and the p99-against-rate chart of the
/// steps.
fn capacity_section(out: &mut String, results: &Results) {
    if results.capacity.is_empty() {
        return;
    }
    out.push_str(
        "<h2 id=\"capacity\">Capacity at a latency bound (S9, S5-shaped: 50 connections)</h2>\n",
    );
    out.push_str("<p class=\"note\">The highest offered rate at which p99 stayed under 1 ms (and under 10 ms), the open-loop rate stepped up, peers interleaved step by step, stall-free windows only (a window with a host stall is run again once; if it stalls again it is shown in the chart and not used).</p>\n");
    out.push_str("<table><tr><th>peer</th><th>req/s at p99 &lt; 1 ms</th><th>req/s at p99 &lt; 10 ms</th><th>steps</th><th>stalled steps</th></tr>\n");
    let fmt = |v: Option<f64>| v.map_or("below the first step".into(), fmt_rate);
    for c in &results.capacity {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.peer),
            fmt(c.at_1ms),
            fmt(c.at_10ms),
            c.steps,
            c.stalled_steps
        );
    }
    out.push_str("</table>\n<div class=\"charts\">\n");
    let rows: Vec<Row> = results
        .rounds
        .iter()
        .filter(|r| r.scenario == "S9" && r.variant == "capacity" && r.ok)
        .map(|r| Row {
            peer: r.peer.clone(),
            latency_us: r.latency_us,
            extra: r.extra.clone(),
            ..Row::default()
        })
        .collect();
    let refs: Vec<&Row> = rows.iter().collect();
    chart_div(
        out,
        "S9",
        "capacity",
        "capacity",
        charts::open_loop("S9 capacity: latency against offered rate", &refs),
    );
    let bars: Vec<Row> = results
        .capacity
        .iter()
        .map(|c| Row {
            peer: c.peer.clone(),
            rps: c.at_1ms.unwrap_or(0.0),
            ..Row::default()
        })
        .collect();
    let refs: Vec<&Row> = bars.iter().collect();
    chart_div(
        out,
        "S9",
        "capacity",
        "capacity-1ms",
        charts::bars("S9: req/s at p99 under 1 ms", "req/s", &refs, |r| {
            (r.rps > 0.0).then_some((r.rps, None))
        }),
    );
    out.push_str("</div>\n");
}

fn row_table(out: &mut String, rows: &[&Row], changes: &[Change]) {
    let cols = Columns {
        sys: rows.iter().any(|r| r.syscalls_per_req.is_some()),
        instr: rows.iter().any(|r| r.instructions_per_req.is_some()),
        rss: rows.iter().any(|r| r.rss_per_conn_kib.is_some()),
        wrk: rows.iter().any(|r| r.wrk_rps.is_some()),
    };
    let Columns {
        sys,
        instr,
        rss,
        wrk,
    } = cols;
    out.push_str("<table><tr><th>peer</th><th>req/s (min–max)</th><th>x ringway</th><th>p50 µs</th><th>p90 µs</th><th>p99 µs</th><th>p99.9 µs</th><th>max µs</th><th>CPU µs/req</th><th>CPU x ringway</th>");
    if sys {
        out.push_str("<th>syscalls/req</th><th>io_uring_enter/req</th>");
    }
    if instr {
        out.push_str("<th>instructions/req</th>");
    }
    if rss {
        out.push_str("<th>RSS KiB/conn</th>");
    }
    if wrk {
        out.push_str("<th>wrk req/s</th>");
    }
    out.push_str(
        "<th>errors</th><th>clean rounds</th><th>stalled rounds</th><th>contended rounds</th>",
    );
    if !changes.is_empty() {
        out.push_str("<th>Δ req/s</th><th>Δ CPU/req</th><th>Δ instr/req</th>");
    }
    out.push_str("</tr>\n");
    for r in rows {
        table_row(out, r, cols, changes);
    }
    out.push_str("</table>\n");
}

/// Which optional columns a variant's table has.
#[derive(Debug, Clone, Copy)]
struct Columns {
    sys: bool,
    instr: bool,
    rss: bool,
    wrk: bool,
}

/// One peer's row of a variant's table.
fn table_row(out: &mut String, r: &Row, cols: Columns, changes: &[Change]) {
    let Columns {
        sys,
        instr,
        rss,
        wrk,
    } = cols;
    let class = if r.peer == crate::suite::results::RINGWAY {
        " class=\"ringway\""
    } else {
        ""
    };
    let _ = write!(
        out,
        "<tr{class}><td>{}{}</td><td>{} ({}–{})</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td><td>{}</td>",
        esc(&r.peer),
        if r.from_unclean { "*" } else { "" },
        fmt_rate(r.rps),
        fmt_rate(r.rps_min),
        fmt_rate(r.rps_max),
        opt(r.ratio_to_ringway, 2),
        r.latency_us.p50,
        r.latency_us.p90,
        r.latency_us.p99,
        r.latency_us.p999,
        r.latency_us.max,
        opt(r.cpu_us_per_req, 2),
        opt(r.cpu_ratio_to_ringway, 2),
    );
    if sys {
        let _ = write!(
            out,
            "<td>{}</td><td>{}</td>",
            opt(r.syscalls_per_req, 3),
            opt(r.io_uring_enter_per_req, 3)
        );
    }
    if instr {
        let _ = write!(out, "<td>{}</td>", opt(r.instructions_per_req, 0));
    }
    if rss {
        let _ = write!(out, "<td>{}</td>", opt(r.rss_per_conn_kib, 2));
    }
    if wrk {
        let _ = write!(out, "<td>{}</td>", r.wrk_rps.map_or("–".into(), fmt_rate));
    }
    let errors = if r.errors.is_empty() {
        "0".to_string()
    } else {
        r.errors
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(
        out,
        "<td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td>",
        esc(&errors),
        r.clean_rounds,
        r.rounds,
        r.stalled_rounds,
        r.contended_rounds
    );
    if !changes.is_empty() {
        let c = changes
            .iter()
            .find(|c| c.peer == r.peer && c.scenario == r.scenario && c.variant == r.variant);
        let pct =
            |x: Option<f64>| x.map_or("–".into(), |x| format!("{:+.1}%", (x - 1.0) * 100.0));
        let _ = write!(
            out,
            "<td>{}</td><td>{}</td><td>{}</td>",
            pct(c.and_then(|c| c.rps)),
            pct(c.and_then(|c| c.cpu)),
            pct(c.and_then(|c| c.instructions))
        );
    }
    out.push_str("</tr>\n");
}

fn chart_div(
    out: &mut String,
    scenario: &str,
    variant: &str,
    kind: &str,
    svg: Result<String, String>,
) {
    match svg {
        Ok(svg) => {
            let _ = writeln!(
                out,
                "<div class=\"chart\" data-scenario=\"{}\" data-variant=\"{}\" data-kind=\"{kind}\">{}</div>",
                esc(scenario),
                esc(variant),
                strip_xml_prolog(&svg)
            );
        }
        Err(e) => {
            let _ = writeln!(out, "<p class=\"lose\">{}</p>", esc(&e));
        }
    }
}

fn strip_xml_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

fn scenario_sections(out: &mut String, results: &Results, changes: &[Change]) {
    let variants = results.variants();
    let mut scenarios: Vec<String> = Vec::new();
    for (s, _) in &variants {
        if !scenarios.contains(s) {
            scenarios.push(s.clone());
        }
    }
    for s in scenarios {
        let _ = writeln!(
            out,
            "<h2 id=\"{0}\">{0}: {1}</h2>",
            esc(&s),
            esc(scenario_title(&s))
        );
        if let Some(n) = crate::suite::scenarios::note(&s) {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(n));
        }
        if s == "S9" {
            let rows: Vec<&Row> = results.rows.iter().filter(|r| r.scenario == "S9").collect();
            out.push_str("<div class=\"charts\">\n");
            chart_div(
                out,
                "S9",
                "all",
                "open-loop",
                charts::open_loop("S9: latency against offered rate", &rows),
            );
            out.push_str("</div>\n");
            if let Some((base, from)) = &results.meta.open_loop_base {
                let _ = writeln!(
                    out,
                    "<p class=\"note\">100% = {} req/s: {}. Latency is timed from each request's intended send time (corrected for coordinated omission).</p>",
                    fmt_rate(*base),
                    esc(from)
                );
            }
        }
        for (_, variant) in variants.iter().filter(|(vs, _)| *vs == s) {
            variant_section(out, results, &s, variant, changes);
        }
    }
}

/// One variant's charts, table and shape-specific figures.
fn variant_section(
    out: &mut String,
    results: &Results,
    s: &str,
    variant: &str,
    changes: &[Change],
) {
    let rows: Vec<&Row> = results
        .rows
        .iter()
        .filter(|r| r.scenario == s && r.variant == variant)
        .collect();
    let title = rows.first().map(|r| r.title.clone()).unwrap_or_default();
    let _ = writeln!(out, "<h3>{} {}: {}</h3>", esc(s), esc(variant), esc(&title));
    if s != "S9" {
        out.push_str("<div class=\"charts\">\n");
        if s == "S1" {
            chart_div(
                out,
                s,
                variant,
                "latency",
                charts::latency_curves(&format!("{s} {variant}: latency by percentile"), &rows),
            );
        } else {
            chart_div(
                out,
                s,
                variant,
                "throughput",
                charts::bars(&format!("{s} {variant}: req/s"), "req/s", &rows, |r| {
                    (r.rps > 0.0).then_some((r.rps, Some((r.rps_min, r.rps_max))))
                }),
            );
        }
        chart_div(
            out,
            s,
            variant,
            "cpu",
            charts::bars(
                &format!("{s} {variant}: server CPU µs per request"),
                "µs",
                &rows,
                |r| r.cpu_us_per_req.map(|c| (c, r.cpu_us_per_req_range)),
            ),
        );
        out.push_str("</div>\n");
    }
    row_table(out, &rows, changes);
    let extras: Vec<String> = rows
        .iter()
        .filter(|r| !r.extra.is_empty())
        .map(|r| {
            let kv: Vec<String> = r.extra.iter().map(|(k, v)| format!("{k} {v:.1}")).collect();
            format!("{}: {}", r.peer, kv.join(", "))
        })
        .collect();
    if !extras.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&extras.join("; ")));
    }
}

fn meta_section(out: &mut String, results: &Results) {
    let m = &results.meta;
    out.push_str("<h2 id=\"method\">Method and machine</h2>\n<table>\n");
    let mut kv = |k: &str, v: String| {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
            esc(k),
            esc(&v)
        );
    };
    kv("command", m.command.clone());
    kv(
        "network",
        if m.net.is_empty() {
            "loopback".into()
        } else {
            m.net.clone()
        },
    );
    kv(
        "host stalls",
        format!(
            "a sleeper per server and client CPU ({}) wakes every millisecond; a round with a wake-up {:.0} ms late or 20 ms of steal is stalled: its tail is shown, not ranked",
            if m.stall_watch_fifo { "SCHED_FIFO" } else { "normal priority: no privilege for SCHED_FIFO" },
            m.stall_threshold_ms
        ),
    );
    kv(
        "other work",
        format!(
            "a round in which other processes took {:.0}% or more of the server's and the client's CPUs (their busy time in /proc/stat beyond the measured processes' CPU) is contended: shown, never ranked",
            crate::suite::results::CONTENDED_SHARE * 100.0
        ),
    );
    kv("ringway", m.ringway.clone());
    kv("kernel", m.kernel.clone());
    kv("CPU", format!("{} ({} CPUs)", m.cpu, m.cpus));
    kv(
        "pinning",
        format!(
            "server on CPU {}, client (ringway load) and harness on CPU {}",
            m.server_cpus, m.client_cpus
        ),
    );
    kv(
        "rounds",
        format!(
            "{} rounds of {}s per variant, peers interleaved round by round, {}s warm-up per peer and variant, fresh processes per variant",
            m.rounds, m.duration_s, m.warmup_s
        ),
    );
    kv(
        "clean rounds",
        format!(
            "a round counts when the client or the server kept at least {:.0}% of its core; rows marked * had none",
            m.clean_share * 100.0
        ),
    );
    kv("CPU per request", "server utime+stime of its whole process tree (scheduler runtime from /proc/PID/task/*/schedstat) over the client's run, divided by the requests completed".into());
    kv("syscalls", "perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter over a client run of its own (counters enabled and disabled around it)".into());
    kv(
        "versions",
        m.versions
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join("; "),
    );
    kv("mitigations", m.mitigations.join("; "));
    kv("elapsed", format!("{:.0} s", m.elapsed_s));
    if !m.missing_tools.is_empty() {
        kv(
            "missing tools (columns left out)",
            m.missing_tools.join("; "),
        );
    }
    out.push_str("</table>\n<p class=\"note\">Absolute figures on a shared VM drift 20–30% between runs: read ratios measured in one run. Instruction counts (callgrind) do not drift.</p>\n");
}

fn peers_section(out: &mut String, results: &Results) {
    out.push_str("<h2 id=\"peers\">Peers</h2>\n<table><tr><th>peer</th><th>what it is</th><th>HTTP</th><th>response bytes</th><th>declared differences from ringway's response</th></tr>\n");
    for p in &results.peers {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
            esc(&p.name),
            esc(&p.about),
            esc(&p.http),
            p.response_bytes.map_or("–".into(), |b| b.to_string()),
            esc(&if p.deviations.is_empty() { "none: byte-identical but the Date".to_string() } else { p.deviations.join(", ") }),
        );
    }
    out.push_str("</table>\n");
}

fn misc_sections(out: &mut String, results: &Results, changes: &[Change]) {
    if !results.wrk.is_empty() {
        out.push_str("<h2 id=\"wrk\">wrk cross-check (S5 c50)</h2>\n<table><tr><th>peer</th><th>wrk req/s</th><th>ringway load req/s</th><th>wrk / load</th><th>within 10%</th></tr>\n");
        for w in &results.wrk {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td class=\"{}\">{}</td></tr>",
                esc(&w.peer),
                fmt_rate(w.wrk_rps),
                fmt_rate(w.load_rps),
                w.ratio,
                if w.agrees { "win" } else { "lose" },
                if w.agrees { "yes" } else { "no" }
            );
        }
        out.push_str("</table>\n");
    }
    let notable: Vec<_> = results.not_measured.iter().collect();
    if !notable.is_empty() {
        out.push_str("<h2 id=\"not-measured\">Not measured</h2>\n<table><tr><th>peer</th><th>scenario</th><th>status</th><th>why</th></tr>\n");
        for n in notable {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{} {}</td><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(&n.peer),
                esc(&n.scenario),
                esc(&n.variant),
                esc(&n.status),
                esc(&n.reason)
            );
        }
        out.push_str("</table>\n");
    }
    if !changes.is_empty() {
        let _ = writeln!(
            out,
            "<h2 id=\"compare\">Change against the earlier run</h2>\n<p class=\"note\">{} rows compared (the Δ columns of each table). Wall-clock figures of two runs differ by 20–30% on this kind of machine without any change in code; instruction counts do not.</p>",
            changes.len()
        );
    }
    if let Some(p) = &results.profile {
        let _ = writeln!(
            out,
            "<h2 id=\"profile\">Flamegraph: {} in {} ({} samples, perf record -e cpu-clock -g)</h2>\n<iframe title=\"flamegraph\" style=\"width:100%;height:640px;border:1px solid #ddd\" srcdoc=\"{}\"></iframe>",
            esc(&p.peer),
            esc(&p.variant),
            p.samples,
            esc(&p.svg)
        );
    }
}

/// The whole report.
pub fn render(results: &Results, changes: &[Change]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\" xmlns=\"http://www.w3.org/1999/xhtml\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>ringway bench</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>ringway bench</h1>\n<p class=\"note\">{} · kernel {} · {} · server CPU {}, client CPU {}</p>\n",
        esc(&results.meta.ringway),
        esc(&results.meta.kernel),
        esc(&results.meta.cpu),
        esc(&results.meta.server_cpus),
        esc(&results.meta.client_cpus)
    );
    headline_section(&mut out, &headlines(results));
    capacity_section(&mut out, results);
    scenario_sections(&mut out, results, changes);
    peers_section(&mut out, results);
    meta_section(&mut out, results);
    misc_sections(&mut out, results, changes);
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::results::{Round, Row, RINGWAY};

    fn row(peer: &str, scenario: &str, variant: &str, rps: f64) -> Row {
        let mut r = Row {
            peer: peer.into(),
            scenario: scenario.into(),
            variant: variant.into(),
            title: "t <&>".into(),
            rps,
            rps_min: rps,
            rps_max: rps,
            cpu_us_per_req: Some(4.0),
            rounds: 1,
            clean_rounds: 1,
            latency_curve: vec![(50.0, 10.0), (99.0, 40.0)],
            ..Row::default()
        };
        r.latency_us.p99 = 40.0;
        r.extra.insert("offered_rps".into(), rps);
        r
    }

    #[test]
    fn report_is_well_formed_with_a_chart_per_scenario_and_the_losses_named() {
        // S8's five paired rounds: nginx serves twice ringway's req/s in every one.
        let rounds = (1..=5)
            .flat_map(|n| {
                [(RINGWAY, 100.0), ("nginx", 200.0)].map(|(peer, rps)| Round {
                    peer: peer.into(),
                    scenario: "S8".into(),
                    variant: "p16".into(),
                    round: n,
                    ok: true,
                    clean: true,
                    rps: rps + n as f64,
                    ..Round::default()
                })
            })
            .collect();
        let results = Results {
            rows: vec![
                row(RINGWAY, "S1", "c1", 10_000.0),
                row("nginx", "S1", "c1", 12_000.0),
                row(RINGWAY, "S8", "p16", 100.0),
                row("nginx", "S8", "p16", 200.0),
                row(RINGWAY, "S9", "50%", 100.0),
                row(RINGWAY, "S9", "90%", 180.0),
            ],
            rounds,
            capacity: vec![crate::suite::results::Capacity {
                peer: RINGWAY.into(),
                at_1ms: Some(50_000.0),
                at_10ms: Some(90_000.0),
                steps: 9,
                stalled_steps: 1,
            }],
            ..Results::default()
        };
        let html = render(&results, &[]);
        let opts = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&html, opts).expect("well-formed");
        for s in ["S1", "S8", "S9"] {
            let n = doc
                .descendants()
                .filter(|n| {
                    n.attribute("class") == Some("chart") && n.attribute("data-scenario") == Some(s)
                })
                .filter(|n| n.children().any(|c| c.tag_name().name() == "svg"))
                .count();
            assert!(n >= 1, "no chart for {s}");
        }
        assert!(
            html.contains("BEHIND the best peer nginx"),
            "S8's loss named, from its paired rounds"
        );
        assert!(html.contains("id=\"capacity\""), "the capacity table");
        assert!(html.contains("50.0k"), "ringway's capacity at 1 ms");
        assert!(html.contains("t &lt;&amp;&gt;"), "titles escaped");
    }
}
