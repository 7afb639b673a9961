//! Verdicts that say only what the rounds support.
//!
//! The peers of a variant are measured round by round, interleaved (A B C A B C), so
//! round k of a peer and round k of ringway ran seconds apart, under the same mood of
//! the host. A verdict therefore pairs them: for each round k where both sides have a
//! usable figure, the ratio of the two ([`Paired`], oriented so that above 1 means
//! ringway is better), then the median of those ratios with an interval for it: a
//! distribution-free confidence interval from the order statistics of the paired ratios
//! (the binomial argument for the median: the interval between the k-th smallest and
//! the k-th largest of n ratios holds the true median with probability
//! `1 - 2·P(Binomial(n, ½) < k)`). The widest k whose confidence is at least 90% is
//! taken; with fewer than five pairs no k reaches 90%: the interval is the whole range
//! of the pairs, its lower confidence printed beside it, and the call is level (too few
//! pairs to claim a difference).
//!
//! The call comes from the interval, never from the medians: **ahead** when the whole
//! interval is above [`LEVEL_BAND`] (ringway better by more than the suite resolves),
//! **behind** when it is below its inverse, **level within noise** otherwise. An
//! interval that crosses 1 is never a win or a loss.
//!
//! Counted figures (user-space instructions under callgrind, syscalls under perf) do
//! not drift between runs the way CPU time does on a shared VM; they give a verdict of
//! their own ([`counted`]) when they differ by more than [`COUNTED_BAND`], and a
//! shape's verdict says which kind of evidence it rests on ([`Evidence`]).

use serde::Serialize;

use crate::suite::results::{Results, Round};

/// Ratios within this factor of 1 (either way) are "level": the suite's resolution on
/// a VM whose rounds of one peer spread by ±20%.
pub const LEVEL_BAND: f64 = 1.02;
/// Counted figures differing by less than this factor are level (syscalls per request
/// move with batching; instruction counts by a few per cent with it).
pub const COUNTED_BAND: f64 = 1.05;
/// The confidence an interval aims at.
pub const CONFIDENCE: f64 = 0.90;

/// What a verdict says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Call {
    /// ringway is better, beyond the noise.
    Ahead,
    /// ringway is worse, beyond the noise.
    Behind,
    /// The interval holds "no difference the suite can resolve".
    Level,
}

impl Call {
    /// The call from an interval of ringway's advantage (above 1: ringway better),
    /// with `band` the factor within which a ratio is level.
    pub fn of(lo: f64, hi: f64, band: f64) -> Call {
        if lo > band {
            Call::Ahead
        } else if hi < 1.0 / band {
            Call::Behind
        } else {
            Call::Level
        }
    }

    /// Words for a sentence.
    pub fn words(self) -> &'static str {
        match self {
            Call::Ahead => "ahead",
            Call::Behind => "behind",
            Call::Level => "level within noise",
        }
    }
}

/// Which kind of evidence a verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Evidence {
    /// Timed figures (CPU time, req/s, latency) of paired interleaved rounds.
    Timed,
    /// Counted figures (instructions, syscalls per request), which do not drift.
    Counted,
}

impl Evidence {
    /// Words for a sentence.
    pub fn words(self) -> &'static str {
        match self {
            Evidence::Timed => "timed (paired rounds)",
            Evidence::Counted => "counted (instructions, syscalls)",
        }
    }
}

/// The paired comparison of ringway with one peer on one figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paired {
    /// Median of the paired ratios (above 1: ringway better).
    pub median: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end of the interval.
    pub hi: f64,
    /// Pairs of rounds it rests on.
    pub pairs: usize,
    /// Confidence of the interval (at least [`CONFIDENCE`] from five pairs on).
    pub confidence: f64,
    /// The call from the interval.
    pub call: Call,
}

impl Paired {
    /// `1.03x (0.98–1.07, 6 pairs, 97%)`.
    pub fn describe(&self) -> String {
        format!(
            "{:.2}x ({:.2}–{:.2}, {} pairs, {:.0}%)",
            self.median,
            self.lo,
            self.hi,
            self.pairs,
            self.confidence * 100.0
        )
    }
}

