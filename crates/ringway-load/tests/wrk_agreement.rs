//! Counting agrees with wrk: against a single-threaded server that is itself the
//! bottleneck (a poll(2) loop that burns 100 µs of CPU per request, answers each at
//! once and serves connections in fair rounds; pinned to CPU 0), req/s from `ringway
//! load` and from `wrk`, each with 10 connections, run at the same time for the same
//! 3 s on CPU 1, agree within 10%. Running them together (each gets half the server)
//! makes the comparison immune to the drift of a shared VM, which moved this server's
//! rate by 2-5x between consecutive runs.
//!
//! wrk is needed: scripts/test installs it on CI and names the package elsewhere; run
//! alone without wrk, the test fails with the same hint rather than pass unrun.

mod common;

use std::process::{Command, Stdio};

use common::{load, Server};

fn have_wrk() -> bool {
    Command::new("wrk").arg("--version").output().is_ok()
}

fn pin_this_thread(cpu: usize) {
    // SAFETY: cpu_set_t is plain data, read by the call only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Parses wrk's `Requests/sec:` line.
fn wrk_rps(out: &str) -> f64 {
    out.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk output:\n{out}"))
}

#[test]
fn req_per_sec_agrees_with_wrk() {
    // A check that did not run must not count as a pass: without wrk this fails.
    assert!(
        have_wrk(),
        "wrk is not installed: apt-get install wrk (scripts/test installs it on CI)"
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (server_cpu, client_cpu) = if cpus >= 2 { (Some(0), 1) } else { (None, 0) };
    let server = Server::start_on(
        server_cpu,
        &["--mode", "cl", "--poll-loop", "--work-us", "100"],
    );
    let url = server.url("/");
    // Both clients at once, 10 connections each, for the same 3 s: the server serves
    // every ready connection once per poll round, so each client gets half of it, and
    // the machine's drift (other work on a shared VM) hits both alike.
    let wrk_args = ["-t1", "-c10", "-d3s", url.as_str()];
    let mut wrk = if Command::new("taskset").arg("-V").output().is_ok() {
        let mut c = Command::new("taskset");
        c.args(["-c", &client_cpu.to_string(), "wrk"])
            .args(wrk_args);
        c
    } else {
        let mut c = Command::new("wrk");
        c.args(wrk_args);
        c
    };
    let wrk = wrk.stdout(Stdio::piped()).spawn().expect("run wrk");
    pin_this_thread(client_cpu);
    let (report, text) = load(&["-t", "1", "-c", "10", "-d", "3s", &url]);
    let out = wrk.wait_with_output().expect("wrk finishes");
    let wrk_out = String::from_utf8_lossy(&out.stdout).to_string();
    let counts = server.stop();
    let theirs = wrk_rps(&wrk_out);
    let ours = report.rps;
    let ratio = ours / theirs;
    eprintln!("wrk {theirs:.0} req/s, ringway load {ours:.0} req/s, ratio {ratio:.3}");
    assert_eq!(report.error_total(), 0, "{text}");
    assert!(counts.responses >= report.requests);
    assert!(
        (0.9..=1.1).contains(&ratio),
        "ringway load {ours:.0} req/s vs wrk {theirs:.0} req/s (ratio {ratio:.3})\n{text}\n{wrk_out}"
    );
}
