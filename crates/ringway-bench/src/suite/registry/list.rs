//! The peer registry: every server the suite measures, in one table.
//!
//! Adding a peer is one entry in [`registry`]: a name, a line saying what it is, how it
//! handles HTTP (parses it, or counts request heads), what its responses are allowed to
//! differ in (declared, printed in the report), and a function that returns, for each
//! service the suite asks for, the command line that starts it (or why it cannot).
//! Everything else (pinning, ports, conformance, rounds, reports) is the harness's job.

use std::path::{Path, PathBuf};

use crate::measure::launch::{LaunchSpec, Ready};
use crate::peers::canned::App;
use crate::suite::registry::frameworks::{self, Server};
use crate::suite::registry::nginx;
use crate::suite::registry::python::{self, PyLoop};
use crate::suite::registry::spec::{
    Deviation, HttpWork, Launch, LaunchCtx, PeerSpec, Runs, Service,
};

/// `PROGRAM ARGS...`, each word a separate argument.
fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// A binary of this workspace: runs if it was built, else says how to build it.
fn own_binary(ctx: &LaunchCtx, name: &str, args: &str, package: &str) -> Launch {
    own_binary_in(&ctx.bin_dir, name, args, package)
}

/// Binary `name` of directory `dir` with `args`.
fn own_binary_in(dir: &Path, name: &str, args: &str, package: &str) -> Launch {
    let path = dir.join(name);
    if !path.is_file() {
        return Launch::Unavailable(format!(
            "{} not found; build it: cargo build --release -p {package}",
            path.display()
        ));
    }
    Launch::Run(LaunchSpec::new(words(&format!(
        "{} {args}",
        path.display()
    ))))
}

fn app_arg(app: App) -> &'static str {
    match app {
        App::Hello => "hello",
        App::Body => "body",
    }
}

const BIND: &str = "--bind 127.0.0.1:{port}";

fn ringway(ctx: &LaunchCtx, service: Service, backend: &str) -> Launch {
    ringway_with(ctx, service, backend, "")
}

/// `ringway` with more runtime options (`extra`), for a variant of the same server.
fn ringway_with(ctx: &LaunchCtx, service: Service, backend: &str, extra: &str) -> Launch {
    ringway_from(ctx, &ctx.bin_dir, service, backend, extra)
}

/// The same server from an earlier build's `ringway` (`--baseline DIR`): what a change
/// bought, measured in the rounds of one run instead of across two runs' drift.
fn ringway_baseline(ctx: &LaunchCtx, service: Service, backend: &str) -> Launch {
    match &ctx.baseline_dir {
        Some(dir) => ringway_from(ctx, dir, service, backend, ""),
        None => Launch::Unavailable(
            "needs --baseline DIR (the directory of an earlier build's `ringway`)".into(),
        ),
    }
}

/// The `ringway` server of `dir` for `service`.
fn ringway_from(
    ctx: &LaunchCtx,
    dir: &Path,
    service: Service,
    backend: &str,
    extra: &str,
) -> Launch {
    let common = format!(
        "--threads {} --backend {backend} {extra} {BIND}",
        ctx.server_threads
    );
    let args = match service {
        Service::Http(App::Hello) => format!("serve --hello --no-access-log {common}"),
        Service::Http(App::Body) => format!(
            "serve --static {} --no-access-log {common}",
            ctx.static_dir.display()
        ),
        Service::Tls => match &ctx.tls {
            Some((cert, key)) => format!(
                "serve --hello --no-access-log --tls-cert {} --tls-key {} {common}",
                cert.display(),
                key.display()
            ),
            None => return Launch::Unavailable("no TLS certificate was made".into()),
        },
        Service::Echo => format!("echo {common}"),
        Service::Python(_) | Service::Asgi(_) => {
            return Launch::NotApplicable("not a Python server")
        }
    };
    own_binary_in(dir, "ringway", &args, "ringway-cli")
}

