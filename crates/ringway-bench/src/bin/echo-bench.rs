//! The echo benchmark harness: runs every peer under the same load, one at a time,
//! pinned, interleaved round by round, and prints what each server costs per message.
//!
//! For each scenario and round, each peer in turn is started on core 0 (`taskset -c 0`)
//! on a fresh loopback port, and `echo-client` on core 1. The server's CPU time is read
//! from `/proc/PID/task/*/schedstat` (ns) when the client announces `measuring` (end of warm-up) and again
//! after the client has exited; divided by the messages the client counted, that is the
//! server's CPU per message, the number that separates servers when the client is the
//! bottleneck. A round is clean only if one side had its core: the client's CPU share
//! (its own CPU time over the window) or the server's reached 90%. When both fall short
//! the host starved the VM (the steal time of both cores, from `/proc/stat`, is recorded
//! too). Checking the client alone would brand every round of a server slower than the
//! client unclean, since the client then waits for it.
//!
//! `--syscalls` instead runs each peer once under `strace -c -f` (or, with
//! `--syscall-tool perf`, `perf stat` on the syscall tracepoints, which does not slow the
//! server down) and reports syscalls and `io_uring_enter` calls per message.
//!
//! Peers are the binaries next to this executable; a missing one is skipped with the
//! command that builds it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde::Serialize;

use ringway_bench::echo_bench::loads::{parse_scenarios, Scenario};
use ringway_bench::echo_bench::rounds::{render_scenario, RoundRecord};
use ringway_bench::echo_bench::servers::{self, Peer};
use ringway_bench::measure::launch::{self, LaunchSpec, RunningServer, KILL_GRACE, READY_TIMEOUT};
use ringway_bench::measure::perfstat::{counter, parse_perf_csv, SYSCALL_EVENTS};
use ringway_bench::measure::process::{send_signal, Event, Stream, WaitError, Watched};
use ringway_bench::measure::procstat::{clock_ticks_per_second, read_cpu_ns, read_cpu_steal};
use ringway_bench::measure::strace::parse_strace_summary;
use ringway_bench::measure::text_table::{fmt_rate, render};

/// Echo benchmark harness.
#[derive(Parser)]
struct Args {
    /// Peers to run, comma-separated (default: all). Known: ringway-uring, ringway-epoll,
    /// tokio, monoio, monoio-coop, floor, and any given with --peer.
    #[arg(long)]
    peers: Option<String>,
    /// Extra peer, `NAME=COMMAND` with `{port}` in the command (repeatable).
    #[arg(long = "peer")]
    extra_peers: Vec<String>,
    /// Scenarios, comma-separated `CONNSxSIZE` (k = KiB).
    #[arg(long, default_value = "50x64,10x1k")]
    scenarios: String,
    /// Measured seconds per round (in --syscalls mode: seconds under the tracer).
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Warm-up seconds before each measured window.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Rounds per scenario (peers interleaved within each round).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Core for the servers.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// Core for the client.
    #[arg(long, default_value_t = 1)]
    client_cpu: usize,
    /// Minimum CPU share of the client or the server for a round to count as clean.
    #[arg(long, default_value_t = 0.9)]
    clean_share: f64,
    /// Write every raw round (and the syscall counts) to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Count the servers' syscalls instead (50x64 load, one run per peer).
    #[arg(long)]
    syscalls: bool,
    /// Tool for --syscalls: strace (per-syscall table, but it slows every syscall and so
    /// inflates batching) or perf (tracepoint counts at full speed).
    #[arg(long, value_enum, default_value = "strace")]
    syscall_tool: SyscallTool,
}

/// How `--syscalls` counts.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SyscallTool {
    /// `strace -c -f -p PID`.
    Strace,
    /// `perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter -p PID`.
    Perf,
}

impl SyscallTool {
    fn name(self) -> &'static str {
        match self {
            SyscallTool::Strace => "strace",
            SyscallTool::Perf => "perf",
        }
    }
}

struct Env {
    bin_dir: PathBuf,
    client: PathBuf,
    hz: f64,
}

