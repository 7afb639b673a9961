//! Open-loop pacing: when each request of a connection is meant to leave.
//!
//! A connection's schedule is fixed in advance (start + k × interval), whatever the
//! server does. If a response is late the next request leaves late, but its latency is
//! still counted from its intended time: that is the coordinated-omission correction.

use std::time::{Duration, Instant};

/// The schedule of one connection.
#[derive(Debug, Clone)]
pub(super) struct Pacer {
    next: Instant,
    interval: Duration,
}

impl Pacer {
    /// Connection `slot` of `conns`, sharing `rate` requests per second; each send
    /// carries `per_send` requests (the pipeline depth). Connections are staggered so
    /// that sends spread evenly over each interval.
    pub(super) fn new(
        start: Instant,
        slot: usize,
        conns: usize,
        rate: f64,
        per_send: usize,
    ) -> Pacer {
        let interval = Duration::from_secs_f64(conns as f64 * per_send as f64 / rate);
        Pacer {
            next: start + interval.mul_f64(slot as f64 / conns as f64),
            interval,
        }
    }

    /// The intended time of the next send; advances the schedule.
    pub(super) fn next(&mut self) -> Instant {
        let t = self.next;
        self.next += self.interval;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_evenly_and_staggers() {
        let t0 = Instant::now();
        let mut a = Pacer::new(t0, 0, 4, 400.0, 1);
        let mut b = Pacer::new(t0, 1, 4, 400.0, 1);
        assert_eq!(a.next(), t0);
        assert_eq!(a.next(), t0 + Duration::from_millis(10));
        assert_eq!(b.next(), t0 + Duration::from_micros(2500));
    }
}
