//! The echo benchmark (`echo-bench`), the harness of the runtime issue: each echo server
//! pinned to core 0 and `echo-client` on core 1, interleaved round by round, server CPU
//! per message and its ratios to the floor and to tokio. Its servers ([`servers`]), its
//! loads written `CONNSxSIZE` ([`loads`]) and its round records and table ([`rounds`]);
//! the binary `src/bin/echo-bench.rs` runs them. `ringway bench` measures the same
//! shapes as S7 with every peer; this harness stays for its `--syscalls` breakdown under
//! strace and for the figures the README quotes.

pub mod loads;
pub mod rounds;
pub mod servers;
