//! What a run can be asked ([`Options`], the defaults of `ringway bench`) and what a
//! finished run leaves ([`Outcome`]).

use std::path::PathBuf;

use crate::suite::results::Results;
use crate::suite::scenarios::Net;
use crate::suite::setup;

/// Everything a run can be asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Peers (comma-separated names), or the default set.
    pub peers: Option<String>,
    /// Scenarios or variants (`S5`, `S5:c1000`), or the default ones.
    pub scenarios: Option<String>,
    /// Every variant of every scenario.
    pub full: bool,
    /// Seconds per measured round.
    pub duration: f64,
    /// Warm-up seconds per peer and variant.
    pub warmup: f64,
    /// Rounds per variant.
    pub rounds: usize,
    /// Output directory (results.json, report.html).
    pub out: PathBuf,
    /// Count user-space instructions per request under callgrind, every peer.
    pub instructions: bool,
    /// Count the headline's instructions (ringway, the best peer, the floor of S5, S7,
    /// S8) where valgrind is installed: the counted evidence beside the timed.
    pub counted: bool,
    /// Record this peer under `perf record` and put its flamegraph in the report.
    pub profile: Option<String>,
    /// The variant the profile runs (default S5 c50, else the first selected).
    pub profile_scenario: Option<String>,
    /// An earlier results.json to compare with.
    pub compare: Option<PathBuf>,
    /// The directory of an earlier build's `ringway`: adds the peers
    /// `ringway-uring-baseline` and `ringway-epoll-baseline`, which run it.
    pub baseline: Option<PathBuf>,
    /// Loopback, a veth pair between two namespaces, or both side by side.
    pub net: Net,
    /// Server CPU list (`taskset -c`).
    pub server_cpus: String,
    /// Client CPU list.
    pub client_cpus: String,
    /// Clean-round threshold.
    pub clean_share: f64,
    /// Directory of `ringway` and the peer binaries.
    pub bin_dir: PathBuf,
    /// Show a progress bar on a terminal.
    pub progress: bool,
    /// Count syscalls per request (needs perf).
    pub syscalls: bool,
    /// Cross-check S5 with wrk (needs wrk).
    pub wrk: bool,
    /// The command line, recorded in the results.
    pub command: String,
}

impl Options {
    /// The defaults of `ringway bench` with no arguments: the short run.
    pub fn defaults(bin_dir: PathBuf) -> Options {
        let (server_cpus, client_cpus) = setup::default_cpus();
        Options {
            peers: None,
            scenarios: None,
            full: false,
            duration: 0.25,
            warmup: 0.2,
            rounds: 8,
            out: PathBuf::from("target/bench"),
            instructions: false,
            counted: true,
            profile: None,
            profile_scenario: None,
            compare: None,
            baseline: None,
            net: Net::Loopback,
            server_cpus,
            client_cpus,
            clean_share: 0.9,
            bin_dir,
            progress: true,
            syscalls: true,
            wrk: true,
            command: String::new(),
        }
    }
}

/// What a finished run leaves.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Everything measured.
    pub results: Results,
    /// `results.json`.
    pub json: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
    /// The terminal tables.
    pub text: String,
}

impl Options {
    /// `Err` when the options cannot make a run.
    pub fn check(&self) -> Result<(), String> {
        if self.rounds == 0 {
            return Err("--rounds must be at least 1".into());
        }
        if !(self.duration > 0.0 && self.warmup >= 0.0) {
            return Err("--duration must be positive and --warmup not negative".into());
        }
        if let Some(dir) = &self.baseline {
            if !dir.join("ringway").is_file() {
                return Err(format!(
                    "--baseline {}: no `ringway` binary there (the directory of an earlier build, e.g. other/target/release)",
                    dir.display()
                ));
            }
        }
        Ok(())
    }
}