fn raw_http(ctx: &LaunchCtx, service: Service, bin: &str, extra: &str) -> Launch {
    match service {
        Service::Http(app) => own_binary(
            ctx,
            bin,
            &format!(
                "{BIND} --threads {} --app {} {extra}",
                ctx.server_threads,
                app_arg(app)
            ),
            "ringway-bench",
        ),
        Service::Tls => Launch::NotApplicable("no TLS server"),
        Service::Echo => Launch::NotApplicable("no echo server"),
        Service::Python(_) | Service::Asgi(_) => Launch::NotApplicable("not a Python server"),
    }
}

fn echo_or(ctx: &LaunchCtx, service: Service, echo: Option<(&str, &str)>, http: Launch) -> Launch {
    match (service, echo) {
        (Service::Echo, Some((bin, extra))) => {
            own_binary(ctx, bin, &format!("{BIND} {extra}"), "ringway-bench")
        }
        (Service::Echo, None) => Launch::NotApplicable("no echo server"),
        _ => http,
    }
}

/// Every peer the suite knows, in the order of its tables. **Add a peer here** (in the
/// group it belongs to).
pub fn registry() -> Vec<PeerSpec> {
    let mut all = ringway_and_hyper();
    all.extend(runtimes());
    all.extend(parsers_and_floor());
    all.extend(python_loops());
    all.extend(python_frameworks());
    all
}

/// The registry's peers: ringway on both backends, and one hyper service on tokio and on ringway.
fn ringway_and_hyper() -> Vec<PeerSpec> {
    vec![
        PeerSpec {
            name: "ringway-uring",
            about: "ringway serve --hello (ringway-http on the ringway runtime), io_uring backend",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| ringway(ctx, s, "uring"),
        },
        PeerSpec {
            name: "ringway-uring-noshare",
            about: "ringway-uring without the pool share (--pool-share off): what one connection's share of the receive pool buys (S13 mix-upload)",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::ByName,
            launch: |ctx, s| ringway_with(ctx, s, "uring", "--pool-share off"),
        },
        PeerSpec {
            name: "ringway-epoll",
            about: "the same server on ringway's epoll backend (isolates the I/O API)",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| ringway(ctx, s, "epoll"),
        },
        PeerSpec {
            name: "ringway-uring-baseline",
            about: "ringway-uring from an earlier build (--baseline DIR): before and after in one run",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::ByName,
            launch: |ctx, s| ringway_baseline(ctx, s, "uring"),
        },
        PeerSpec {
            name: "ringway-epoll-baseline",
            about: "ringway-epoll from an earlier build (--baseline DIR)",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::ByName,
            launch: |ctx, s| ringway_baseline(ctx, s, "epoll"),
        },
        PeerSpec {
            name: "hyper",
            about: "tokio multi-thread (one worker per server core) + hyper 1 http1",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| raw_http(ctx, s, "http-hyper", ""),
        },
        PeerSpec {
            name: "hyper-ringway",
            about: "the same hyper 1 http1 service as `hyper`, on ringway (io_uring) through ringway-compat's Server",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::Full,
            launch: |ctx, s| raw_http(ctx, s, "http-hyper-ringway", "--backend uring"),
        },
        PeerSpec {
            name: "hyper-ringway-epoll",
            about: "hyper on ringway through ringway-compat, epoll backend",
            http: HttpWork::Parses,
            deviations: &[],
            runs: Runs::ByName,
            launch: |ctx, s| raw_http(ctx, s, "http-hyper-ringway", "--backend epoll"),
        },
    ]
}

