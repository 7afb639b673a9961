//! The headline of a run: per scenario variant, ringway against the best other peer on
//! the figure that scenario exists to show, with a verdict that says only what the
//! rounds support ([`crate::suite::report::verdict`]): ahead, behind, or level within
//! noise, from the interval of the paired rounds, and which kind of evidence it rests
//! on.
//!
//! The figure is the one the goals of the suite name: p99 latency in S1 and S9 (lower
//! is better; from rounds without a host stall only), server CPU per request in S5, S7,
//! S14 and S15 (lower is better: without pipelining the client saturates first, so
//! req/s there measures the client), req/s elsewhere (higher is better). The reference
//! is ringway/uring, ringway's Python loop in S14 (`py-ringway`), uvicorn on it in S15
//! (`uvicorn-ringway`). The floor is a physical limit, not a competitor: the best
//! *peer* excludes it, and ringway's distance to the floor is given beside.

use serde::Serialize;

use crate::suite::registry::BASELINE_SUFFIX;
use crate::suite::report::verdict::{
    counted, counted_rival, overall, paired, Call, Counted, Evidence, Paired, Pairing, Usable,
    CONFIDENCE,
};
use crate::suite::results::{reference_peer, Results, Round, Row};

/// The floor's name in the registry.
pub const FLOOR: &str = "floor";

/// Which figure decides a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Figure {
    /// Requests per second (higher is better).
    Rps,
    /// Server CPU µs per request (lower is better).
    CpuPerReq,
    /// p99 latency µs of the rounds without a host stall (lower is better).
    P99,
}

impl Figure {
    /// The figure for `scenario`.
    pub fn of(scenario: &str) -> Figure {
        match scenario {
            "S1" | "S9" => Figure::P99,
            "S5" | "S7" | "S14" | "S15" => Figure::CpuPerReq,
            _ => Figure::Rps,
        }
    }

    /// Its value in `row` (p99: of the stall-free rounds only).
    pub fn value(self, row: &Row) -> Option<f64> {
        match self {
            Figure::Rps => (row.rps > 0.0).then_some(row.rps),
            Figure::CpuPerReq => row.cpu_us_per_req.filter(|c| *c > 0.0),
            Figure::P99 => row.p99_stall_free.filter(|p| *p > 0.0),
        }
    }

    /// Its value in one round.
    pub fn of_round(self, r: &Round) -> f64 {
        match self {
            Figure::Rps => r.rps,
            Figure::CpuPerReq => r.cpu_us_per_req,
            Figure::P99 => r.latency_us.p99,
        }
    }

