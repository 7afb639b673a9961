//! What the measuring of a variant needs from the run ([`VariantEnv`]), a peer whose
//! server is up ([`Live`]), and how long and at what rate a client run goes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::measure::launch::RunningServer;
use crate::measure::stalls::StallWatch;
use crate::suite::registry::PeerSpec;
use crate::suite::run::client::Sizing;
use crate::suite::scenarios::{Shape, Variant};

/// What a variant needs from the run.
#[derive(Debug, Clone)]
pub struct VariantEnv {
    /// The `ringway` binary (the client is `ringway load`).
    pub ringway: PathBuf,
    /// Server CPU list.
    pub server_cpus: String,
    /// Client CPU list.
    pub client_cpus: String,
    /// Seconds per round.
    pub duration: f64,
    /// Warm-up seconds.
    pub warmup: f64,
    /// Rounds.
    pub rounds: usize,
    /// Clean-round threshold.
    pub clean_share: f64,
    /// Count syscalls (perf is here and not turned off).
    pub syscalls: bool,
    /// Scratch directory.
    pub work_dir: PathBuf,
    /// Offered rate of 100% for open-loop shapes.
    pub open_loop_base: Option<f64>,
    /// Directory of the helper binaries (`hostile-client`, `idle-conns`).
    pub bin_dir: PathBuf,
    /// Cross-check S5 c50 with wrk (wrk is here and not turned off).
    pub wrk: bool,
    /// The host-stall sleepers on the server's and the client's CPUs.
    pub stalls: Option<Arc<StallWatch>>,
    /// The CPUs whose steal time each round records (the server's and the client's).
    pub watched_cpus: Vec<usize>,
}

/// A peer of the variant whose server is up.
#[derive(Debug)]
pub struct Live {
    /// The peer.
    pub peer: PeerSpec,
    /// Its server.
    pub server: RunningServer,
    /// req/s of its warm-up.
    pub warmup_rps: Option<f64>,
    /// Its response size from the conformance check.
    pub response_bytes: Option<usize>,
}

/// How long a client run may take before it is stopped.
pub fn limit(env: &VariantEnv) -> Duration {
    Duration::from_secs_f64(env.duration.max(env.warmup) * 3.0 + 60.0)
}

/// The sizing of a measured round of `live`.
pub fn sizing(env: &VariantEnv, v: &Variant, live: &Live) -> Sizing {
    Sizing {
        seconds: env.duration,
        warmup_rps: live.warmup_rps,
        rate: v.shape.offered(env.open_loop_base),
    }
}

/// The offered rate of an open-loop `shape` (a share of the run's capacity).
pub fn open_rate(env: &VariantEnv, shape: &Shape) -> Option<f64> {
    shape.offered(env.open_loop_base)
}