/// The registry's peers: the other runtimes, each with the raw HTTP loop (and an echo server where written).
fn runtimes() -> Vec<PeerSpec> {
    vec![
        PeerSpec {
            name: "tokio-raw",
            about: "tokio current_thread per core, SO_REUSEPORT, hand-written HTTP loop (pingora's shape)",
            http: HttpWork::CountsHeads,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| {
                let http = raw_http(ctx, s, "http-tokio", "");
                echo_or(ctx, s, Some(("echo-tokio", "")), http)
            },
        },
        PeerSpec {
            name: "monoio",
            about: "monoio 0.2 (io_uring) as shipped, thread per core, raw HTTP loop",
            http: HttpWork::CountsHeads,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| {
                let http = raw_http(ctx, s, "http-monoio", "");
                echo_or(ctx, s, Some(("echo-monoio", "")), http)
            },
        },
        PeerSpec {
            name: "monoio-coop",
            about: "the same monoio server with its ring built with COOP_TASKRUN | TASKRUN_FLAG",
            http: HttpWork::CountsHeads,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| {
                let http = raw_http(ctx, s, "http-monoio", "--coop-taskrun");
                echo_or(ctx, s, Some(("echo-monoio", "--coop-taskrun")), http)
            },
        },
        PeerSpec {
            name: "compio",
            about: "compio 0.19 (io_uring) with its default ring, thread per core, raw HTTP loop",
            http: HttpWork::CountsHeads,
            deviations: &[],
            runs: Runs::Full,
            launch: |ctx, s| raw_http(ctx, s, "http-compio", ""),
        },
        PeerSpec {
            name: "compio-tuned",
            about: "the same compio server with SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN",
            http: HttpWork::CountsHeads,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| raw_http(ctx, s, "http-compio", "--tuned"),
        },
        PeerSpec {
            name: "glommio",
            about: "glommio 0.9 (io_uring), one executor per server core, raw HTTP loop",
            http: HttpWork::CountsHeads,
            deviations: &[],
            runs: Runs::Full,
            launch: |ctx, s| raw_http(ctx, s, "http-glommio", ""),
        },
    ]
}

/// The registry's peers: the other servers that parse HTTP (may-minihttp, nginx), and the floor.
fn parsers_and_floor() -> Vec<PeerSpec> {
    vec![
        PeerSpec {
            name: "may-minihttp",
            about: "may_minihttp 0.1 (stackful coroutines on epoll, httparse), its own response writer",
            http: HttpWork::Parses,
            deviations: &[
                Deviation::ReasonPhrase("Ok"),
                Deviation::ServerValue("M"),
                Deviation::HeaderNameCase,
                Deviation::HeaderOrder,
            ],
            runs: Runs::Default,
            launch: |ctx, s| raw_http(ctx, s, "http-may", ""),
        },
        PeerSpec {
            name: "nginx",
            about: "nginx from the system (generated config: workers = server cores, pinned, access_log off)",
            http: HttpWork::Parses,
            deviations: &[
                Deviation::ServerValue("nginx"),
                Deviation::HeaderNameCase,
                Deviation::HeaderOrder,
                Deviation::ExtraHeader("connection"),
                Deviation::EtagValue,
            ],
            runs: Runs::Default,
            launch: nginx::launch,
        },
        PeerSpec {
            name: "floor",
            about: "the floor: one thread straight on the io-uring crate, no runtime, no allocation per request (TLS: rustls with ringway's configuration)",
            http: HttpWork::CountsHeads,
            deviations: &[],
            runs: Runs::Default,
            launch: |ctx, s| {
                let http = match s {
                    Service::Http(app) => own_binary(
                        ctx,
                        "http-floor",
                        &format!("{BIND} --app {}", app_arg(app)),
                        "ringway-bench",
                    ),
                    Service::Tls => match &ctx.tls {
                        Some((cert, key)) => own_binary(
                            ctx,
                            "http-floor",
                            &format!(
                                "{BIND} --app hello --tls-cert {} --tls-key {}",
                                cert.display(),
                                key.display()
                            ),
                            "ringway-bench",
                        ),
                        None => Launch::Unavailable("no TLS certificate was made".into()),
                    },
                    _ => Launch::NotApplicable("no such server"),
                };
                echo_or(ctx, s, Some(("echo-floor", "")), http)
            },
        },
    ]
}