/// `P(Binomial(n, ½) < k)`.
fn binomial_below(n: usize, k: usize) -> f64 {
    let mut total = 0.0;
    let mut choose = 1.0f64; // C(n, 0)
    for i in 0..k.min(n + 1) {
        if i > 0 {
            choose = choose * (n + 1 - i) as f64 / i as f64;
        }
        total += choose;
    }
    total / 2f64.powi(n as i32)
}

/// The median of `ratios` with its order-statistics interval; `None` for no ratio.
pub fn interval(ratios: &[f64], band: f64) -> Option<Paired> {
    let mut v: Vec<f64> = ratios.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    // The widest interval (x_k, x_{n+1-k}) whose confidence reaches CONFIDENCE; k = 1
    // (the whole range) when none does.
    let mut k = 1;
    while k < n.div_ceil(2) && 1.0 - 2.0 * binomial_below(n, k + 1) >= CONFIDENCE {
        k += 1;
    }
    let confidence = (1.0 - 2.0 * binomial_below(n, k)).max(0.0);
    let (lo, hi) = (v[k - 1], v[n - k]);
    // Too few pairs for a 90% interval: no win and no loss can be claimed.
    let call = if confidence >= CONFIDENCE {
        Call::of(lo, hi, band)
    } else {
        Call::Level
    };
    Some(Paired {
        median,
        lo,
        hi,
        pairs: n,
        confidence,
        call,
    })
}

/// Which rounds a figure may be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usable {
    /// Clean rounds (CPU per request, req/s).
    Clean,
    /// Clean rounds without a host stall in their window (tails).
    StallFree,
    /// Successful rounds, clean or not: for shapes where neither side saturates its
    /// core (one connection's ping-pong), as the rows then do, and marked so.
    Ok,
    /// Successful rounds without a host stall.
    OkStallFree,
}

impl Usable {
    /// `true` if round `r` may be used. A contended round (other processes used the
    /// server's or the client's CPU) is never used: its figures measure the other work
    /// as much as the peer.
    pub fn admits(self, r: &Round) -> bool {
        if r.contended {
            return false;
        }
        match self {
            Usable::Clean => r.ok && r.clean,
            Usable::StallFree => r.ok && r.clean && !r.stalled,
            Usable::Ok => r.ok,
            Usable::OkStallFree => r.ok && !r.stalled,
        }
    }

    /// What to fall back to when no pair of rounds is usable this way.
    pub fn fallback(self) -> Option<Usable> {
        match self {
            Usable::Clean => Some(Usable::Ok),
            Usable::StallFree => Some(Usable::OkStallFree),
            Usable::Ok | Usable::OkStallFree => None,
        }
    }
}

/// Whose rounds a paired comparison reads.
#[derive(Debug, Clone, Copy)]
pub struct Pairing<'a> {
    /// `S5`.
    pub scenario: &'a str,
    /// `c50`.
    pub variant: &'a str,
    /// ringway's peer in this scenario (`ringway-uring`, or `py-ringway` in S14).
    pub reference: &'a str,
    /// The peer compared.
    pub peer: &'a str,
    /// Which rounds count.
    pub usable: Usable,
}

/// The paired comparison of the reference's rounds with the peer's: `value` reads a
/// round's figure, `higher_is_better` orients the ratio.
pub fn paired(
    results: &Results,
    who: Pairing<'_>,
    value: impl Fn(&Round) -> f64,
    higher_is_better: bool,
) -> Option<Paired> {
    let of = |name: &str| -> Vec<&Round> {
        results
            .rounds
            .iter()
            .filter(|r| r.scenario == who.scenario && r.variant == who.variant && r.peer == name)
            .filter(|r| who.usable.admits(r))
            .collect()
    };
    let (mine, theirs) = (of(who.reference), of(who.peer));
    let ratios: Vec<f64> = mine
        .iter()
        .filter_map(|m| {
            let t = theirs.iter().find(|t| t.round == m.round)?;
            let (a, b) = (value(m), value(t));
            (a > 0.0 && b > 0.0).then(|| if higher_is_better { a / b } else { b / a })
        })
        .collect();
    interval(&ratios, LEVEL_BAND)
}

