//! Measuring processes from outside, shared by the suite and the echo benchmark:
//! spawning and watching pinned processes ([`process`]), their CPU time and memory from
//! `/proc` ([`procstat`]), syscall counts from `perf stat` ([`perfstat`]) and `strace -c`
//! ([`strace`]), a free loopback port ([`ports`]), starting a server and knowing when it
//! is ready ([`launch`]), two network namespaces joined by a veth pair ([`netns`]), the
//! host's stalls seen from inside the VM ([`stalls`]), medians of a few rounds
//! ([`stats`]) and plain-text tables ([`text_table`]). Nothing here knows a scenario or
//! a peer.

pub mod launch;
pub mod netns;
pub mod perfstat;
pub mod ports;
pub mod process;
pub mod procstat;
pub mod stalls;
pub mod stats;
pub mod strace;
pub mod text_table;
