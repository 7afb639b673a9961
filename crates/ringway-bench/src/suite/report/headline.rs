//! The headline of a run: per scenario variant, ringway/uring against the best peer on
//! the figure that scenario exists to show, and where ringway loses, by how much.
//!
//! The figure is the one the goals of the suite name: p99 latency in S1 and S9 (lower
//! is better), server CPU per request in S5 and S7 (lower is better: without
//! pipelining the client saturates first, so req/s there measures the client) and S14
//! (the Python loops, where the reference is ringway's loop, `py-ringway`), req/s
//! elsewhere (higher is better). The floor is a physical limit, not a competitor: the
//! best *peer* excludes it, and ringway's distance to the floor is given beside.

use serde::Serialize;

use crate::suite::results::{reference_peer, Results, Row};

/// The floor's name in the registry.
pub const FLOOR: &str = "floor";

/// Which figure decides a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Figure {
    /// Requests per second (higher is better).
    Rps,
    /// Server CPU µs per request (lower is better).
    CpuPerReq,
    /// p99 latency µs (lower is better).
    P99,
}

impl Figure {
    /// The figure for `scenario`.
    pub fn of(scenario: &str) -> Figure {
        match scenario {
            "S1" | "S9" => Figure::P99,
            "S5" | "S7" | "S14" => Figure::CpuPerReq,
            _ => Figure::Rps,
        }
    }

    /// Its value in `row`.
    pub fn value(self, row: &Row) -> Option<f64> {
        match self {
            Figure::Rps => (row.rps > 0.0).then_some(row.rps),
            Figure::CpuPerReq => row.cpu_us_per_req.filter(|c| *c > 0.0),
            Figure::P99 => (row.latency_us.p99 > 0.0).then_some(row.latency_us.p99),
        }
    }

    /// `true` when a larger value is better.
    pub fn higher_is_better(self) -> bool {
        self == Figure::Rps
    }

    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            Figure::Rps => "req/s",
            Figure::CpuPerReq => "server CPU µs/req",
            Figure::P99 => "p99 µs",
        }
    }

    /// A value formatted for its unit.
    pub fn format(self, v: f64) -> String {
        match self {
            Figure::Rps => crate::measure::text_table::fmt_rate(v),
            Figure::CpuPerReq => format!("{v:.2}"),
            Figure::P99 => format!("{v:.0}"),
        }
    }
}

/// One line of the headline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// `S5`.
    pub scenario: String,
    /// `c50`.
    pub variant: String,
    /// The deciding figure.
    pub figure: Figure,
    /// ringway's peer in this scenario: `ringway-uring`, or `py-ringway` in S14.
    pub who: String,
    /// Its value.
    pub ringway: f64,
    /// The best other peer (floor excluded) and its value.
    pub best: Option<(String, f64)>,
    /// How much better ringway is than the best peer: above 1 ringway wins (best's
    /// value over ringway's for lower-is-better figures, ringway's over best's else).
    pub advantage: Option<f64>,
    /// The floor's value, when measured.
    pub floor: Option<f64>,
    /// ringway's figure or the best peer's comes from rounds that were not clean (in
    /// none did the client or the server keep its core busy: the host took time from
    /// both, or the shape never saturates either, as one connection's ping-pong): the
    /// sentence says so, as the tables mark such rows with `*`.
    pub unclean: bool,
}

impl Headline {
    /// `true` when ringway/uring is at least as good as every peer.
    pub fn ringway_leads(&self) -> bool {
        self.advantage.map_or(true, |a| a >= 1.0)
    }

    /// One sentence.
    pub fn sentence(&self) -> String {
        let f = self.figure;
        let mine = f.format(self.ringway);
        let Some((best, value)) = &self.best else {
            return format!("{} {mine} {} (no other peer measured)", self.who, f.label());
        };
        let adv = self.advantage.unwrap_or(1.0);
        let verdict = if adv >= 1.0 {
            format!(
                "ahead of the best peer {best} ({}) by {:.0}%",
                f.format(*value),
                (adv - 1.0) * 100.0
            )
        } else {
            let behind = if f.higher_is_better() {
                format!("{:.0}% fewer", (1.0 - adv) * 100.0)
            } else {
                format!("{:.0}% more", (1.0 / adv - 1.0) * 100.0)
            };
            format!("LOSES to {best} ({}): {behind}", f.format(*value))
        };
        let floor = self
            .floor
            .map(|fl| format!("; the floor: {}", f.format(fl)))
            .unwrap_or_default();
        let unclean = if self.unclean {
            " (* from rounds that were not clean)"
        } else {
            ""
        };
        format!(
            "{} {mine} {}, {verdict}{floor}{unclean}",
            self.who,
            f.label()
        )
    }
}