/// The peer whose counts a scenario's counted verdict is taken against, fixed per
/// scenario: the timed best peer changes from run to run on a noisy host, and a counted
/// verdict that followed it changed with it (two default runs in a row: S5 against
/// compio-tuned, then monoio; S8 against tokio-raw, then ringway-epoll). S5 and S8:
/// may-minihttp, the peer with the fewest instructions among those that parse HTTP
/// with a real parser; S7: monoio-coop, the runtime with the fewest instructions per
/// message among the peers. Elsewhere (and where the rival was not counted) the best
/// peer's counts are used.
pub fn counted_rival(scenario: &str) -> Option<&'static str> {
    match scenario {
        "S5" | "S8" => Some("may-minihttp"),
        "S7" => Some("monoio-coop"),
        _ => None,
    }
}

/// A counted comparison: ringway's count against the peer's (lower is better).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counted {
    /// What was counted: `instructions` or `syscalls`.
    pub what: &'static str,
    /// The peer counted against.
    pub against: String,
    /// ringway's count per request.
    pub ringway: f64,
    /// The peer's count per request.
    pub peer: f64,
    /// The call (beyond [`COUNTED_BAND`]).
    pub call: Call,
}

impl Counted {
    /// `instructions 2,050 vs 1,827 of may-minihttp (behind)`.
    pub fn describe(&self) -> String {
        let fmt = |x: f64| {
            if x >= 100.0 {
                format!("{x:.0}")
            } else {
                format!("{x:.3}")
            }
        };
        format!(
            "{} {} vs {} of {} ({})",
            self.what,
            fmt(self.ringway),
            fmt(self.peer),
            self.against,
            self.call.words()
        )
    }
}

/// The counted comparisons of ringway's row and a peer's (instructions, then syscalls,
/// where both rows have them).
pub fn counted(
    ringway: &crate::suite::results::Row,
    peer: &crate::suite::results::Row,
) -> Vec<Counted> {
    let mut out = Vec::new();
    let pairs = [
        (
            "instructions",
            ringway.instructions_per_req,
            peer.instructions_per_req,
        ),
        ("syscalls", ringway.syscalls_per_req, peer.syscalls_per_req),
    ];
    for (what, mine, theirs) in pairs {
        if let (Some(m), Some(t)) = (mine, theirs) {
            // Syscalls of an io_uring server can be ~0 per request: compare from a
            // floor of a hundredth of a syscall so that 0.001 vs 0.002 is level.
            let (m2, t2) = if what == "syscalls" {
                (m.max(0.01), t.max(0.01))
            } else {
                (m, t)
            };
            if m2 > 0.0 && t2 > 0.0 {
                let adv = t2 / m2;
                out.push(Counted {
                    what,
                    against: peer.peer.clone(),
                    ringway: m,
                    peer: t,
                    call: Call::of(adv, adv, COUNTED_BAND),
                });
            }
        }
    }
    out
}