/// The registry's peers: the Python loops of S14.
fn python_loops() -> Vec<PeerSpec> {
    vec![
        PeerSpec {
            name: "py-ringway",
            about:
                "ringway's asyncio event loop (ringway-py, release build), servers.py (S14 only)",
            http: HttpWork::CountsHeads,
            deviations: PY_DEVIATIONS,
            runs: Runs::Default,
            launch: |_, s| python::launch(s, PyLoop::Ringway),
        },
        PeerSpec {
            name: "py-asyncio",
            about: "stock asyncio (the selector loop), servers.py (S14 only): the control",
            http: HttpWork::CountsHeads,
            deviations: PY_DEVIATIONS,
            runs: Runs::Default,
            launch: |_, s| python::launch(s, PyLoop::Asyncio),
        },
        PeerSpec {
            name: "py-uvloop",
            about: "uvloop (libuv), servers.py (S14 only): the reference",
            http: HttpWork::CountsHeads,
            deviations: PY_DEVIATIONS,
            runs: Runs::Default,
            launch: |_, s| python::launch(s, PyLoop::Uvloop),
        },
        PeerSpec {
            name: "py-rloop",
            about: "rloop (Rust, mio), servers.py (S14 only), where it installs",
            http: HttpWork::CountsHeads,
            deviations: PY_DEVIATIONS,
            runs: Runs::Default,
            launch: |_, s| python::launch(s, PyLoop::Rloop),
        },
    ]
}

/// The registry's peers: the Python frameworks of S15 (uvicorn on each loop, aiohttp
/// on each loop, granian).
fn python_frameworks() -> Vec<PeerSpec> {
    macro_rules! framework {
        ($name:literal, $about:literal, $server:ident, $loop:literal) => {
            PeerSpec {
                name: $name,
                about: $about,
                http: HttpWork::Parses,
                deviations: &[],
                runs: Runs::Default,
                launch: |ctx, s| {
                    frameworks::launch(s, Server::$server, $loop, ctx.s15_modules.as_deref())
                },
            }
        };
    }
    vec![
        framework!(
            "uvicorn-ringway",
            "uvicorn (httptools) + the ASGI app on ringway's asyncio loop (S15)",
            Uvicorn,
            "ringway"
        ),
        framework!(
            "uvicorn-uvloop",
            "uvicorn (httptools) + the ASGI app on uvloop (S15)",
            Uvicorn,
            "uvloop"
        ),
        framework!(
            "uvicorn-rloop",
            "uvicorn (httptools) + the ASGI app on rloop (S15)",
            Uvicorn,
            "rloop"
        ),
        framework!(
            "uvicorn-asyncio",
            "uvicorn (httptools) + the ASGI app on stock asyncio (S15)",
            Uvicorn,
            "asyncio"
        ),
        framework!(
            "aiohttp-ringway",
            "aiohttp's server, the same two endpoints, on ringway's loop (S15)",
            Aiohttp,
            "ringway"
        ),
        framework!(
            "aiohttp-uvloop",
            "aiohttp's server on uvloop (S15)",
            Aiohttp,
            "uvloop"
        ),
        framework!(
            "aiohttp-rloop",
            "aiohttp's server on rloop (S15)",
            Aiohttp,
            "rloop"
        ),
        framework!(
            "aiohttp-asyncio",
            "aiohttp's server on stock asyncio (S15)",
            Aiohttp,
            "asyncio"
        ),
        framework!(
            "granian",
            "granian (Rust, tokio) serving the ASGI app, its default loop (S15)",
            Granian,
            "auto"
        ),
        framework!(
            "granian-uvloop",
            "granian serving the ASGI app on uvloop (S15)",
            Granian,
            "uvloop"
        ),
    ]
}

/// The Python HTTP server (servers.py) writes the canned head without `date`: the
/// two-write answer is the loop's work under test, the same for every Python loop.
const PY_DEVIATIONS: &[Deviation] = &[Deviation::MissingHeader("date")];

