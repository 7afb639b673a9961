//! Server counters, shared by every core: requests, connections, and errors by class.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::error::ErrorClass;

/// Live counters of one server.
#[derive(Debug, Default)]
pub struct Stats {
    requests: AtomicU64,
    requests_read: AtomicU64,
    connections: AtomicU64,
    errors: [AtomicU64; 9],
    idle_closed: AtomicU64,
    send_timeouts: AtomicU64,
    io_errors: AtomicU64,
    tls_errors: AtomicU64,
    accept_errors: AtomicU64,
    over_limit: AtomicU64,
    spliced_bytes: AtomicU64,
    log_dropped: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Requests answered by the handler.
    pub requests: u64,
    /// Request heads read, counted when their connection ends: each gets one response
    /// (its handler's, counted in `requests`, or an error's if its body went bad), so
    /// after a graceful stop with no error the two are equal.
    pub requests_read: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Refused requests, by class.
    pub errors: Vec<(ErrorClass, u64)>,
    /// Keep-alive connections closed by the idle timeout.
    pub idle_closed: u64,
    /// Connections closed because a send did not finish in time.
    pub send_timeouts: u64,
    /// Connections ended by an I/O error (resets and the like).
    pub io_errors: u64,
    /// TLS handshakes or records refused.
    pub tls_errors: u64,
    /// Failed accepts (EMFILE and the like).
    pub accept_errors: u64,
    /// Connections closed at once because the server had
    /// [`Config::max_connections`](crate::Config::max_connections) open already.
    pub over_limit: u64,
    /// Body bytes sent with `splice` (file -> pipe -> socket).
    pub spliced_bytes: u64,
    /// Access log lines dropped because the log's sink did not keep up (a stalled or
    /// closed standard output): counted, never waited for.
    pub log_dropped: u64,
}

impl StatsSnapshot {
    /// The count for one class.
    pub fn error(&self, class: ErrorClass) -> u64 {
        self.errors
            .iter()
            .find(|(c, _)| *c == class)
            .map_or(0, |(_, n)| *n)
    }
}

impl Stats {
    pub(crate) fn request(&self) {
        self.requests.fetch_add(1, Relaxed);
    }
    pub(crate) fn read(&self, n: u64) {
        self.requests_read.fetch_add(n, Relaxed);
    }
    pub(crate) fn over_limit(&self) {
        self.over_limit.fetch_add(1, Relaxed);
    }
    pub(crate) fn connection(&self) {
        self.connections.fetch_add(1, Relaxed);
    }
    pub(crate) fn error(&self, class: ErrorClass) {
        self.errors[class.index()].fetch_add(1, Relaxed);
    }
    pub(crate) fn idle_closed(&self) {
        self.idle_closed.fetch_add(1, Relaxed);
    }
    pub(crate) fn send_timeout(&self) {
        self.send_timeouts.fetch_add(1, Relaxed);
    }
    pub(crate) fn io_error(&self) {
        self.io_errors.fetch_add(1, Relaxed);
    }
    pub(crate) fn tls_error(&self) {
        self.tls_errors.fetch_add(1, Relaxed);
    }
    pub(crate) fn accept_error(&self) {
        self.accept_errors.fetch_add(1, Relaxed);
    }
    pub(crate) fn log_dropped(&self, n: u64) {
        self.log_dropped.fetch_add(n, Relaxed);
    }
    pub(crate) fn spliced(&self, n: u64) {
        self.spliced_bytes.fetch_add(n, Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            requests: self.requests.load(Relaxed),
            requests_read: self.requests_read.load(Relaxed),
            connections: self.connections.load(Relaxed),
            errors: ErrorClass::ALL
                .iter()
                .map(|c| (*c, self.errors[c.index()].load(Relaxed)))
                .collect(),
            idle_closed: self.idle_closed.load(Relaxed),
            send_timeouts: self.send_timeouts.load(Relaxed),
            io_errors: self.io_errors.load(Relaxed),
            tls_errors: self.tls_errors.load(Relaxed),
            accept_errors: self.accept_errors.load(Relaxed),
            over_limit: self.over_limit.load(Relaxed),
            spliced_bytes: self.spliced_bytes.load(Relaxed),
            log_dropped: self.log_dropped.load(Relaxed),
        }
    }
}

impl fmt::Display for StatsSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "requests {} read {} connections {}",
            self.requests, self.requests_read, self.connections
        )?;
        for (c, n) in &self.errors {
            if *n > 0 {
                write!(f, " {} {}", c.name(), n)?;
            }
        }
        for (name, n) in [
            ("idle_closed", self.idle_closed),
            ("send_timeouts", self.send_timeouts),
            ("io_errors", self.io_errors),
            ("tls_errors", self.tls_errors),
            ("accept_errors", self.accept_errors),
            ("over_limit", self.over_limit),
            ("spliced_bytes", self.spliced_bytes),
            ("log_dropped", self.log_dropped),
        ] {
            if n > 0 {
                write!(f, " {name} {n}")?;
            }
        }
        Ok(())
    }
}