/// The verdict of a shape from its timed comparison and its counted ones: the timed
/// call when it is decisive; else the instructions' call when decisive (counted
/// evidence does not drift); else level, resting on the timed figure.
pub fn overall(timed: Option<&Paired>, counted: &[Counted]) -> Option<(Call, Evidence)> {
    if let Some(t) = timed.filter(|t| t.call != Call::Level) {
        return Some((t.call, Evidence::Timed));
    }
    if let Some(c) = counted
        .iter()
        .find(|c| c.what == "instructions" && c.call != Call::Level)
    {
        return Some((c.call, Evidence::Counted));
    }
    timed.map(|t| (t.call, Evidence::Timed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics_give_the_interval_and_its_confidence() {
        // Three pairs: no k reaches 90%; the range, at 75%.
        let p = interval(&[1.10, 0.95, 1.02], LEVEL_BAND).unwrap();
        assert_eq!((p.lo, p.median, p.hi), (0.95, 1.02, 1.10));
        assert!((p.confidence - 0.75).abs() < 1e-9, "{}", p.confidence);
        assert_eq!(p.call, Call::Level, "an interval across 1 is level");
        let p = interval(&[1.30, 1.35, 1.40], LEVEL_BAND).unwrap();
        assert_eq!(p.call, Call::Level, "three pairs (75%) claim nothing");
        // Five pairs: the range has 93.75%.
        let p = interval(&[1.10, 1.12, 1.08, 1.15, 1.09], LEVEL_BAND).unwrap();
        assert_eq!((p.lo, p.hi), (1.08, 1.15));
        assert!((p.confidence - 0.9375).abs() < 1e-9);
        assert_eq!(p.call, Call::Ahead);
        // Ten pairs: (x_2, x_9) has 97.9%; (x_3, x_8) 89% falls short.
        let v: Vec<f64> = (1..=10).map(|i| 0.80 + 0.01 * i as f64).collect();
        let p = interval(&v, LEVEL_BAND).unwrap();
        assert_eq!((p.lo, p.hi), (v[1], v[8]));
        assert!(p.confidence >= CONFIDENCE);
        assert_eq!(p.call, Call::Behind);
        assert!(interval(&[], LEVEL_BAND).is_none());
    }

    #[test]
    fn a_difference_inside_the_band_is_level_and_never_a_win() {
        assert_eq!(Call::of(1.01, 1.015, LEVEL_BAND), Call::Level);
        assert_eq!(Call::of(0.99, 1.30, LEVEL_BAND), Call::Level);
        assert_eq!(Call::of(1.03, 1.30, LEVEL_BAND), Call::Ahead);
        assert_eq!(Call::of(0.70, 0.97, LEVEL_BAND), Call::Behind);
    }

    fn round(peer: &str, n: usize, cpu: f64, clean: bool, stalled: bool) -> Round {
        Round {
            peer: peer.into(),
            scenario: "S5".into(),
            variant: "c50".into(),
            round: n,
            ok: true,
            clean,
            stalled,
            cpu_us_per_req: cpu,
            ..Round::default()
        }
    }

    #[test]
    fn rounds_are_paired_by_number_and_unusable_ones_left_out() {
        let results = Results {
            rounds: vec![
                round("ringway-uring", 1, 5.0, true, false),
                round("x", 1, 6.0, true, false),
                round("ringway-uring", 2, 10.0, true, false),
                round("x", 2, 11.0, true, true),
                round("ringway-uring", 3, 5.0, false, false),
                round("x", 3, 5.5, true, false),
            ],
            ..Results::default()
        };
        let cpu = |r: &Round| r.cpu_us_per_req;
        let who = |usable| Pairing {
            scenario: "S5",
            variant: "c50",
            reference: "ringway-uring",
            peer: "x",
            usable,
        };
        let p = paired(&results, who(Usable::Clean), cpu, false).unwrap();
        // Round 3 is not clean on ringway's side: two pairs, 1.2 and 1.1.
        assert_eq!(p.pairs, 2);
        assert!((p.median - 1.15).abs() < 1e-9);
        let p = paired(&results, who(Usable::StallFree), cpu, false).unwrap();
        assert_eq!(p.pairs, 1, "round 2 of x held a host stall");
    }

    #[test]
    fn counted_figures_decide_when_the_timed_ones_are_level() {
        let timed = interval(&[0.98, 1.01, 1.03, 0.99, 1.0], LEVEL_BAND).unwrap();
        let mut a = crate::suite::results::Row {
            instructions_per_req: Some(2050.0),
            syscalls_per_req: Some(0.002),
            ..Default::default()
        };
        let b = crate::suite::results::Row {
            instructions_per_req: Some(1827.0),
            syscalls_per_req: Some(0.004),
            ..Default::default()
        };
        let c = counted(&a, &b);
        assert_eq!(c[0].call, Call::Behind, "{:?}", c[0]);
        assert_eq!(c[1].call, Call::Level, "both well under one syscall");
        assert_eq!(
            overall(Some(&timed), &c),
            Some((Call::Behind, Evidence::Counted))
        );
        a.instructions_per_req = Some(1830.0);
        let c = counted(&a, &b);
        assert_eq!(
            overall(Some(&timed), &c),
            Some((Call::Level, Evidence::Timed))
        );
        let decisive = interval(&[1.2, 1.3, 1.25, 1.22, 1.4], LEVEL_BAND).unwrap();
        assert_eq!(
            overall(Some(&decisive), &c),
            Some((Call::Ahead, Evidence::Timed))
        );
    }
}
