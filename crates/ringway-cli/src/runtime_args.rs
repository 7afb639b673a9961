//! The runtime options every server command takes (`--backend`, `--threads`, `--pin`),
//! in one place so that `echo` and `serve` cannot drift apart.

use std::io;

use clap::{Args, ValueEnum};
use ringway::{Backend, Runtime};

/// Backend choice on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendArg {
    /// io_uring if the kernel allows, else epoll.
    Auto,
    /// io_uring or fail.
    Uring,
    /// epoll.
    Epoll,
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Auto => Backend::Auto,
            BackendArg::Uring => Backend::Uring,
            BackendArg::Epoll => Backend::Epoll,
        }
    }
}

/// `--backend`, `--threads`, `--pin`.
#[derive(Debug, Args)]
pub(crate) struct RuntimeArgs {
    /// I/O backend (default: auto, or RINGWAY_BACKEND if set).
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
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
            b.backend(backend.into());
        }
        if let Some(t) = self.threads {
            b.worker_threads(t);
        }
        b.pin_threads(self.pin);
        b.build()
    }
}
