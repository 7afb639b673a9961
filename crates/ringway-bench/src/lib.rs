//! ringway-bench: the benchmark suite behind `ringway bench` (ringway against tokio,
//! hyper, monoio, compio, glommio, may-minihttp, nginx, the Python loops and a raw
//! io_uring floor, on the scenarios of `docs/benchmarks.md`), the servers it measures
//! that are written here, and the echo benchmark (`echo-bench`).
//!
//! The crate is four rooms, each depending only on the ones listed before it:
//!
//! - [`peers`]: what the peer binaries of `src/bin` share (the canned responses, the raw
//!   HTTP loop, the listeners, the floors' buffer ring, hyper's service), so that the
//!   peers differ in their runtime, never in the HTTP work they do;
//! - [`measure`]: measuring processes from outside: spawning and watching them pinned,
//!   their CPU time from `/proc`, syscall counts from `perf stat` and `strace -c`, free
//!   ports, starting a server and knowing it is ready, medians and text tables;
//! - [`suite`]: `ringway bench` itself: the peer registry, the scenarios, the rounds,
//!   the verdicts and the reports;
//! - [`echo_bench`]: the echo benchmark of the runtime issue (`echo-bench`): its servers,
//!   its loads and its round records.

pub mod echo_bench;
pub mod measure;
pub mod peers;
pub mod suite;