/// The peers named in `selection` (comma-separated, in registry order), or those that
/// the run takes by default (`full`: `--full`'s, see [`Runs`]). Unknown names are an
/// error that lists the known ones.
pub fn select(
    all: &[PeerSpec],
    selection: Option<&str>,
    full: bool,
) -> Result<Vec<PeerSpec>, String> {
    let Some(selection) = selection else {
        let taken = |p: &&PeerSpec| p.runs == Runs::Default || (full && p.runs == Runs::Full);
        return Ok(all.iter().filter(taken).cloned().collect());
    };
    let wanted: Vec<&str> = selection
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    for name in &wanted {
        if !all.iter().any(|p| p.name == *name) {
            let known: Vec<&str> = all.iter().map(|p| p.name).collect();
            return Err(format!(
                "unknown peer {name:?}; known: {}",
                known.join(", ")
            ));
        }
    }
    if wanted.is_empty() {
        return Err("--peers names no peer".into());
    }
    Ok(all
        .iter()
        .filter(|p| wanted.contains(&p.name))
        .cloned()
        .collect())
}

/// The suffix of the peers that run an earlier build's `ringway` (`--baseline`).
pub const BASELINE_SUFFIX: &str = "-baseline";

/// Adds the baseline twin of each selected ringway peer (`ringway-uring` brings
/// `ringway-uring-baseline`), in registry order, for `--baseline`.
pub fn add_baseline(all: &[PeerSpec], selected: &mut Vec<PeerSpec>) {
    let wanted: Vec<String> = selected
        .iter()
        .map(|p| format!("{}{BASELINE_SUFFIX}", p.name))
        .collect();
    let chosen: Vec<&str> = selected.iter().map(|p| p.name).collect();
    *selected = all
        .iter()
        .filter(|p| chosen.contains(&p.name) || wanted.iter().any(|w| w == p.name))
        .cloned()
        .collect();
}

/// `Some(ready)` override for peers whose readiness is not a `listening on` line.
pub fn port_ready(mut spec: LaunchSpec) -> LaunchSpec {
    spec.ready = Ready::PortOpen;
    spec
}

