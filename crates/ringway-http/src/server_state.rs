//! What every core of one server shares, read-only or atomic: the server's
//! configuration, its counters, its open connections, its access log and its shutdown
//! flag. The server
//! (`server.rs`) makes it once; every connection (`conn.rs`) reads it.

use std::sync::Arc;
use std::time::Duration;

use crate::accept::OpenConnections;
use crate::config::Config;
use crate::log::AccessLog;
use crate::stats::Stats;

/// What every core of one server shares (read-only, or atomic).
pub(crate) struct ServerState {
    /// The server's configuration.
    pub(crate) cfg: Config,
    /// TLS, when the server speaks it.
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    /// The counters of every core.
    pub(crate) stats: Arc<Stats>,
    /// The shortest timeout: how far ahead a connection's timer is armed.
    pub(crate) tick: Duration,
    /// `cfg`'s header, idle and send timeouts in coarse-clock nanoseconds, converted
    /// once: the serve loop reads them here rather than keep copies in every
    /// connection's state.
    pub(crate) header_ns: u64,
    /// See `header_ns`.
    pub(crate) idle_ns: u64,
    /// See `header_ns`.
    pub(crate) send_ns: u64,
    /// The access log, when it is on.
    pub(crate) log: Option<Arc<AccessLog>>,
    /// Raised once the graceful shutdown has started (by any thread).
    pub(crate) signal: Arc<ringway::sync::drain::Signal>,
    /// The connections open on every core, against `cfg.max_connections`.
    pub(crate) open: OpenConnections,
}
