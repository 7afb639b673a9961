//! Why a run could not start or finish, and the classes a failed request is counted in.
//!
//! [`LoadError`] is for the run as a whole (a bad URL, a refused first connection, a
//! nonsensical option): the command prints it and exits non-zero. [`RequestFailure`] is
//! the class of one request that failed during a run: it is counted, never printed one by
//! one (its [`name`](RequestFailure::name) is the key in the summary and in JSON).

use std::fmt;
use std::io;

/// A run that cannot start, or that failed as a whole.
#[derive(Debug)]
pub enum LoadError {
    /// The URL cannot be used; the message says why.
    BadUrl(String),
    /// The options contradict each other or are out of range.
    Config(String),
    /// The target did not accept the probe connection made before the run.
    Connect(String),
    /// TLS set-up failed (certificates, server name).
    Tls(String),
    /// Anything else from the system (runtime start-up, files).
    Io(io::Error),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::BadUrl(m) => write!(f, "bad URL: {m}"),
            LoadError::Config(m) => write!(f, "bad options: {m}"),
            LoadError::Connect(m) => write!(f, "cannot connect: {m}"),
            LoadError::Tls(m) => write!(f, "TLS: {m}"),
            LoadError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<io::Error> for LoadError {
    fn from(e: io::Error) -> Self {
        LoadError::Io(e)
    }
}

/// The class a failed (or wrong) request is counted in (the `errors` of a
/// [`Report`](crate::Report)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFailure {
    /// The connection (TCP connect or TLS handshake) failed.
    Connect,
    /// Reading failed, or the peer closed with the request unanswered.
    Read,
    /// Writing the request failed.
    Write,
    /// No complete response within the timeout.
    Timeout,
    /// A response arrived with a status outside 2xx/3xx (the response is also counted as
    /// completed, as wrk does).
    Status,
    /// The response could not be framed (bad head, bad chunk, conflicting lengths).
    Framing,
    /// The body (or echoed bytes) differed from what was expected.
    Body,
}

impl RequestFailure {
    /// Every class, in report order.
    pub const ALL: [RequestFailure; 7] = [
        RequestFailure::Connect,
        RequestFailure::Read,
        RequestFailure::Write,
        RequestFailure::Timeout,
        RequestFailure::Status,
        RequestFailure::Framing,
        RequestFailure::Body,
    ];

    /// The key used in the summary and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            RequestFailure::Connect => "connect",
            RequestFailure::Read => "read",
            RequestFailure::Write => "write",
            RequestFailure::Timeout => "timeout",
            RequestFailure::Status => "status",
            RequestFailure::Framing => "framing",
            RequestFailure::Body => "body",
        }
    }
}

/// Counts of failed requests by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    counts: [u64; 7],
}

impl ErrorCounts {
    /// Adds `n` to `class`.
    pub fn add(&mut self, class: RequestFailure, n: u64) {
        self.counts[class as usize] += n;
    }

    /// The count of `class`.
    pub fn get(&self, class: RequestFailure) -> u64 {
        self.counts[class as usize]
    }

    /// All classes together.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }
}