/// The directory of the running executable (where cargo puts every binary of a
/// profile, `ringway` and the peers alike).
pub fn exe_dir() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(exe.parent().map(Path::to_path_buf).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(bin_dir: &str) -> LaunchCtx {
        LaunchCtx {
            bin_dir: PathBuf::from(bin_dir),
            work_dir: PathBuf::from("/tmp/w"),
            server_cpus: "0".into(),
            server_threads: 1,
            static_dir: PathBuf::from("/tmp/w/static"),
            tls: None,
            max_connections: 1000,
            baseline_dir: None,
            s15_modules: None,
            server_prefix: Vec::new(),
        }
    }

    #[test]
    fn names_are_unique_and_selection_keeps_registry_order() {
        let all = registry();
        let mut names: Vec<&str> = all.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        let sel = select(&all, Some("floor, ringway-uring"), false).unwrap();
        let got: Vec<&str> = sel.iter().map(|p| p.name).collect();
        assert_eq!(got, ["ringway-uring", "floor"]);
        let err = select(&all, Some("tokyo"), false).unwrap_err();
        assert!(
            err.contains("unknown peer") && err.contains("tokio-raw"),
            "{err}"
        );
        assert!(select(&all, Some(" , "), false).is_err());
    }

    #[test]
    fn the_default_run_leaves_full_only_peers_to_full_and_by_name_peers_to_names() {
        let all = registry();
        let names = |full| -> Vec<&str> {
            select(&all, None, full)
                .unwrap()
                .iter()
                .map(|p| p.name)
                .collect()
        };
        let (short, full) = (names(false), names(true));
        for rival in [
            "ringway-uring",
            "monoio-coop",
            "may-minihttp",
            "tokio-raw",
            "floor",
        ] {
            assert!(short.contains(&rival), "{rival}");
        }
        for extra in ["glommio", "compio", "hyper-ringway"] {
            assert!(!short.contains(&extra) && full.contains(&extra), "{extra}");
        }
        for named in ["ringway-uring-baseline", "ringway-uring-noshare"] {
            assert!(!full.contains(&named), "{named}");
        }
        let by_name = select(&all, Some("glommio"), false).unwrap();
        assert_eq!(by_name[0].name, "glommio");
    }

    #[test]
    fn a_missing_binary_names_the_build_command() {
        let all = registry();
        let uring = all.iter().find(|p| p.name == "ringway-uring").unwrap();
        match (uring.launch)(&ctx("/nonexistent"), Service::Http(App::Hello)) {
            Launch::Unavailable(why) => {
                assert!(
                    why.contains("cargo build --release -p ringway-cli"),
                    "{why}"
                )
            }
            other => panic!("{other:?}"),
        }
        let hyper = all.iter().find(|p| p.name == "hyper").unwrap();
        assert!(matches!(
            (hyper.launch)(&ctx("/nonexistent"), Service::Echo),
            Launch::NotApplicable(_)
        ));
    }

    #[test]
    fn ringway_commands_carry_threads_backend_and_port() {
        let dir = std::env::temp_dir().join(format!("ringway-peers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ringway"), b"").unwrap();
        let c = ctx(dir.to_str().unwrap());
        let all = registry();
        let epoll = all.iter().find(|p| p.name == "ringway-epoll").unwrap();
        let Launch::Run(spec) = (epoll.launch)(&c, Service::Http(App::Hello)) else {
            panic!()
        };
        let line = spec.command(4242).join(" ");
        assert!(line.ends_with(
            "ringway serve --hello --no-access-log --threads 1 --backend epoll --bind 127.0.0.1:4242"
        ), "{line}");
        let Launch::Run(spec) = (epoll.launch)(&c, Service::Http(App::Body)) else {
            panic!()
        };
        assert!(spec.command(1).join(" ").contains("--static /tmp/w/static"));
        let noshare = all
            .iter()
            .find(|p| p.name == "ringway-uring-noshare")
            .unwrap();
        assert!(
            noshare.runs == Runs::ByName,
            "a measurement of the share, not a peer of every run"
        );
        let Launch::Run(spec) = (noshare.launch)(&c, Service::Http(App::Hello)) else {
            panic!()
        };
        let line = spec.command(4242).join(" ");
        assert!(
            line.ends_with("--backend uring --pool-share off --bind 127.0.0.1:4242"),
            "{line}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn baseline_peers_run_the_earlier_build_and_say_when_there_is_none() {
        let all = registry();
        let base = all
            .iter()
            .find(|p| p.name == "ringway-uring-baseline")
            .unwrap();
        assert_eq!(base.runs, Runs::ByName);
        match (base.launch)(&ctx("/nonexistent"), Service::Http(App::Hello)) {
            Launch::Unavailable(why) => assert!(why.contains("--baseline DIR"), "{why}"),
            other => panic!("{other:?}"),
        }
        let dir = std::env::temp_dir().join(format!("ringway-baseline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ringway"), b"").unwrap();
        let mut c = ctx("/current");
        c.baseline_dir = Some(dir.clone());
        let Launch::Run(spec) = (base.launch)(&c, Service::Echo) else {
            panic!()
        };
        let line = spec.command(4242).join(" ");
        assert!(
            line.starts_with(&dir.join("ringway").display().to_string())
                && line.ends_with("echo --threads 1 --backend uring --bind 127.0.0.1:4242"),
            "{line}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let mut sel = select(&all, Some("floor,ringway-uring,ringway-epoll"), false).unwrap();
        add_baseline(&all, &mut sel);
        let names: Vec<&str> = sel.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "ringway-uring",
                "ringway-epoll",
                "ringway-uring-baseline",
                "ringway-epoll-baseline",
                "floor"
            ]
        );
    }
}
