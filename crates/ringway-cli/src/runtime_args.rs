//! The runtime options every server command takes (`--backend`, `--threads`, `--pin`),
//! in one place so that `echo` and `serve` cannot drift apart.

use std::io;

use clap::Args;
use ringway::{Backend, Runtime};
use ringway_load::cli::backend_parser;

/// `--backend`, `--threads`, `--pin`.
#[derive(Debug, Args)]
pub(crate) struct RuntimeArgs {
    /// I/O backend (default: auto, or RINGWAY_BACKEND if set).
    #[arg(long, value_parser = backend_parser())]
    pub backend: Option<Backend>,
    /// Worker threads (cores); default: one per CPU.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Pin each worker to its CPU.
    #[arg(long)]
    pub pin: bool,
}

impl RuntimeArgs {
    /// Builds the runtime these options describe.
    pub(crate) fn build(&self) -> io::Result<Runtime> {
        let mut b = Runtime::builder();
        if let Some(backend) = self.backend {
            b.backend(backend);
        }
        if let Some(t) = self.threads {
            b.worker_threads(t);
        }
        b.pin_threads(self.pin);
        b.build()
    }
}
