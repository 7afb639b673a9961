//! The runtime options every server command takes (`--backend`, `--threads`, `--pin`,
//! the receive pool's shape), in one place so that `echo` and `serve` cannot drift
//! apart.

use std::io;

use clap::Args;
use ringway::buf::{PoolShare, MAX_POOL_BUF_SIZE};
use ringway::{Backend, Runtime};
use ringway_load::cli::backend_parser;

/// `--backend`, `--threads`, `--pin`, `--pool-buffers`, `--pool-buffers-max`,
/// `--pool-buffer-size`, `--incremental-pool-buffers`, `--whole-pool-buffers`,
/// `--pool-share`.
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
    /// Receive buffers per core (a power of two, at most 32768; default 128): with
    /// --pool-buffer-size, the memory each core's multishot receives fill.
    #[arg(long, value_name = "N", value_parser = parse_pool_buffers)]
    pub pool_buffers: Option<u16>,
    /// The most receive buffers a core's pool grows to when its receives find it dry
    /// (a power of two, at most 32768; default 1024; at or below --pool-buffers, it
    /// never grows).
    #[arg(long, value_name = "N", value_parser = parse_pool_buffers)]
    pub pool_buffers_max: Option<u16>,
    /// Size of each receive buffer: bytes, or with a KiB suffix (default 64KiB, at most
    /// 512KiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_pool_buffer_size)]
    pub pool_buffer_size: Option<usize>,
    /// Receives fill each pool buffer piece after piece (io_uring:
    /// IOU_PBUF_RING_INC) instead of taking a whole buffer each, the default (for
    /// measuring the difference; epoll always fills piece after piece).
    #[arg(long, conflicts_with = "whole_pool_buffers")]
    pub incremental_pool_buffers: bool,
    /// Each receive takes a whole pool buffer (io_uring; the default, kept so that
    /// earlier commands still run).
    #[arg(long)]
    pub whole_pool_buffers: bool,
    /// What one connection's unread bytes may pin of its core's receive buffers before
    /// its receive stops until the reader catches up: a fraction (default 1/8, also
    /// written 0.125), or off (only the bound of 16 waiting receives: for measuring what
    /// the share buys).
    #[arg(long, value_name = "off|FRACTION", value_parser = parse_pool_share)]
    pub pool_share: Option<PoolShare>,
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
        if self.pool_buffers.is_some() || self.pool_buffer_size.is_some() {
            let defaults = ringway::driver::DriverConfig::default();
            b.buffer_pool(
                self.pool_buffers.unwrap_or(defaults.pool_buffers),
                self.pool_buffer_size.unwrap_or(defaults.pool_buf_size),
            );
        }
        if let Some(max) = self.pool_buffers_max {
            b.buffer_pool_max(max);
        }
        if self.incremental_pool_buffers {
            b.incremental_pool(true);
        } else if self.whole_pool_buffers {
            b.incremental_pool(false);
        }
        if let Some(share) = self.pool_share {
            b.pool_share(share);
        }
        b.build()
    }
}

fn parse_pool_buffers(s: &str) -> Result<u16, String> {
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("expected a number of buffers (a power of two), got {s:?}"))?;
    if !n.is_power_of_two() || n > 32768 {
        return Err(format!(
            "expected a power of two from 1 to 32768 (the kernel's limit), got {n}"
        ));
    }
    Ok(n as u16)
}

fn parse_pool_buffer_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (digits, unit) = match t.strip_suffix("KiB") {
        Some(d) => (d, 1024),
        None => (t, 1),
    };
    let n: usize = digits
        .trim()
        .parse()
        .map_err(|_| format!("expected a size in bytes or KiB (e.g. 65536 or 64KiB), got {s:?}"))?;
    let bytes = n.saturating_mul(unit);
    if bytes == 0 || bytes > MAX_POOL_BUF_SIZE {
        return Err(format!(
            "expected a buffer size from 1 byte to {} KiB, got {s}",
            MAX_POOL_BUF_SIZE / 1024
        ));
    }
    Ok(bytes)
}

fn parse_pool_share(s: &str) -> Result<PoolShare, String> {
    s.parse().map_err(|e: io::Error| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_options_parse_and_refuse_with_what_was_expected() {
        assert_eq!(parse_pool_buffers("64"), Ok(64));
        assert!(parse_pool_buffers("48")
            .unwrap_err()
            .contains("power of two"));
        assert!(parse_pool_buffers("65536").unwrap_err().contains("32768"));
        assert!(parse_pool_buffers("x")
            .unwrap_err()
            .contains("number of buffers"));
        assert_eq!(parse_pool_buffer_size("16KiB"), Ok(16 * 1024));
        assert_eq!(parse_pool_buffer_size("4096"), Ok(4096));
        assert!(parse_pool_buffer_size("0").unwrap_err().contains("512 KiB"));
        assert!(parse_pool_buffer_size("1024KiB")
            .unwrap_err()
            .contains("512 KiB"));
        assert!(parse_pool_buffer_size("64k")
            .unwrap_err()
            .contains("e.g. 65536"));
        assert_eq!(parse_pool_share("off"), Ok(PoolShare::Off));
        assert_eq!(parse_pool_share("1/8"), Ok(PoolShare::default()));
        assert_eq!(parse_pool_share("0.25").map(|s| s.buffers(64)), Ok(16));
        for typo in ["of", "1/0", "8", "0", "1/8th", ""] {
            let e = parse_pool_share(typo).unwrap_err();
            assert!(e.contains("expected `off`, a fraction"), "{typo:?}: {e}");
        }
    }

    #[test]
    fn pool_share_reaches_the_command_line_and_a_typo_is_refused() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            runtime: RuntimeArgs,
        }
        let cli = Cli::try_parse_from(["ringway", "--pool-share", "off"]).unwrap();
        assert_eq!(cli.runtime.pool_share, Some(PoolShare::Off));
        let cli = Cli::try_parse_from(["ringway"]).unwrap();
        assert_eq!(cli.runtime.pool_share, None, "the runtime's default");
        let e = Cli::try_parse_from(["ringway", "--pool-share", "none"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--pool-share") && e.contains("expected `off`"),
            "{e}"
        );
    }
}