fn start_server(peer: &Peer, cpu: usize) -> Result<RunningServer, String> {
    launch::start(&LaunchSpec::new(peer.argv.clone()), Some(&cpu.to_string()))
}

/// What the client printed as its result.
#[derive(serde::Deserialize)]
struct ClientResult {
    messages: u64,
    duration_s: f64,
    msgs_per_s: f64,
    errors: u64,
    client_cpu_s: f64,
}

/// Runs the client against `port`; calls `on_measuring` when it announces its window.
/// Returns the result, the client's exit status and its stderr tail.
fn run_client(
    env: &Env,
    args: &Args,
    sc: Scenario,
    port: u16,
    warmup: f64,
    mut on_measuring: impl FnMut(),
) -> Result<(ClientResult, bool, String), String> {
    let argv: Vec<String> = vec![
        env.client.display().to_string(),
        "--addr".into(),
        format!("127.0.0.1:{port}"),
        "--conns".into(),
        sc.conns.to_string(),
        "--size".into(),
        sc.size.to_string(),
        "--duration".into(),
        args.duration.to_string(),
        "--warmup".into(),
        warmup.to_string(),
        "--json".into(),
    ];
    let mut client = Watched::spawn(Some(args.client_cpu), &argv)
        .map_err(|e| format!("cannot start echo-client: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs_f64(args.duration + warmup + 30.0);
    let mut result = None;
    loop {
        match client.next_event(deadline) {
            Ok(Event::Line(Stream::Stdout, line)) if line == "measuring" => on_measuring(),
            Ok(Event::Line(Stream::Stdout, line)) if line.starts_with('{') => {
                result = Some(
                    serde_json::from_str::<ClientResult>(&line)
                        .map_err(|e| format!("bad client output {line:?}: {e}"))?,
                );
            }
            Ok(_) => {}
            Err(WaitError::Closed) => break,
            Err(WaitError::Timeout) => {
                let _ = client.stop(KILL_GRACE);
                return Err("echo-client did not finish in time (killed)".into());
            }
        }
    }
    let status = client
        .wait_timeout(Duration::from_secs(10))
        .map_err(|e| format!("waiting for echo-client: {e}"))?;
    let success = status.map(|s| s.success()).unwrap_or(false);
    let tail = client.stderr_tail();
    let result = result.ok_or_else(|| format!("echo-client printed no result; stderr: {tail}"))?;
    Ok((result, success, tail))
}

fn failed(sc: Scenario, peer: &Peer, round: usize, why: String) -> RoundRecord {
    RoundRecord {
        scenario: sc.id(),
        conns: sc.conns,
        size: sc.size,
        peer: peer.name.clone(),
        round,
        ok: false,
        error: Some(why),
        messages: 0,
        duration_s: 0.0,
        msgs_per_s: 0.0,
        client_errors: 0,
        server_cpu_s: 0.0,
        server_cpu_us_per_msg: 0.0,
        client_cpu_share: 0.0,
        server_cpu_share: 0.0,
        steal_share: None,
        clean: false,
    }
}

/// What was read around a round's measured window.
struct Window {
    start: Instant,
    end: Instant,
    cpu_ns: u64,
    steal: (Option<u64>, Option<u64>),
}

/// The record of a round whose client finished and whose server stayed up.
/// `client` is the client's result, whether it exited well, and its stderr tail.
fn record_round(
    env: &Env,
    args: &Args,
    sc: Scenario,
    peer: &Peer,
    round: usize,
    client: (&ClientResult, bool, &str),
    w: Window,
) -> RoundRecord {
    let (res, client_ok, client_tail) = client;
    // The server is charged from the client's `measuring` line until the client is gone.
    let window = w.end.duration_since(w.start).as_secs_f64().max(1e-9);
    let server_cpu_s = w.cpu_ns as f64 / 1e9;
    let server_share = server_cpu_s / window;
    let steal_share = match w.steal {
        (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 / env.hz / window),
        _ => None,
    };
    let client_share = if res.duration_s > 0.0 {
        res.client_cpu_s / res.duration_s
    } else {
        0.0
    };
    let ok = client_ok && res.errors == 0 && res.messages > 0;
    let error = (!ok).then(|| {
        format!(
            "client reported {} errors (exit ok: {client_ok}); stderr: {client_tail}",
            res.errors
        )
    });
    RoundRecord {
        scenario: sc.id(),
        conns: sc.conns,
        size: sc.size,
        peer: peer.name.clone(),
        round,
        ok,
        error,
        messages: res.messages,
        duration_s: res.duration_s,
        msgs_per_s: res.msgs_per_s,
        client_errors: res.errors,
        server_cpu_s,
        server_cpu_us_per_msg: if res.messages > 0 {
            server_cpu_s * 1e6 / res.messages as f64
        } else {
            0.0
        },
        client_cpu_share: client_share,
        server_cpu_share: server_share,
        steal_share,
        // One side saturated its core: the host did not starve both.
        clean: ok && (client_share >= args.clean_share || server_share >= args.clean_share),
    }
}

fn run_round(env: &Env, args: &Args, sc: Scenario, peer: &Peer, round: usize) -> RoundRecord {
    let mut server = match start_server(peer, args.server_cpu) {
        Ok(s) => s,
        Err(why) => return failed(sc, peer, round, why),
    };
    let pid = server.proc.pid();
    let cores = [args.server_cpu, args.client_cpu];
    let steal = || -> Option<u64> { cores.iter().map(|&c| read_cpu_steal(c).ok()).sum() };
    let mut before = None;
    let client = run_client(env, args, sc, server.port, args.warmup, || {
        before = read_cpu_ns(pid).ok().map(|t| (t, Instant::now(), steal()));
    });
    let after = read_cpu_ns(pid);
    let (window_end, steal_end) = (Instant::now(), steal());
    let server_alive = matches!(server.proc.try_wait(), Ok(None));
    let server_tail = server.proc.stderr_tail();
    let _ = server.proc.stop(KILL_GRACE);

    let (res, client_ok, client_tail) = match client {
        Ok(c) => c,
        Err(why) => return failed(sc, peer, round, why),
    };
    if !server_alive {
        return failed(
            sc,
            peer,
            round,
            format!("server died during the round; stderr: {server_tail}"),
        );
    }
    let (Some((before, window_start, steal_start)), Ok(after)) = (before, after) else {
        return failed(
            sc,
            peer,
            round,
            "could not read the server's /proc stat".into(),
        );
    };
    let window = Window {
        start: window_start,
        end: window_end,
        cpu_ns: after.saturating_sub(before),
        steal: (steal_start, steal_end),
    };
    record_round(
        env,
        args,
        sc,
        peer,
        round,
        (&res, client_ok, &client_tail),
        window,
    )
}

/// Syscall counts of one peer under strace or perf.
#[derive(Serialize)]
struct SyscallRecord {
    peer: String,
    tool: &'static str,
    ok: bool,
    error: Option<String>,
    messages: u64,
    total_syscalls: u64,
    syscalls_per_msg: f64,
    io_uring_enter_per_msg: f64,
    /// (name, calls) for every syscall strace saw, most calls first (empty with perf).
    calls: Vec<(String, u64)>,
}

/// Starts `argv` (strace or perf) on the client core and waits until it is attached.
fn start_tracer(args: &Args, argv: &[String]) -> Result<Watched, String> {
    let mut tracer = Watched::spawn(Some(args.client_cpu), argv)
        .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
    match args.syscall_tool {
        SyscallTool::Strace => {
            let attached =
                tracer.wait_for_line(Stream::Stderr, |l| l.contains("attached"), READY_TIMEOUT);
            if let Err(e) = attached {
                let tail = tracer.stderr_tail();
                let _ = tracer.stop(KILL_GRACE);
                return Err(format!("strace did not attach ({e:?}); stderr: {tail}"));
            }
        }
        SyscallTool::Perf => {
            // perf prints nothing when it has attached; the server is idle until the
            // client connects, so giving it time to attach loses no syscall.
            std::thread::sleep(Duration::from_millis(500));
            if !matches!(tracer.try_wait(), Ok(None)) {
                while tracer
                    .next_event(Instant::now() + Duration::from_millis(200))
                    .is_ok()
                {}
                return Err(format!(
                    "perf exited at once; stderr: {}",
                    tracer.stderr_tail()
                ));
            }
        }
    }
    Ok(tracer)
}

/// Total syscalls, `io_uring_enter` calls, and (name, calls) per syscall (strace only).
type Counts = (u64, u64, Vec<(String, u64)>);

/// The [`Counts`] in the tracer's output.
fn read_counts(tool: SyscallTool, text: &str) -> Result<Counts, String> {
    match tool {
        SyscallTool::Strace => match parse_strace_summary(text) {
            Ok(table) => {
                let calls: Vec<(String, u64)> = table
                    .rows
                    .iter()
                    .map(|r| (r.name.clone(), r.calls))
                    .collect();
                Ok((table.total_calls, table.calls("io_uring_enter"), calls))
            }
            Err(e) => Err(format!("strace output: {e}")),
        },
        SyscallTool::Perf => {
            let counters = parse_perf_csv(text);
            let (Some(total), Some(enters)) = (
                counter(&counters, "raw_syscalls:sys_enter"),
                counter(&counters, "syscalls:sys_enter_io_uring_enter"),
            ) else {
                return Err(format!(
                    "perf could not count the syscall tracepoints: {text:?}"
                ));
            };
            Ok((total, enters, Vec::new()))
        }
    }
}

/// The command line of the tracer that counts `pid`'s syscalls into `out`.
fn tracer_argv(tool: SyscallTool, pid: &str, out: &Path) -> Vec<String> {
    let out_arg = out.display().to_string();
    let argv: Vec<String> = match tool {
        SyscallTool::Strace => vec!["strace", "-c", "-f", "-p", pid, "-o", &out_arg],
        SyscallTool::Perf => vec![
            "perf",
            "stat",
            "-x,",
            "-e",
            SYSCALL_EVENTS,
            "-p",
            pid,
            "-o",
            &out_arg,
        ],
    }
    .into_iter()
    .map(String::from)
    .collect();
    argv
}

fn run_syscalls(env: &Env, args: &Args, peer: &Peer) -> SyscallRecord {
    let fail = |why: String| SyscallRecord {
        peer: peer.name.clone(),
        tool: args.syscall_tool.name(),
        ok: false,
        error: Some(why),
        messages: 0,
        total_syscalls: 0,
        syscalls_per_msg: 0.0,
        io_uring_enter_per_msg: 0.0,
        calls: Vec::new(),
    };
    let mut server = match start_server(peer, args.server_cpu) {
        Ok(s) => s,
        Err(why) => return fail(why),
    };
    let pid = server.proc.pid().to_string();
    let out = std::env::temp_dir().join(format!(
        "echo-bench-{}-{}-{}.txt",
        args.syscall_tool.name(),
        std::process::id(),
        peer.name
    ));
    let argv = tracer_argv(args.syscall_tool, &pid, &out);
    let mut tracer = match start_tracer(args, &argv) {
        Ok(t) => t,
        Err(why) => return fail(why),
    };
    let sc = Scenario {
        conns: 50,
        size: 64,
    };
    let client = run_client(env, args, sc, server.port, 0.0, || {});
    // Detach the tracer (SIGINT makes it write its counts) before stopping the server.
    let _ = send_signal(tracer.pid(), libc::SIGINT);
    let tracer_status = tracer.wait_timeout(Duration::from_secs(20));
    let _ = server.proc.stop(KILL_GRACE);
    let text = fs::read_to_string(&out);
    let _ = fs::remove_file(&out);
    let (res, client_ok, tail) = match client {
        Ok(c) => c,
        Err(why) => return fail(why),
    };
    if !client_ok || res.errors > 0 {
        return fail(format!(
            "client reported {} errors; stderr: {tail}",
            res.errors
        ));
    }
    if !matches!(tracer_status, Ok(Some(_))) {
        let _ = tracer.stop(KILL_GRACE);
        return fail(format!("{} did not exit after SIGINT", argv[0]));
    }
    let text = match text {
        Ok(t) => t,
        Err(e) => return fail(format!("{} wrote no output: {e}", argv[0])),
    };
    let (total, enters, mut calls) = match read_counts(args.syscall_tool, &text) {
        Ok(c) => c,
        Err(why) => return fail(why),
    };
    calls.sort_by_key(|c| std::cmp::Reverse(c.1));
    let per = |n: u64| n as f64 / res.messages.max(1) as f64;
    SyscallRecord {
        peer: peer.name.clone(),
        tool: args.syscall_tool.name(),
        ok: true,
        error: None,
        messages: res.messages,
        total_syscalls: total,
        syscalls_per_msg: per(total),
        io_uring_enter_per_msg: per(enters),
        calls,
    }
}

#[derive(Serialize)]
struct Meta {
    kernel: String,
    cpus: usize,
    unix_time: u64,
    clock_ticks_per_s: f64,
    duration_s: f64,
    warmup_s: f64,
    rounds: usize,
    server_cpu: usize,
    client_cpu: usize,
    clean_share: f64,
}

#[derive(Serialize)]
struct Skipped {
    peer: String,
    reason: String,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    meta: Meta,
    skipped: &'a [Skipped],
    rounds: &'a [RoundRecord],
    syscalls: &'a [SyscallRecord],
}

fn print_flush(text: &str) {
    let mut out = std::io::stdout();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn main() {
    let args = Args::parse();
    if let Err(e) = real_main(&args) {
        eprintln!("echo-bench: {e}");
        std::process::exit(2);
    }
}

/// The peers whose programs exist, and the others with the command that builds them.
fn available(selected: Vec<Peer>) -> (Vec<Peer>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    let mut runnable = Vec::new();
    for p in selected {
        match p.check_available() {
            Ok(()) => runnable.push(p),
            Err(reason) => {
                println!("skipped {}: {reason}", p.name);
                skipped.push(Skipped {
                    peer: p.name.clone(),
                    reason,
                });
            }
        }
    }
    (runnable, skipped)
}

fn real_main(args: &Args) -> Result<(), String> {
    let bin_dir = servers::bin_dir().map_err(|e| format!("cannot locate own executable: {e}"))?;
    let env = Env {
        client: bin_dir.join("echo-client"),
        bin_dir,
        hz: clock_ticks_per_second() as f64,
    };
    if !env.client.is_file() {
        return Err(format!(
            "{} not found; build it first: cargo build --release -p ringway-bench",
            env.client.display()
        ));
    }
    let mut all = servers::default_peers(&env.bin_dir);
    for spec in &args.extra_peers {
        all.push(servers::parse_custom_peer(spec)?);
    }
    let selected = servers::select(&all, args.peers.as_deref())?;
    let scenarios = parse_scenarios(&args.scenarios)?;
    if args.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }

    let (runnable, skipped) = available(selected);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "kernel {kernel}, {cpus} CPUs; server on core {}, client on core {}; bin dir {}",
        args.server_cpu,
        args.client_cpu,
        env.bin_dir.display()
    );
    if cpus < 2 {
        println!("warning: fewer than 2 CPUs; server and client cannot have a core each");
    }

    let mut rounds: Vec<RoundRecord> = Vec::new();
    let mut syscalls: Vec<SyscallRecord> = Vec::new();
    if args.syscalls {
        run_syscall_mode(&env, args, &runnable, &mut syscalls);
    } else if !runnable.is_empty() {
        run_bench_mode(&env, args, &runnable, &scenarios, &mut rounds, &skipped);
    }

    if let Some(path) = &args.json {
        let report = JsonReport {
            meta: Meta {
                kernel,
                cpus,
                unix_time: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0),
                clock_ticks_per_s: env.hz,
                duration_s: args.duration,
                warmup_s: args.warmup,
                rounds: args.rounds,
                server_cpu: args.server_cpu,
                client_cpu: args.client_cpu,
                clean_share: args.clean_share,
            },
            skipped: &skipped,
            rounds: &rounds,
            syscalls: &syscalls,
        };
        write_json(path, &report)?;
        println!("raw results written to {}", path.display());
    }
    Ok(())
}

