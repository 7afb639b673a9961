//! `ringway bench`: the benchmark suite of crates/ringway-bench (ringway and its peers
//! side by side on the scenarios of docs/benchmarks.md). The arguments are turned into the
//! suite's options here; the suite itself lives in `ringway_bench::suite`.

use std::io;
use std::path::PathBuf;

use clap::Args;
use ringway_bench::suite::scenarios::Net;
use ringway_bench::suite::{self, Options};

/// Benchmark ringway against its peers: tables, results.json and an HTML report.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "The method (scenarios, peers, fairness rules, columns, how to read a
verdict): docs/benchmarks.md.
Examples:
  ringway bench                                   (the default run: S1-S9, S7 16KiB, S10 x1)
  ringway bench --full                            (every scenario and variant)
  ringway bench --scenario S5,S8 --peers ringway-uring,tokio-raw,floor --rounds 5
  ringway bench --scenario S5:c1000 --duration 3
  ringway bench --instructions --scenario S5,S8   (user-space instructions per request)
  ringway bench --profile ringway-uring           (flamegraph of one peer in S5 c50)
  ringway bench --compare old/results.json
  ringway bench --baseline old/target/release --scenario S7:16KiB,S10:x1 --peers ringway-uring,floor
  ringway bench --net both --scenario S5,S7:16KiB,S10:x1   (loopback and a veth pair, as root)
Scenarios: S1..S15 (S14, the Python loops, and S15, the Python frameworks, only by name
or with --full; S14 needs crates/ringway-py/bench/run --setup-only, S15 makes its own
environment from PyPI); a variant as S5:c1000.
Peers: ringway-uring, ringway-epoll, hyper, hyper-ringway, hyper-ringway-epoll (not by
default), tokio-raw, monoio, monoio-coop, compio, compio-tuned, glommio, may-minihttp,
nginx, floor; ringway-uring-baseline, ringway-epoll-baseline (--baseline); py-ringway, py-asyncio, py-uvloop, py-rloop (S14); uvicorn-ringway,
uvicorn-uvloop, uvicorn-rloop, uvicorn-asyncio, aiohttp-ringway, aiohttp-uvloop,
aiohttp-rloop, aiohttp-asyncio, granian, granian-uvloop (S15)."
)]
pub(crate) struct BenchArgs {
    /// Scenarios (S1..S15) or variants (S5:c1000), comma-separated; default: one of
    /// each of S1-S9, S7 16KiB, S10 x1 and S9's capacity.
    #[arg(long, value_name = "LIST")]
    scenario: Option<String>,
    /// Peers, comma-separated; default: all.
    #[arg(long, value_name = "LIST")]
    peers: Option<String>,
    /// Every variant of every scenario.
    #[arg(long)]
    full: bool,
    /// Seconds per measured round.
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Warm-up seconds per peer and variant.
    #[arg(long, value_name = "SECS")]
    warmup: Option<f64>,
    /// Rounds per variant (peers interleaved round by round).
    #[arg(long)]
    rounds: Option<usize>,
    /// Output directory: results.json and report.html.
    #[arg(long, value_name = "DIR", default_value = "target/bench")]
    out: PathBuf,
    /// Count user-space instructions per request under callgrind, every peer (S5, S7,
    /// S8, S14, S15).
    #[arg(long)]
    instructions: bool,
    /// Do not count the headline's instructions (ringway, the best peer and the floor
    /// of S5, S7, S8; done by default where valgrind is installed).
    #[arg(long)]
    no_counted: bool,
    /// Record this peer under perf and put its flamegraph in the report.
    #[arg(long, value_name = "PEER")]
    profile: Option<String>,
    /// The variant --profile runs (default S5:c50).
    #[arg(long, value_name = "VARIANT")]
    profile_scenario: Option<String>,
    /// Where the traffic goes: loopback, a veth pair between two network namespaces the
    /// suite makes and removes (root only), or both side by side (variants @veth).
    #[arg(long, value_name = "NET", default_value = "loopback", value_parser = Net::parse)]
    net: Net,
    /// Show the change against an earlier results.json.
    #[arg(long, value_name = "OLD.json")]
    compare: Option<PathBuf>,
    /// The directory of an earlier build's `ringway` (e.g. old/target/release): adds
    /// ringway-uring-baseline and ringway-epoll-baseline, which run it beside this
    /// build in the same interleaved rounds.
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// Server CPUs (taskset list); default: the first half.
    #[arg(long, value_name = "CPUS")]
    server_cpus: Option<String>,
    /// Client CPUs (taskset list); default: the second half.
    #[arg(long, value_name = "CPUS")]
    client_cpus: Option<String>,
    /// Do not count syscalls (saves a run per peer and variant).
    #[arg(long)]
    no_syscalls: bool,
    /// Do not cross-check S5 with wrk.
    #[arg(long)]
    no_wrk: bool,
    /// Never show the progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Where ringway and the peer binaries are (default: next to this executable).
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
}

/// Runs `ringway bench`.
pub(crate) fn run(args: BenchArgs) -> io::Result<()> {
    let bin_dir = match args.bin_dir {
        Some(d) => d,
        None => suite::registry::exe_dir()?,
    };
    let mut o = Options::defaults(bin_dir);
    o.peers = args.peers;
    o.scenarios = args.scenario;
    o.full = args.full;
    o.duration = args.duration.unwrap_or(o.duration);
    o.warmup = args.warmup.unwrap_or(o.warmup);
    o.rounds = args.rounds.unwrap_or(o.rounds);
    o.out = args.out;
    o.instructions = args.instructions;
    o.counted = !args.no_counted;
    o.profile = args.profile;
    o.profile_scenario = args.profile_scenario;
    o.compare = args.compare;
    o.baseline = args.baseline;
    o.net = args.net;
    if let Some(c) = args.server_cpus {
        o.server_cpus = c;
    }
    if let Some(c) = args.client_cpus {
        o.client_cpus = c;
    }
    o.syscalls = !args.no_syscalls;
    o.wrk = !args.no_wrk;
    o.progress = !args.no_progress;
    o.command = std::env::args().collect::<Vec<_>>().join(" ");
    let outcome = suite::run(&o).map_err(|e| io::Error::other(format!("bench: {e}")))?;
    print!("{}", outcome.text);
    println!(
        "\nresults: {}\nreport:  {}",
        outcome.json.display(),
        outcome.html.display()
    );
    Ok(())
}
