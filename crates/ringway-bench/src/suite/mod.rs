//! `ringway bench`: ringway and its peers side by side on every scenario of
//! `docs/benchmarks.md`, measured by the rules written there.
//!
//! A run picks the scenario variants ([`scenarios`]) and the peers ([`registry`]), then
//! for each variant starts every peer fresh on the server cores, checks its response,
//! warms it up, and measures it round by round with the peers interleaved and `ringway
//! load` on the client cores ([`run`]). It writes `results.json` ([`results`]), prints
//! the tables and writes one self-contained HTML report with its charts ([`report`]).
//! Options add the user-space instructions per request under callgrind, a flamegraph of
//! one peer and the change against an earlier run.
//!
//! The rooms depend in one direction: [`registry`] and [`scenarios`] say who and what;
//! [`run`] measures them into [`results`]; [`report`] reads only [`results`];
//! [`sequence`] puts a run together and this module starts it.

pub mod meta;
mod options;
pub mod progress;
pub mod registry;
pub mod report;
pub mod results;
pub mod run;
pub mod scenarios;
mod sequence;
pub mod setup;

use std::time::Instant;

pub use options::{Options, Outcome};
pub use progress::Progress;

use crate::suite::report::{compare, headline, html, terminal};
use crate::suite::results::Results;
use crate::suite::sequence::Sequence;

/// Runs the suite.
pub fn run(opts: &Options) -> Result<Outcome, String> {
    let started = Instant::now();
    opts.check()?;
    let seq = Sequence::prepare(opts)?;
    let mut results = seq.measure_variants();
    seq.count_and_profile(&mut results)?;
    results.meta.elapsed_s = started.elapsed().as_secs_f64();
    let outcome = write_outputs(opts, results);
    let _ = std::fs::remove_dir_all(&seq.work_dir);
    outcome
}

/// Writes results.json and report.html into `opts.out`; the terminal text with them.
fn write_outputs(opts: &Options, results: Results) -> Result<Outcome, String> {
    let (changes, verdicts) = match &opts.compare {
        Some(path) => {
            let old = compare::load(path)?;
            (
                compare::changes(&results, &old),
                compare::verdicts(&results, &old),
            )
        }
        None => (Vec::new(), Vec::new()),
    };
    let json = opts.out.join("results.json");
    // results.json carries the headline's verdicts beside what they were made from.
    let mut value = serde_json::to_value(&results).map_err(|e| e.to_string())?;
    if let Some(map) = value.as_object_mut() {
        let headline =
            serde_json::to_value(headline::headlines(&results)).map_err(|e| e.to_string())?;
        map.insert("headline".into(), headline);
    }
    let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
    std::fs::write(&json, text + "\n").map_err(|e| format!("{}: {e}", json.display()))?;
    let html = opts.out.join("report.html");
    std::fs::write(&html, html::render(&results, &changes))
        .map_err(|e| format!("{}: {e}", html.display()))?;
    Ok(Outcome {
        text: terminal::render_all(&results, &changes) + &compare::verdicts_text(&verdicts),
        results,
        json,
        html,
    })
}