fn write_json(path: &Path, report: &JsonReport<'_>) -> Result<(), String> {
    let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
}

fn run_bench_mode(
    env: &Env,
    args: &Args,
    peers: &[Peer],
    scenarios: &[Scenario],
    rounds: &mut Vec<RoundRecord>,
    skipped: &[Skipped],
) {
    let names: Vec<String> = peers.iter().map(|p| p.name.clone()).collect();
    for &sc in scenarios {
        println!(
            "\n== {sc}: {} rounds x {}s (+{}s warm-up), peers interleaved: {}",
            args.rounds,
            args.duration,
            args.warmup,
            names.join(" ")
        );
        let first = rounds.len();
        for round in 1..=args.rounds {
            for peer in peers {
                let r = run_round(env, args, sc, peer, round);
                let line = if r.ok {
                    format!(
                        "  round {round} {:<14} {:>9} msgs/s  {:>6.2} µs/msg  CPU client {:>3.0}% server {:>3.0}%  steal {}{}\n",
                        peer.name,
                        fmt_rate(r.msgs_per_s),
                        r.server_cpu_us_per_msg,
                        r.client_cpu_share * 100.0,
                        r.server_cpu_share * 100.0,
                        r.steal_share
                            .map(|s| format!("{:.1}%", s * 100.0))
                            .unwrap_or_else(|| "?".into()),
                        if r.clean { "" } else { "  (unclean)" }
                    )
                } else {
                    format!(
                        "  round {round} {:<14} FAILED: {}\n",
                        peer.name,
                        r.error.as_deref().unwrap_or("?")
                    )
                };
                print_flush(&line);
                rounds.push(r);
            }
        }
        println!("\n{sc}:");
        print!("{}", render_scenario(&rounds[first..], &names));
        if rounds[first..].iter().any(|r| !r.clean && r.ok) {
            println!(
                "(* = no clean round; medians from unclean rounds. clean = client or server CPU >= {:.0}% of the window)",
                args.clean_share * 100.0
            );
        }
        for s in skipped {
            println!("skipped {}: {}", s.peer, s.reason);
        }
    }
}

