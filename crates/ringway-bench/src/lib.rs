//! Shared plumbing of the echo benchmark.
//!
//! The binaries in `src/bin` are deliberately small; everything the harness needs that is
//! not a peer or the load client lives here, split into modules that can be tested without
//! starting a server: reading a process's CPU time from `/proc`, picking a free port,
//! spawning and stopping pinned processes, parsing `strace -c` tables and `perf stat` counters, and summarising
//! and formatting the results.

pub mod canned;
pub mod floor_ring;
pub mod heads;
#[cfg(feature = "peers")]
pub mod hyper_hello;
pub mod listen;
pub mod peer_kit;
pub mod peers;
pub mod perfstat;
pub mod ports;
pub mod process;
pub mod procstat;
pub mod report;
pub mod scenario;
pub mod server;
pub mod stats;
pub mod strace;
pub mod suite;
pub mod table;
