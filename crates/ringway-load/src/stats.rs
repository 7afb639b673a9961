//! What one client core measured: latency histograms (HdrHistogram, nanoseconds),
//! counts of requests, bytes, connections, status classes and errors. Each core keeps
//! its own and the run merges them at the end, so recording never crosses cores.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::error::{ErrorCounts, RequestFailure};

/// Largest latency recorded (one hour); larger values are clamped.
const MAX_NS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds, 3 significant figures.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// Records `d` in `h` (clamped to the histogram's range).
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let ns = (d.as_nanos() as u64).clamp(1, MAX_NS);
    h.record(ns).expect("value clamped into range");
}

/// Measurements of one core (or, merged, of a whole run).
#[derive(Debug, Clone)]
pub struct Stats {
    /// Latency of every completed request. In open loop: from its intended send time
    /// (coordinated omission corrected).
    pub latency: Histogram<u64>,
    /// Open loop only: latency from the actual send time (what a naive client reports).
    pub uncorrected: Histogram<u64>,
    /// Time to connect (TCP, plus the TLS handshake for https).
    pub connect: Histogram<u64>,
    /// Batch mode: the time of each batch.
    pub batches: Histogram<u64>,
    /// Completed requests (responses framed, or echo messages verified).
    pub requests: u64,
    /// Responses by status class: index 1 = 1xx .. 5 = 5xx, 0 = anything else.
    pub status: [u64; 6],
    /// Failed or wrong requests by class.
    pub errors: ErrorCounts,
    /// Connections opened successfully.
    pub connections: u64,
    /// Bytes received (response heads and bodies as they came on the wire, TLS excluded).
    pub bytes_read: u64,
    /// Bytes sent.
    pub bytes_written: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            latency: new_histogram(),
            uncorrected: new_histogram(),
            connect: new_histogram(),
            batches: new_histogram(),
            requests: 0,
            status: [0; 6],
            errors: ErrorCounts::default(),
            connections: 0,
            bytes_read: 0,
            bytes_written: 0,
        }
    }
}

impl Stats {
    /// Counts a response with `status`; a status outside 2xx/3xx is also a `status` error.
    pub fn status(&mut self, status: u16) {
        let class = (status / 100) as usize;
        self.status[if (1..=5).contains(&class) { class } else { 0 }] += 1;
        if !(200..400).contains(&status) {
            self.errors.add(RequestFailure::Status, 1);
        }
    }

    /// Adds another core's measurements.
    pub fn merge(&mut self, o: &Stats) {
        self.latency.add(&o.latency).expect("same bounds");
        self.uncorrected.add(&o.uncorrected).expect("same bounds");
        self.connect.add(&o.connect).expect("same bounds");
        self.batches.add(&o.batches).expect("same bounds");
        self.requests += o.requests;
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += b;
        }
        self.errors.merge(&o.errors);
        self.connections += o.connections;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
    }
}