fn run_syscall_mode(env: &Env, args: &Args, peers: &[Peer], out: &mut Vec<SyscallRecord>) {
    match args.syscall_tool {
        SyscallTool::Strace => println!(
            "\n== syscalls: 50 conns x 64 B for {}s per peer under strace -c -f\n   \
             (strace makes every syscall cost ~100x more: epoll servers slow down, io_uring \
             servers batch more per io_uring_enter than at full speed; --syscall-tool perf \
             counts without that distortion)",
            args.duration
        ),
        SyscallTool::Perf => println!(
            "\n== syscalls: 50 conns x 64 B for {}s per peer, counted by perf stat -e {SYSCALL_EVENTS}",
            args.duration
        ),
    }
    for peer in peers {
        let r = run_syscalls(env, args, peer);
        if let Some(e) = &r.error {
            println!("  {:<14} FAILED: {e}", peer.name);
        } else {
            println!("  {:<14} done: {} messages", peer.name, r.messages);
        }
        out.push(r);
    }
    let rows: Vec<Vec<String>> = out
        .iter()
        .filter(|r| r.ok)
        .map(|r| {
            let mut top: Vec<String> = r
                .calls
                .iter()
                .take(4)
                .map(|(name, n)| format!("{name} {:.2}", *n as f64 / r.messages.max(1) as f64))
                .collect();
            if top.is_empty() {
                top.push("(not broken down by perf)".into());
            }
            vec![
                r.peer.clone(),
                r.messages.to_string(),
                format!("{:.2}", r.syscalls_per_msg),
                format!("{:.2}", r.io_uring_enter_per_msg),
                top.join(", "),
            ]
        })
        .collect();
    println!();
    print!(
        "{}",
        render(
            &[
                "peer",
                "messages",
                "syscalls/msg",
                "io_uring_enter/msg",
                "top syscalls (per msg)"
            ],
            &rows
        )
    );
}