/// The headline of every variant ringway/uring was measured in.
pub fn headlines(results: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    for (scenario, variant) in results.variants() {
        let figure = Figure::of(&scenario);
        let who = reference_peer(&scenario);
        let Some((mine, mine_unclean)) = results
            .row(who, &scenario, &variant)
            .and_then(|r| figure.value(r).map(|v| (v, r.from_unclean)))
        else {
            continue;
        };
        let others = results
            .rows
            .iter()
            .filter(|r| r.scenario == scenario && r.variant == variant)
            .filter(|r| r.peer != who && r.peer != FLOOR)
            .filter_map(|r| figure.value(r).map(|v| (r, v)));
        let best = others.fold(None::<(&Row, f64)>, |acc, (r, v)| match acc {
            Some((_, bv))
                if (figure.higher_is_better() && bv >= v)
                    || (!figure.higher_is_better() && bv <= v) =>
            {
                acc
            }
            _ => Some((r, v)),
        });
        let unclean = mine_unclean || best.is_some_and(|(r, _)| r.from_unclean);
        let best = best.map(|(r, v)| (r.peer.clone(), v));
        let advantage = best.as_ref().map(|(_, v)| {
            if figure.higher_is_better() {
                mine / v
            } else {
                v / mine
            }
        });
        out.push(Headline {
            floor: results
                .row(FLOOR, &scenario, &variant)
                .and_then(|r| figure.value(r)),
            scenario,
            variant,
            figure,
            who: who.to_string(),
            ringway: mine,
            best,
            advantage,
            unclean,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::results::RINGWAY;

    fn row(peer: &str, scenario: &str, rps: f64, cpu: f64, p99: f64) -> Row {
        let mut r = Row {
            peer: peer.into(),
            scenario: scenario.into(),
            variant: "v".into(),
            rps,
            cpu_us_per_req: Some(cpu),
            ..Row::default()
        };
        r.latency_us.p99 = p99;
        r
    }

    #[test]
    fn picks_the_figure_and_the_best_peer_without_the_floor() {
        let results = Results {
            rows: vec![
                row(RINGWAY, "S8", 1000.0, 4.0, 100.0),
                row("tokio-raw", "S8", 1500.0, 3.0, 90.0),
                row(FLOOR, "S8", 3000.0, 1.0, 10.0),
                row(RINGWAY, "S5", 200.0, 4.0, 100.0),
                row("nginx", "S5", 210.0, 5.0, 90.0),
                row(RINGWAY, "S1", 20.0, 4.0, 50.0),
                row("hyper", "S1", 20.0, 4.0, 100.0),
            ],
            ..Results::default()
        };
        let h = headlines(&results);
        let s8 = h.iter().find(|h| h.scenario == "S8").unwrap();
        assert_eq!(s8.figure, Figure::Rps);
        assert_eq!(s8.best, Some(("tokio-raw".to_string(), 1500.0)));
        assert!(!s8.ringway_leads());
        assert!(
            s8.sentence().contains("LOSES to tokio-raw"),
            "{}",
            s8.sentence()
        );
        assert!(s8.sentence().contains("33% fewer"), "{}", s8.sentence());
        assert_eq!(s8.floor, Some(3000.0));
        let s5 = h.iter().find(|h| h.scenario == "S5").unwrap();
        assert_eq!(s5.figure, Figure::CpuPerReq);
        assert_eq!(s5.advantage, Some(1.25));
        assert!(s5.ringway_leads());
        assert!(
            s5.sentence().contains("ahead of the best peer nginx"),
            "{}",
            s5.sentence()
        );
        let s1 = h.iter().find(|h| h.scenario == "S1").unwrap();
        assert_eq!((s1.figure, s1.advantage), (Figure::P99, Some(2.0)));
        assert!(h
            .iter()
            .all(|h| !h.unclean && !h.sentence().contains("not clean")));
    }

    #[test]
    fn says_when_a_figure_compared_comes_from_unclean_rounds() {
        let mut slow = row("compio", "S9", 100.0, 4.0, 60.0);
        slow.from_unclean = true;
        let mut fast = row("monoio", "S1", 100.0, 4.0, 40.0);
        fast.from_unclean = true;
        let mut mine = row(RINGWAY, "S8", 100.0, 4.0, 50.0);
        mine.from_unclean = true;
        let results = Results {
            rows: vec![
                // The best peer's figure is unclean.
                row(RINGWAY, "S1", 100.0, 4.0, 50.0),
                fast,
                // ringway's own figure is unclean.
                mine,
                row("tokio-raw", "S8", 90.0, 4.0, 50.0),
                // Only a peer that is not the best is unclean: a verdict.
                row(RINGWAY, "S9", 100.0, 4.0, 50.0),
                row("monoio", "S9", 100.0, 4.0, 45.0),
                slow,
            ],
            ..Results::default()
        };
        let h = headlines(&results);
        let get = |s: &str| h.iter().find(|h| h.scenario == s).unwrap();
        for s in ["S1", "S8"] {
            assert!(get(s).unclean, "{s}");
            assert!(
                get(s)
                    .sentence()
                    .ends_with("(* from rounds that were not clean)"),
                "{}",
                get(s).sentence()
            );
        }
        assert!(get("S1").sentence().contains("LOSES to monoio"));
        assert!(!get("S9").unclean);
        assert!(get("S9").sentence().contains("LOSES to monoio (45)"));
        assert!(!get("S9").sentence().contains("not clean"));
    }
}