    /// The rounds it may be read from.
    pub fn usable(self) -> Usable {
        match self {
            Figure::P99 => Usable::StallFree,
            _ => Usable::Clean,
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
    /// ringway's peer in this scenario.
    pub who: String,
    /// Its value (the median of its rounds).
    pub ringway: f64,
    /// The best other peer by its median (floor excluded) and its value.
    pub best: Option<(String, f64)>,
    /// The paired comparison with the best peer (above 1: ringway better).
    pub timed: Option<Paired>,
    /// The counted comparisons (instructions, syscalls) with the scenario's fixed rival
    /// where it was counted, else with the best peer.
    pub counted: Vec<Counted>,
    /// The verdict against the best peer and the evidence it rests on.
    pub verdict: Option<(Call, Evidence)>,
    /// Every other peer ringway is behind on the paired rounds (the best among them
    /// first).
    pub behind: Vec<(String, Paired)>,
    /// The floor's value, when measured.
    pub floor: Option<f64>,
    /// The paired comparison with the floor.
    pub floor_paired: Option<Paired>,
    /// ringway's figure or the best peer's comes from rounds that were not clean.
    pub unclean: bool,
    /// Rounds of ringway's and the best peer's in which other processes used the
    /// benchmark's CPUs (not ranked), and their rounds in all.
    pub contended: (usize, usize),
}

impl Headline {
    /// `true` unless the verdict is "behind".
    pub fn ringway_leads(&self) -> bool {
        !matches!(self.verdict, Some((Call::Behind, _)))
    }

    /// The call against the best peer, if there is one.
    pub fn call(&self) -> Option<Call> {
        self.verdict.map(|(c, _)| c)
    }

    /// One sentence.
    pub fn sentence(&self) -> String {
        let f = self.figure;
        let mine = f.format(self.ringway);
        let Some((best, value)) = &self.best else {
            return format!("{} {mine} {} (no other peer measured)", self.who, f.label());
        };
        // A counted verdict against a rival that is not the best peer names the rival:
        // the timed comparison with the best peer was level.
        let rival = self
            .counted
            .first()
            .map(|c| c.against.as_str())
            .filter(|r| r != best);
        let advantage = self
            .timed
            .as_ref()
            .map(|t| format!(": advantage {}", t.describe()))
            .unwrap_or_default();
        let verdict = match (&self.verdict, rival) {
            (Some((call, Evidence::Counted)), Some(rival)) => format!(
                "{} {rival} on counted evidence, level within noise on time with the best peer {best} ({}){}",
                match call {
                    Call::Level => "level with",
                    Call::Ahead => "ahead of",
                    Call::Behind => "BEHIND",
                },
                f.format(*value),
                advantage,
            ),
            (Some((call, evidence)), _) => format!(
                "{} the best peer {best} ({}){}, rests on {}",
                match call {
                    Call::Level => "level within noise with",
                    Call::Ahead => "ahead of",
                    Call::Behind => "BEHIND",
                },
                f.format(*value),
                advantage,
                evidence.words()
            ),
            (None, _) if self.contended.0 > 0 => format!(
                "no verdict against the best peer {best} ({}): no usable pair of rounds \
                 (other processes used the benchmark's CPUs in {} of its {} rounds, \
                 and such rounds are not ranked: run it on a quiet machine)",
                f.format(*value),
                self.contended.0,
                self.contended.1
            ),
            (None, _) => format!(
                "no verdict against the best peer {best} ({}): no usable pair of rounds",
                f.format(*value)
            ),
        };
        let counted = if self.counted.is_empty() {
            String::new()
        } else {
            let c: Vec<String> = self.counted.iter().map(Counted::describe).collect();
            format!("; counted: {}", c.join(", "))
        };
        let others: Vec<&str> = self
            .behind
            .iter()
            .filter(|(p, _)| p != best)
            .map(|(p, _)| p.as_str())
            .collect();
        let behind = if others.is_empty() {
            String::new()
        } else {
            format!("; also behind {}", others.join(", "))
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
            "{} {mine} {}, {verdict}{counted}{behind}{floor}{unclean}",
            self.who,
            f.label()
        )
    }
}

/// The best row of `rows` on `figure` (largest or smallest value).
fn best_of<'a>(rows: impl Iterator<Item = &'a Row>, figure: Figure) -> Option<(&'a Row, f64)> {
    rows.filter_map(|r| figure.value(r).map(|v| (r, v)))
        .fold(None, |acc, (r, v)| match acc {
            Some((_, bv))
                if (figure.higher_is_better() && bv >= v)
                    || (!figure.higher_is_better() && bv <= v) =>
            {
                acc
            }
            _ => Some((r, v)),
        })
}

/// The headline of one variant, if ringway's reference peer has its figure there.
fn headline(results: &Results, scenario: &str, variant: &str) -> Option<Headline> {
    let figure = Figure::of(scenario);
    let who = reference_peer(scenario);
    let mine_row = results.row(who, scenario, variant)?;
    let mine = figure.value(mine_row)?;
    let rows = || {
        results
            .rows
            .iter()
            .filter(move |r| r.scenario == scenario && r.variant == variant)
    };
    // Clean rounds when both sides have them; else (one connection's ping-pong never
    // saturates a core) the successful ones, as the rows do, and the sentence says so.
    let pair = |peer: &str| {
        let by = |usable| {
            paired(
                results,
                Pairing {
                    scenario,
                    variant,
                    reference: who,
                    peer,
                    usable,
                },
                |r| figure.of_round(r),
                figure.higher_is_better(),
            )
        };
        // Clean pairs when there are enough of them for a 90% interval; else all the
        // successful pairs if they are more.
        let first = figure.usable();
        let clean = by(first);
        if clean.as_ref().is_some_and(|p| p.confidence >= CONFIDENCE) {
            return clean;
        }
        let all = first.fallback().and_then(by);
        match (clean, all) {
            (Some(c), Some(a)) if a.pairs > c.pairs => Some(a),
            (Some(c), _) => Some(c),
            (None, a) => a,
        }
    };
    // The floor is the limit, not a rival; a baseline is ringway itself, earlier.
    let is_rival = |peer: &str| peer != who && peer != FLOOR && !peer.ends_with(BASELINE_SUFFIX);
    let best = best_of(rows().filter(|r| is_rival(&r.peer)), figure);
    let timed = best.and_then(|(r, _)| pair(&r.peer));
    // Counted evidence against the scenario's fixed rival where it was counted (see
    // `counted_rival`), so that it does not follow the timed best peer from run to run.
    let rival = counted_rival(scenario)
        .and_then(|p| results.row(p, scenario, variant))
        .filter(|r| r.instructions_per_req.is_some());
    let counted = match rival {
        Some(r) => counted(mine_row, r),
        None => best.map(|(r, _)| counted(mine_row, r)).unwrap_or_default(),
    };
    let mut behind: Vec<(String, Paired)> = rows()
        .filter(|r| is_rival(&r.peer))
        .filter_map(|r| pair(&r.peer).map(|p| (r.peer.clone(), p)))
        .filter(|(_, p)| p.call == Call::Behind)
        .collect();
    behind.sort_by(|a, b| a.1.median.total_cmp(&b.1.median));
    let floor_row = results.row(FLOOR, scenario, variant);
    Some(Headline {
        scenario: scenario.to_string(),
        variant: variant.to_string(),
        figure,
        who: who.to_string(),
        ringway: mine,
        verdict: best.and_then(|_| overall(timed.as_ref(), &counted)),
        best: best.map(|(r, v)| (r.peer.clone(), v)),
        unclean: mine_row.from_unclean || best.is_some_and(|(r, _)| r.from_unclean),
        contended: best.map_or((mine_row.contended_rounds, mine_row.rounds), |(r, _)| {
            (
                mine_row.contended_rounds + r.contended_rounds,
                mine_row.rounds + r.rounds,
            )
        }),
        timed,
        counted,
        behind,
        floor: floor_row.and_then(|r| figure.value(r)),
        floor_paired: floor_row.and_then(|_| pair(FLOOR)),
    })
}

/// The headline of every variant ringway's reference peer was measured in.
pub fn headlines(results: &Results) -> Vec<Headline> {
    results
        .variants()
        .iter()
        .filter_map(|(s, v)| headline(results, s, v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::results::{aggregate, LatencyUs, RINGWAY};

    /// Rounds of `peer` in `scenario` with these per-round figures (CPU µs/req, and
    /// req/s and p99 derived from it), and its row.
    fn add(results: &mut Results, peer: &str, scenario: &str, cpu: &[f64]) {
        let rounds: Vec<Round> = cpu
            .iter()
            .enumerate()
            .map(|(i, c)| Round {
                peer: peer.into(),
                scenario: scenario.into(),
                variant: "v".into(),
                round: i + 1,
                ok: true,
                clean: true,
                rps: 1e6 / c,
                cpu_us_per_req: *c,
                latency_us: LatencyUs {
                    p99: c * 10.0,
                    ..LatencyUs::default()
                },
                ..Round::default()
            })
            .collect();
        let row = aggregate(&rounds.iter().collect::<Vec<_>>(), "t");
        results.rounds.extend(rounds);
        results.rows.push(row);
    }

    #[test]
    fn the_verdict_comes_from_the_paired_interval_not_the_medians() {
        let mut results = Results::default();
        // S5 (CPU): ringway 4.0 in every round; "fast" 3% better in its median but
        // within noise round by round; "slow" 25% worse in every round.
        add(&mut results, RINGWAY, "S5", &[4.0, 4.4, 3.6, 4.2, 3.8]);
        add(&mut results, "fast", "S5", &[4.1, 4.0, 3.6, 3.9, 3.7]);
        add(&mut results, "slow", "S5", &[5.0, 5.5, 4.5, 5.25, 4.75]);
        add(&mut results, FLOOR, "S5", &[3.0, 3.3, 2.7, 3.15, 2.85]);
        let h = headlines(&results);
        let s5 = h.iter().find(|h| h.scenario == "S5").unwrap();
        assert_eq!(s5.figure, Figure::CpuPerReq);
        assert_eq!(
            s5.best.as_ref().unwrap().0,
            "fast",
            "the floor is not a peer"
        );
        let t = s5.timed.as_ref().unwrap();
        assert_eq!(t.pairs, 5);
        assert!(t.lo < 1.0 && t.hi > 1.0, "{t:?}");
        assert_eq!(s5.verdict, Some((Call::Level, Evidence::Timed)));
        assert!(s5.ringway_leads());
        let text = s5.sentence();
        assert!(
            text.contains("level within noise with the best peer fast"),
            "{text}"
        );
        assert!(text.contains("5 pairs"), "{text}");
        assert!(
            !text.contains("BEHIND") && !text.contains("ahead"),
            "{text}"
        );
        assert!(s5.behind.is_empty());
        assert_eq!(s5.floor, Some(3.0));
        assert_eq!(s5.floor_paired.as_ref().unwrap().call, Call::Behind);
    }

    #[test]
    fn behind_and_ahead_need_the_whole_interval_past_the_band() {
        let mut results = Results::default();
        // S8 (req/s): the best peer is 20% faster in every round.
        add(&mut results, RINGWAY, "S8", &[5.0, 5.5, 4.5, 5.2, 4.8]);
        add(
            &mut results,
            "tokio-raw",
            "S8",
            &[4.0, 4.4, 3.6, 4.16, 3.84],
        );
        add(&mut results, "other", "S8", &[6.0, 6.6, 5.4, 6.24, 5.76]);
        let h = headlines(&results);
        let s8 = &h[0];
        assert_eq!(s8.figure, Figure::Rps);
        assert_eq!(s8.best.as_ref().unwrap().0, "tokio-raw");
        assert_eq!(s8.verdict, Some((Call::Behind, Evidence::Timed)));
        assert!(!s8.ringway_leads());
        assert!(s8.sentence().contains("BEHIND the best peer tokio-raw"));
        assert_eq!(s8.behind.len(), 1, "ringway is ahead of `other`");
    }

    /// [`add`], with the rounds numbered in `contended` marked contended.
    fn add_contended(results: &mut Results, peer: &str, cpu: &[f64], contended: &[usize]) {
        add(results, peer, "S8", cpu);
        for r in results.rounds.iter_mut().filter(|r| r.peer == peer) {
            r.contended = contended.contains(&r.round);
        }
        let mine: Vec<&Round> = results.rounds.iter().filter(|r| r.peer == peer).collect();
        let row = aggregate(&mine, "t");
        *results.rows.iter_mut().find(|r| r.peer == peer).unwrap() = row;
    }

    #[test]
    fn contended_rounds_are_shown_but_never_ranked() {
        // The same rounds as `behind_and_ahead_need_the_whole_interval_past_the_band`,
        // but another process used the CPUs in rounds 1-3 of ringway's.
        let mut results = Results::default();
        add_contended(
            &mut results,
            RINGWAY,
            &[5.0, 5.5, 4.5, 5.2, 4.8],
            &[1, 2, 3],
        );
        add_contended(&mut results, "tokio-raw", &[4.0, 4.4, 3.6, 4.16, 3.84], &[]);
        let h = headlines(&results);
        let row = results.row(RINGWAY, "S8", "v").unwrap();
        assert_eq!(row.contended_rounds, 3);
        assert_eq!(h[0].contended, (3, 10));
        // Two pairs left: too few for a 90% interval, so no call beyond level.
        let t = h[0].timed.as_ref().unwrap();
        assert_eq!(t.pairs, 2);
        assert_eq!(h[0].verdict, Some((Call::Level, Evidence::Timed)));

        // Every round contended: no pair at all, and the sentence says why.
        let mut results = Results::default();
        add_contended(
            &mut results,
            RINGWAY,
            &[5.0, 5.5, 4.5, 5.2, 4.8],
            &[1, 2, 3, 4, 5],
        );
        add_contended(&mut results, "tokio-raw", &[4.0, 4.4, 3.6, 4.16, 3.84], &[]);
        let h = headlines(&results);
        assert_eq!(h[0].timed, None);
        assert_eq!(h[0].verdict, None);
        let text = h[0].sentence();
        assert!(
            text.contains("other processes used the benchmark's CPUs in 5 of its 10 rounds"),
            "{text}"
        );
    }

    #[test]
    fn tails_of_stalled_rounds_are_shown_but_not_ranked() {
        let mut results = Results::default();
        add(&mut results, RINGWAY, "S9", &[5.0, 5.0, 5.0]);
        add(&mut results, "calm", "S9", &[6.0, 6.0, 6.0]);
        // Its best-looking p99 rounds held host stalls: only round 3 counts.
        for r in results
            .rounds
            .iter_mut()
            .filter(|r| r.peer == "calm" && r.round < 3)
        {
            r.stalled = true;
            r.latency_us.p99 = 1.0;
        }
        let row = aggregate(
            &results
                .rounds
                .iter()
                .filter(|r| r.peer == "calm")
                .collect::<Vec<_>>(),
            "t",
        );
        assert_eq!(row.stalled_rounds, 2);
        assert_eq!(row.p99_stall_free, Some(60.0));
        assert_eq!(row.latency_us.p99, 1.0, "the stalled tails are still shown");
        *results.rows.iter_mut().find(|r| r.peer == "calm").unwrap() = row;
        let h = headlines(&results);
        assert_eq!(h[0].figure, Figure::P99);
        assert_eq!(h[0].best.as_ref().unwrap(), &("calm".to_string(), 60.0));
        assert_eq!(h[0].timed.as_ref().unwrap().pairs, 1);
    }

    #[test]
    fn counted_evidence_decides_a_level_timed_verdict_and_says_so() {
        let mut results = Results::default();
        add(&mut results, RINGWAY, "S7", &[4.0, 4.4, 3.6, 4.2, 3.8]);
        add(&mut results, "monoio", "S7", &[4.1, 4.3, 3.6, 4.1, 3.9]);
        for r in &mut results.rows {
            r.instructions_per_req = Some(if r.peer == RINGWAY { 560.0 } else { 1400.0 });
        }
        let mut mine = results.rows[0].clone();
        mine.from_unclean = true;
        results.rows[0] = mine;
        let h = headlines(&results);
        assert_eq!(h[0].verdict, Some((Call::Ahead, Evidence::Counted)));
        let text = h[0].sentence();
        assert!(text.contains("rests on counted"), "{text}");
        assert!(
            text.contains("instructions 560 vs 1400 of monoio (ahead)"),
            "{text}"
        );
        assert!(
            text.ends_with("(* from rounds that were not clean)"),
            "{text}"
        );
    }

    #[test]
    fn counted_evidence_is_taken_against_the_fixed_rival_whoever_is_best_on_time() {
        // Two runs of S5 whose timed best peer differs (noise): the counted verdict is
        // against may-minihttp both times, so it is the same both times.
        for fastest in ["compio-tuned", "monoio"] {
            let mut results = Results::default();
            add(&mut results, RINGWAY, "S5", &[5.0, 5.4, 4.6, 5.2, 4.8]);
            add(
                &mut results,
                "may-minihttp",
                "S5",
                &[5.1, 5.5, 4.7, 5.3, 4.9],
            );
            add(&mut results, fastest, "S5", &[4.9, 5.5, 4.5, 5.3, 4.7]);
            for r in &mut results.rows {
                r.instructions_per_req = Some(match r.peer.as_str() {
                    RINGWAY => 1_723.0,
                    "may-minihttp" => 1_840.0,
                    _ => 4_156.0,
                });
            }
            let h = headlines(&results);
            assert_eq!(h[0].best.as_ref().unwrap().0, fastest);
            assert_eq!(h[0].counted[0].against, "may-minihttp");
            assert_eq!(h[0].verdict, Some((Call::Ahead, Evidence::Counted)));
            let text = h[0].sentence();
            assert!(
                text.contains("instructions 1723 vs 1840 of may-minihttp (ahead)"),
                "{text}"
            );
            assert!(
                text.contains(&format!(
                    "ahead of may-minihttp on counted evidence, level within noise on time with the best peer {fastest}"
                )),
                "{text}"
            );
        }
    }
}
