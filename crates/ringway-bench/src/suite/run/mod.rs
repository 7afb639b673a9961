//! Measuring: every peer of a variant started fresh, checked ([`conformance`]), warmed
//! up and measured round by round with `ringway load` ([`client`]) on the client cores
//! ([`variant`]; S12's idle connections in [`idle`], S9's capacity at a latency bound in
//! [`capacity`], its 100% in [`open_loop`]); then what is counted beside the
//! rounds: syscalls ([`syscalls`]), the wrk cross-check ([`wrk`]), user-space
//! instructions under callgrind ([`callgrind`]) and a flamegraph ([`profile`]).

pub mod bring_up;
pub mod callgrind;
pub mod capacity;
pub mod client;
pub mod conformance;
pub mod env;
pub mod idle;
pub mod open_loop;
pub mod profile;
pub mod round;
pub mod syscalls;
pub mod variant;
pub mod wrk;
