//! Counting a server's syscalls over exactly one client run.
//!
//! `perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter -p PIDS` is
//! started with its counters disabled (`-D -1`) and a control FIFO (`--control`); the
//! harness enables them right before the client starts and disables them right after it
//! exits, each acknowledged by perf, so neither perf's attach time nor the idle time
//! around the run is counted, and no sleep stands in for a synchronisation. The
//! tracepoints do not slow the server the way strace does, but they are not free either,
//! so the count comes from a run of its own, never from a measured round.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::measure::perfstat::{counter, parse_perf_csv, SYSCALL_EVENTS};
use crate::measure::process::{send_signal, Watched};

/// Syscalls counted over one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyscallCount {
    /// Every syscall entry.
    pub total: u64,
    /// `io_uring_enter` entries.
    pub io_uring_enter: u64,
}

/// A perf process attached to a server, counters off until [`PerfCounter::enable`].
#[derive(Debug)]
pub struct PerfCounter {
    perf: Watched,
    ctl: File,
    ack: BufReader<File>,
    out: PathBuf,
    fifos: [PathBuf; 2],
}

fn mkfifo(path: &Path) -> Result<(), String> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("bad path {}", path.display()))?;
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(format!(
            "mkfifo {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// `true` if `perf` can be run.
pub fn perf_available() -> bool {
    std::process::Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl PerfCounter {
    /// Attaches to `pids` (a server's process tree), counters disabled. `dir` holds the
    /// FIFOs and the output; `tag` makes their names unique; `cpus` pins perf.
    pub fn attach(
        pids: &[u32],
        dir: &Path,
        tag: &str,
        cpus: Option<&str>,
    ) -> Result<PerfCounter, String> {
        let ctl_path = dir.join(format!("perf-{tag}.ctl"));
        let ack_path = dir.join(format!("perf-{tag}.ack"));
        let out = dir.join(format!("perf-{tag}.csv"));
        for p in [&ctl_path, &ack_path, &out] {
            let _ = std::fs::remove_file(p);
        }
        mkfifo(&ctl_path)?;
        mkfifo(&ack_path)?;
        // Read-write opens of a FIFO never block (Linux), so a perf that dies before
        // opening its end cannot hang the harness.
        let open = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(p)
                .map_err(|e| format!("open {}: {e}", p.display()))
        };
        let ctl = open(&ctl_path)?;
        let ack = BufReader::new(open(&ack_path)?);
        let pid_list = pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let argv: Vec<String> = [
            "perf",
            "stat",
            "-x,",
            "-e",
            SYSCALL_EVENTS,
            "-p",
            &pid_list,
            "-D",
            "-1",
            "--control",
            &format!("fifo:{},{}", ctl_path.display(), ack_path.display()),
            "-o",
            &out.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let perf = Watched::spawn_in(cpus, &argv, &[], None)
            .map_err(|e| format!("cannot start perf: {e}"))?;
        Ok(PerfCounter {
            perf,
            ctl,
            ack,
            out,
            fifos: [ctl_path, ack_path],
        })
    }

    fn command(&mut self, cmd: &str) -> Result<(), String> {
        writeln!(self.ctl, "{cmd}").map_err(|e| format!("perf control: {e}"))?;
        // perf answers `ack`; it may still be attaching, so wait for it, but not for
        // ever: a perf that exited (bad pid, no permission) never answers.
        let (tx, rx) = std::sync::mpsc::channel();
        let mut line = String::new();
        let ack = &mut self.ack;
        std::thread::scope(|s| {
            s.spawn(move || {
                let r = ack.read_line(&mut line).map(|_| line);
                let _ = tx.send(r);
            });
            match rx.recv_timeout(Duration::from_secs(10)) {
                // perf writes `ack\n` followed by a NUL byte, which the next read sees.
                Ok(Ok(l)) if l.trim_matches(|c: char| c == '\0' || c.is_whitespace()) == "ack" => {
                    Ok(())
                }
                Ok(Ok(l)) => Err(format!("perf answered {l:?} to {cmd}")),
                Ok(Err(e)) => Err(format!("perf ack: {e}")),
                Err(_) => {
                    // Unblock the reader thread: perf is gone or stuck.
                    let _ = self.perf.stop(Duration::from_secs(1));
                    let _ = OpenOptions::new()
                        .write(true)
                        .open(&self.fifos[1])
                        .and_then(|mut f| f.write_all(b"gone\n"));
                    Err(format!(
                        "perf did not acknowledge {cmd}: {}",
                        self.perf.stderr_tail()
                    ))
                }
            }
        })
    }

    /// Starts counting.
    pub fn enable(&mut self) -> Result<(), String> {
        self.command("enable")
    }

    /// Stops counting.
    pub fn disable(&mut self) -> Result<(), String> {
        self.command("disable")
    }

    /// Ends perf and returns what it counted while enabled.
    pub fn finish(mut self) -> Result<SyscallCount, String> {
        let _ = send_signal(self.perf.pid(), libc::SIGINT);
        let _ = self.perf.wait_timeout(Duration::from_secs(10));
        let _ = self.perf.stop(Duration::from_secs(1));
        let text =
            std::fs::read_to_string(&self.out).map_err(|e| format!("perf wrote no output: {e}"))?;
        for p in self.fifos.iter().chain([&self.out]) {
            let _ = std::fs::remove_file(p);
        }
        let counters = parse_perf_csv(&text);
        if !counters.iter().any(|c| c.event == "raw_syscalls:sys_enter") {
            return Err(format!("perf counted nothing: {text:?}"));
        }
        // `<not counted>` means the event never ran while enabled: no syscalls.
        Ok(SyscallCount {
            total: counter(&counters, "raw_syscalls:sys_enter").unwrap_or(0),
            io_uring_enter: counter(&counters, "syscalls:sys_enter_io_uring_enter").unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_syscalls_of_a_window_only() {
        if !perf_available() {
            // The suite reports a missing perf with its install line and leaves the
            // column out; scripts/test installs perf on CI, so this is a local gap only.
            panic!("perf is missing: apt-get install linux-perf");
        }
        // A shell that makes syscalls in a loop (each `read` of /dev/null is one).
        let mut busy = Watched::spawn(
            None,
            &["sh", "-c", "while :; do read x < /dev/null; done"].map(String::from),
        )
        .unwrap();
        let dir = std::env::temp_dir();
        let tag = format!("test-{}", std::process::id());
        let mut perf = PerfCounter::attach(&[busy.pid()], &dir, &tag, None).unwrap();
        perf.enable().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        perf.disable().unwrap();
        let count = perf.finish().unwrap();
        busy.stop(Duration::from_secs(2)).unwrap();
        assert!(count.total > 100, "{count:?}");
        assert_eq!(count.io_uring_enter, 0);
    }
}
