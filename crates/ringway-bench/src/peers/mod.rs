//! What the peers written in this crate (`src/bin/http-*`, `src/bin/echo-*`) share: the
//! responses every HTTP peer sends byte for byte ([`canned`]), the raw loop's head
//! counter ([`heads`]) and command line and answer ([`kit`]), the listening socket
//! ([`listen`]), the io_uring floors' provided-buffer ring ([`floor_ring`]) and hyper's
//! service for the two hyper peers ([`hyper_hello`]).
//!
//! Each peer binary keeps only what is its runtime's own, so the peers differ in the
//! runtime, never in the HTTP work they do.

pub mod canned;
pub mod floor_ring;
pub mod heads;
#[cfg(feature = "peers")]
pub mod hyper_hello;
pub mod kit;
pub mod listen;
