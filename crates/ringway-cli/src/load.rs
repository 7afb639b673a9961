//! `ringway load`: the load generator of crates/ringway-load (its arguments and its
//! printing live there, next to the engine they describe). The arguments are boxed so
//! the `Command` enum stays small.

use std::io;

/// The arguments of `ringway load`.
pub(crate) type LoadArgs = Box<ringway_load::cli::LoadArgs>;

/// Runs `ringway load`.
pub(crate) fn run(args: LoadArgs) -> io::Result<()> {
    ringway_load::cli::run(*args)
}
