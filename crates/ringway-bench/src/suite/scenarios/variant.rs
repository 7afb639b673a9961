//! One variant of one scenario: its service, its shape, whether the default run has it,
//! and how the report draws it.

use crate::suite::registry::spec::Service;
use crate::suite::scenarios::shape::Shape;

/// What a variant's chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Requests per second, one bar per peer.
    Throughput,
    /// Latency against percentile, one curve per peer.
    LatencyCurve,
    /// Latency (p50, p99) against offered rate, one curve per peer (S9).
    OpenLoop,
}

/// One variant of one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// `S1` .. `S14`.
    pub scenario: &'static str,
    /// Short name inside the scenario (`c50`, `p16`, `50%`).
    pub name: String,
    /// One line for the report.
    pub title: String,
    /// What the server must be.
    pub service: Service,
    /// What the client does.
    pub shape: Shape,
    /// In the default (short) run.
    pub default: bool,
    /// How the report draws it.
    pub chart: Chart,
}

impl Variant {
    /// `S5 c50`.
    pub fn id(&self) -> String {
        format!("{} {}", self.scenario, self.name)
    }
}
