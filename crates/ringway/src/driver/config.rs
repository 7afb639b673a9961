//! How a driver is set up ([`DriverConfig`]), which backend to ask for ([`Backend`]),
//! and which one won, with its settings ([`BackendInfo`]).

use std::fmt;
use std::io;
use std::time::Duration;

use crate::buf::PoolShare;

/// Which backend to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// io_uring if the kernel accepts the real configuration, otherwise epoll.
    #[default]
    Auto,
    /// io_uring or fail.
    Uring,
    /// epoll, even where io_uring works.
    Epoll,
}

impl Backend {
    /// Reads `RINGWAY_BACKEND` (`uring`, `epoll` or `auto`); `None` if unset.
    pub fn from_env() -> io::Result<Option<Backend>> {
        match std::env::var("RINGWAY_BACKEND") {
            Ok(v) => v.parse().map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(io::Error::new(io::ErrorKind::InvalidInput, e)),
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = io::Error;
    fn from_str(s: &str) -> io::Result<Backend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "uring" | "io_uring" | "io-uring" => Ok(Backend::Uring),
            "epoll" => Ok(Backend::Epoll),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unknown backend `{other}`: expected one of auto, uring, epoll"),
            )),
        }
    }
}

/// How a driver is set up.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Requested backend.
    pub backend: Backend,
    /// Submission queue entries (the completion queue gets four times as many).
    pub ring_entries: u32,
    /// Buffers in the provided-buffer pool (a power of two). The default, 128 of 64 KiB,
    /// is 8 MiB of address space per core; a page is resident only once a receive has
    /// written it, and an idle connection holds no buffer.
    pub pool_buffers: u16,
    /// The most buffers the pool grows to (a power of two, at most 32768; the default
    /// 1024 is 64 MiB of address space per core at 64 KiB). When receives find the
    /// pool dry, the driver doubles it before anything else (and before the
    /// pool-pressure rule): a thousand connections whose requests arrive in one turn
    /// take a thousand whole buffers at once, and on 128 most of their receives would
    /// end with `ENOBUFS` and wait a turn (S5 at 1,000 connections: 0.5-0.8 such stops
    /// per request, 264 more user-space instructions per request). A buffer never given
    /// out costs no memory, so a core whose receives never run dry stays at
    /// `pool_buffers`. At or below `pool_buffers`, the pool never grows. On io_uring the
    /// buffer ring has an entry per buffer of this capacity, charged to `RLIMIT_MEMLOCK`
    /// without `CAP_IPC_LOCK` (16 bytes each); where the limit refuses them, the pool
    /// stays at `pool_buffers` rather than io_uring being given up
    /// ([`BackendInfo::fallbacks`] says so).
    pub pool_buffers_max: u16,
    /// Size of each pool buffer (at most [`MAX_POOL_BUF_SIZE`](crate::buf::MAX_POOL_BUF_SIZE)).
    pub pool_buf_size: usize,
    /// io_uring: receives fill each pool buffer piece after piece (`IOU_PBUF_RING_INC`,
    /// Linux 6.12) instead of taking a whole buffer each. Off by default: with the same
    /// ops and the same TCP exchange, the kernel spent 10-15% more CPU per 16 KiB echoed
    /// message receiving into incremental buffers than into whole ones, in the bench
    /// suite's interleaved rounds (docs/measurements.md); whole 64 KiB buffers hold any
    /// message up to 64 KiB in one piece as well. Incremental buffers cost fewer
    /// user-space instructions per small message (a buffer goes back to the ring once
    /// per many pieces) and pin less of the pool per small receive. Where the kernel
    /// refuses them, the pool becomes whole 4 KiB buffers, as many as fit in the same
    /// memory (noted in [`BackendInfo::fallbacks`]). epoll always fills its buffers
    /// piece after piece (in user space).
    pub pool_incremental: bool,
    /// What one multishot receive may pin of the pool with pieces its reader has not
    /// taken before it is stopped (an eighth by default; see
    /// [`BufferPool::share`](crate::buf::BufferPool::share)). [`PoolShare::Off`] leaves
    /// only the bound on waiting completions, to measure what the share buys.
    pub pool_share: PoolShare,
    /// The pool-pressure rule (on by default): when a receive finds the pool dry, the
    /// pieces waiting for readers are copied out of the pool and their receives stopped
    /// until those readers catch up, so that connections whose readers do not read,
    /// each within its share, cannot together starve the others (see
    /// [`DriverStats::pool_pressure_stops`](crate::driver::DriverStats::pool_pressure_stops)).
    /// `false` is for showing what it prevents.
    pub pool_pressure: bool,
    /// Use a kernel submission thread polling the ring, idling after this long. Burns a
    /// core; off by default.
    pub sqpoll_idle: Option<Duration>,
    /// io_uring: sends of at least this many bytes use `SEND_ZC`; `None` never does.
    /// Off by default: on loopback (the only network this project can measure on) the
    /// receiver copies the pages anyway: zero-copy was slower at 16 KiB, 256 KiB and 1 MiB,
    /// and at 64 KiB ahead by less than the noise (14.4 vs 14.7 ms; see the `send_zc`
    /// group of `benches/overheads.rs` and the README). Turn it on for real NICs with a
    /// threshold you have measured there.
    pub send_zc_min: Option<usize>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            backend: Backend::Auto,
            ring_entries: 256,
            pool_buffers: 128,
            pool_buffers_max: 1024,
            pool_buf_size: 64 * 1024,
            pool_incremental: false,
            pool_share: PoolShare::default(),
            pool_pressure: true,
            sqpoll_idle: None,
            send_zc_min: None,
        }
    }
}

/// The backend that won, with its settings: what `Runtime::backend()` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// `Uring` or `Epoll` (never `Auto`).
    pub kind: Backend,
    /// io_uring setup flags that the kernel accepted, e.g. `["SINGLE_ISSUER",
    /// "DEFER_TASKRUN"]`; empty for epoll.
    pub flags: Vec<&'static str>,
    /// Ring size (submission queue entries); 0 for epoll.
    pub ring_entries: u32,
    /// Why a better rung was refused on the way down, e.g. `io_uring_setup: EPERM`.
    pub fallbacks: Vec<String>,
}

impl BackendInfo {
    /// True for io_uring.
    pub fn is_uring(&self) -> bool {
        self.kind == Backend::Uring
    }
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Backend::Uring => {
                let flags = if self.flags.is_empty() {
                    "no setup flags".to_string()
                } else {
                    self.flags.join("|")
                };
                write!(
                    f,
                    "io_uring ({flags}; {} entries; multishot accept+recv, provided buffer ring)",
                    self.ring_entries
                )?;
            }
            _ => write!(f, "epoll (edge-triggered)")?,
        }
        if !self.fallbacks.is_empty() {
            write!(f, " [after: {}]", self.fallbacks.join("; "))?;
        }
        Ok(())
    }
}
