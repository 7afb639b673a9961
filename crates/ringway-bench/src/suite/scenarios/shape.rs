//! The shape of a load: what `ringway load` does to a server in one variant (closed
//! loop, batches, iterations, churn, open loop, echo, idle connections, hostile mix).

/// The shape of the load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Closed loop: `conns` connections, `pipeline` requests in flight on each.
    Closed {
        /// Connections.
        conns: usize,
        /// Pipeline depth (1: one request at a time).
        pipeline: usize,
    },
    /// Batches of `size` concurrent requests, timed per batch; on fresh connections
    /// (one request each) when `fresh`.
    Batch {
        /// Requests per batch (one per connection).
        size: usize,
        /// New connections for every request.
        fresh: bool,
    },
    /// Iterations of `per_iteration` requests over `conns` connections, timed each.
    Iterations {
        /// Connections.
        conns: usize,
        /// Requests per iteration.
        per_iteration: u64,
    },
    /// The Rustlet shape: `per_conn` requests per connection (`-x`), `conns`
    /// connections over `threads` client threads, repeated (`-i`).
    Rustlet {
        /// Requests per connection.
        per_conn: u64,
        /// Connections.
        conns: usize,
        /// Client threads.
        threads: usize,
    },
    /// Connection churn: `per_conn` requests per connection, then the client closes it.
    Churn {
        /// Connections at a time.
        conns: usize,
        /// Requests per connection.
        per_conn: u64,
    },
    /// Open loop at `percent` of the S5 capacity, latency from the intended send time.
    Open {
        /// Connections.
        conns: usize,
        /// Offered rate, in percent of the capacity.
        percent: u32,
    },
    /// Fixed-size echo, every byte verified.
    Echo {
        /// Connections.
        conns: usize,
        /// Message size.
        size: usize,
    },
    /// Framed echo, random 1–100-byte frames, verified.
    EchoFramed {
        /// Connections.
        conns: usize,
    },
    /// `idle` connections held open (each after one request) while `conns` run a
    /// closed loop; reports RSS per connection and the p99 with and without them.
    Idle {
        /// Idle connections.
        idle: usize,
        /// Loaded connections.
        conns: usize,
    },
    /// Open loop at a fixed offered rate (S15: the same rate for every Python server),
    /// latency from the intended send time.
    Rate {
        /// Connections.
        conns: usize,
        /// Offered requests per second.
        rps: u32,
    },
    /// The capacity search: the open-loop rate stepped up until p99 passes 10 ms.
    Capacity {
        /// Connections.
        conns: usize,
    },
    /// A closed loop on `conns` connections while malformed requests and slow clients
    /// arrive on other connections.
    Hostile {
        /// Loaded connections.
        conns: usize,
        /// With more than 0: one more connection uploads a body of this many MB to a
        /// handler that reads it slowly (`/upload-slow`), for the whole round.
        upload_mb: u32,
    },
}

impl Shape {
    /// `true` for shapes whose length is a request count derived from the warm-up's
    /// rate rather than a duration.
    pub fn counted(&self) -> bool {
        matches!(
            self,
            Shape::Batch { .. } | Shape::Iterations { .. } | Shape::Rustlet { .. }
        )
    }

    /// The rate an open-loop shape offers, `base` being the run's capacity (100%).
    pub fn offered(&self, base: Option<f64>) -> Option<f64> {
        match *self {
            Shape::Open { percent, .. } => base.map(|b| b * f64::from(percent) / 100.0),
            Shape::Rate { rps, .. } => Some(f64::from(rps)),
            _ => None,
        }
    }

    /// `true` for the shapes whose rate is offered (latency from the intended send
    /// time).
    pub fn open(&self) -> bool {
        matches!(self, Shape::Open { .. } | Shape::Rate { .. })
    }

    /// The connections the client opens (the largest, for backlogs and limits).
    pub fn connections(&self) -> usize {
        match *self {
            Shape::Closed { conns, .. }
            | Shape::Iterations { conns, .. }
            | Shape::Rustlet { conns, .. }
            | Shape::Churn { conns, .. }
            | Shape::Open { conns, .. }
            | Shape::Echo { conns, .. }
            | Shape::EchoFramed { conns }
            | Shape::Hostile { conns, .. }
            | Shape::Rate { conns, .. }
            | Shape::Capacity { conns } => conns,
            Shape::Batch { size, .. } => size,
            Shape::Idle { idle, conns } => idle + conns,
        }
    }
}
