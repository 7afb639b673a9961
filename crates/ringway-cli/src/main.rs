//! The `ringway` command: one binary for the servers and the tools that measure them.
//!
//! - `ringway serve`: the HTTP/1.1 server of `ringway-http` (`--hello`, `--json`,
//!   `--echo-request`, `--static DIR`, TLS), a listener per core.
//! - `ringway echo`: a TCP echo server on every core (multishot accept and receive,
//!   background sends).
//! - `ringway load`: the load generator of `ringway-load`.
//!
//! Each says where it listens and which backend won (`--backend`, `--threads`, `--pin`
//! are shared: `runtime_args.rs`).

mod bench;
mod echo;
mod load;
mod pool_report;
mod runtime_args;
mod serve;
mod stop_signals;

use clap::{Parser, Subcommand};

/// ringway: an io_uring-native runtime and the tools that measure it.
#[derive(Debug, Parser)]
#[command(name = "ringway", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// TCP echo server: every byte received is sent back.
    Echo(echo::EchoArgs),
    /// Load generator: closed/open loop, batches, churn, pipelining, TLS, echo.
    Load(load::LoadArgs),
    /// HTTP/1.1 server (ringway-http): --hello, --json, --echo-request, --static DIR.
    Serve(serve::ServeArgs),
    /// Benchmark suite: ringway and its peers on the scenarios of docs/benchmarks.md.
    Bench(Box<bench::BenchArgs>),
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RINGWAY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Echo(args) => echo::run(args),
        Command::Load(args) => load::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Bench(args) => bench::run(*args),
    };
    if let Err(e) = result {
        eprintln!("ringway: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::Parser;
    use ringway::Backend;

    use super::{Cli, Command};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("ringway").chain(args.iter().copied()))
    }

    #[test]
    fn backend_parses_for_every_command() {
        let Command::Serve(serve) = parse(&["serve", "--backend", "epoll"]).unwrap().command else {
            panic!("not serve")
        };
        assert_eq!(serve.runtime.backend, Some(Backend::Epoll));
        let Command::Echo(echo) = parse(&["echo", "--backend", "uring"]).unwrap().command else {
            panic!("not echo")
        };
        assert_eq!(echo.runtime.backend, Some(Backend::Uring));
        let Command::Load(load) = parse(&["load", "--backend", "auto", "http://a/"])
            .unwrap()
            .command
        else {
            panic!("not load")
        };
        assert_eq!(load.backend, Some(Backend::Auto));
    }

    #[test]
    fn backend_typo_says_what_was_expected() {
        for args in [
            &["serve", "--backend", "urng"][..],
            &["echo", "--backend", "urng"],
            &["load", "--backend", "urng", "http://a/"],
        ] {
            let e = parse(args).expect_err("a typo is refused");
            assert_eq!(e.kind(), ErrorKind::InvalidValue);
            let message = e.render().to_string();
            assert!(
                message.contains("[possible values: auto, uring, epoll]"),
                "{message}"
            );
            assert!(
                message.contains("a similar value exists: 'uring'"),
                "{message}"
            );
        }
    }
}
