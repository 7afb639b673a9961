//! Host stalls, seen from inside the VM: a sleeper thread per watched CPU that sleeps a
//! fixed short period and records how late it wakes.
//!
//! On a shared VM the host takes a vCPU away for milliseconds to tens of milliseconds;
//! every process on it stops, the C floor as much as ringway, and a latency tail
//! measured across such a stall is the host's, not the server's. A sleeper that asks to
//! wake every [`PERIOD`] sees the stall as a late wake-up. It runs under `SCHED_FIFO`
//! where allowed (root here), so nothing of the guest's own (the client or the server
//! saturating the core) can delay it: its lateness is the host's. Without that
//! privilege it runs as a normal thread and only a lateness past
//! [`THRESHOLD_UNPRIVILEGED`] counts, since the guest's scheduler alone can delay a
//! normal thread by a few milliseconds on a saturated core.
//!
//! The sleeper's own work is cheap: one wake-up per period per CPU, a clock read and a
//! sleep. But the kernel runs interrupt work in whatever task is current, and on a
//! server's core that is often the sleeper: the IPIs whose softirq frees the socket
//! buffers the server's sends allocated, once the client has read them
//! (`skb_defer_free_flush`). How much lands there depends on the server's batching: at
//! 1,000 connections 0.04-0.12 s per second behind ringway or the floor and up to 0.48
//! behind monoio (`docs/measurements.md`, 2026-11-29). That is the server's work, so a
//! round charges the sleepers' CPU on the server's cores to the server
//! ([`StallWatch::cpu_ns_on`]); left out, it would make the peers whose batches put
//! more of it there look cheaper, and their rounds contended.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a sleeper asks to wake.
pub const PERIOD: Duration = Duration::from_millis(1);
/// Lateness that counts as a stall for a `SCHED_FIFO` sleeper.
pub const THRESHOLD_FIFO: Duration = Duration::from_millis(2);
/// Lateness that counts as a stall for a normal sleeper.
pub const THRESHOLD_UNPRIVILEGED: Duration = Duration::from_millis(8);

/// One late wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// The CPU the sleeper ran on.
    pub cpu: usize,
    /// When it should have woken (the stall ends `late` after it).
    pub at: Instant,
    /// How late it woke.
    pub late: Duration,
}

/// Sleepers on some CPUs, recording their stalls until dropped.
#[derive(Debug)]
pub struct StallWatch {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Each sleeper's CPU and thread id.
    sleepers: Vec<(usize, libc::pid_t)>,
    stalls: Arc<Mutex<Vec<Stall>>>,
    /// Every sleeper runs under `SCHED_FIFO`.
    pub fifo: bool,
    /// The lateness that counts as a stall.
    pub threshold: Duration,
}

/// Pins the calling thread to `cpu` and, if allowed, gives it `SCHED_FIFO`; `true`
/// when it got `SCHED_FIFO`.
fn pin_and_raise(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it (the CPU number
    // is checked against its capacity); sched_setaffinity(0) and sched_setscheduler(0)
    // act on the calling thread and read only the structures passed.
    unsafe {
        if cpu < libc::CPU_SETSIZE as usize {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        // Timer slack of 1 ns: the wake-ups are not batched with others.
        libc::prctl(libc::PR_SET_TIMERSLACK, 1usize, 0usize, 0usize, 0usize);
        let param = libc::sched_param { sched_priority: 1 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    }
}

impl StallWatch {
    /// Starts a sleeper on each of `cpus`.
    pub fn start(cpus: &[usize]) -> StallWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let stalls = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let threads = cpus
            .iter()
            .map(|&cpu| {
                let (stop, stalls, tx) = (Arc::clone(&stop), Arc::clone(&stalls), tx.clone());
                std::thread::spawn(move || {
                    let fifo = pin_and_raise(cpu);
                    // SAFETY: gettid takes no arguments and cannot fail.
                    let tid = unsafe { libc::gettid() };
                    let _ = tx.send((cpu, tid, fifo));
                    let threshold = if fifo {
                        THRESHOLD_FIFO
                    } else {
                        THRESHOLD_UNPRIVILEGED
                    };
                    sleep_loop(cpu, threshold, &stop, &stalls);
                })
            })
            .collect::<Vec<_>>();
        drop(tx);
        let started: Vec<(usize, libc::pid_t, bool)> = rx.iter().take(threads.len()).collect();
        let fifo = started.iter().all(|s| s.2) && !threads.is_empty();
        StallWatch {
            stop,
            threads,
            sleepers: started.iter().map(|s| (s.0, s.1)).collect(),
            stalls,
            fifo,
            threshold: if fifo {
                THRESHOLD_FIFO
            } else {
                THRESHOLD_UNPRIVILEGED
            },
        }
    }

    /// CPU time, in nanoseconds, that the sleepers on `cpus` have run so far
    /// (`/proc/self/task/TID/schedstat`): their own work and the interrupt work the
    /// kernel did while they were current (see the module doc).
    pub fn cpu_ns_on(&self, cpus: &[usize]) -> u64 {
        self.sleepers
            .iter()
            .filter(|(cpu, _)| cpus.contains(cpu))
            .filter_map(|(_, tid)| {
                let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"));
                crate::measure::procstat::parse_schedstat(&text.ok()?)
            })
            .sum()
    }

    /// The stalls that began between `start` and `end` (or began before and were still
    /// going at `start`).
    pub fn between(&self, start: Instant, end: Instant) -> Vec<Stall> {
        let stalls = self.stalls.lock().unwrap_or_else(|e| e.into_inner());
        stalls
            .iter()
            .filter(|s| s.at < end && s.at + s.late > start)
            .copied()
            .collect()
    }
}

/// The sleeper: wakes every [`PERIOD`], records lateness past `threshold`.
fn sleep_loop(cpu: usize, threshold: Duration, stop: &AtomicBool, stalls: &Mutex<Vec<Stall>>) {
    let mut due = Instant::now() + PERIOD;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let woke = Instant::now();
        let late = woke.saturating_duration_since(due);
        if late >= threshold {
            let mut s = stalls.lock().unwrap_or_else(|e| e.into_inner());
            s.push(Stall { cpu, at: due, late });
        }
        due = woke + PERIOD;
    }
}

impl Drop for StallWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// What a window's stalls add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowStalls {
    /// The longest stall, milliseconds (0 without one).
    pub max_ms: f64,
    /// How many.
    pub count: usize,
}

/// Sums `stalls`.
pub fn summarize(stalls: &[Stall]) -> WindowStalls {
    WindowStalls {
        max_ms: stalls
            .iter()
            .map(|s| s.late.as_secs_f64() * 1e3)
            .fold(0.0, f64::max),
        count: stalls.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU this test may run on: the first of its affinity mask.
    fn first_allowed_cpu() -> usize {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity writes only into it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above, `set` is a valid out pointer of the size passed.
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        // SAFETY: CPU_ISSET reads inside `set`.
        (0..64)
            .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .unwrap_or(0)
    }

    /// A sleeper's CPU time is read from its own thread, counted only for its CPU, and
    /// grows as it wakes (some 100 wake-ups here: a count of runs, not a speed).
    #[test]
    fn the_sleepers_cpu_time_is_read_per_cpu() {
        let cpu = first_allowed_cpu();
        let watch = StallWatch::start(&[cpu]);
        let first = watch.cpu_ns_on(&[cpu]);
        std::thread::sleep(Duration::from_millis(100));
        let later = watch.cpu_ns_on(&[cpu]);
        assert!(
            later > first,
            "{first} then {later}: the sleeper ran in between"
        );
        assert_eq!(watch.cpu_ns_on(&[cpu + 1]), 0, "no sleeper on another CPU");
        assert_eq!(watch.cpu_ns_on(&[]), 0);
    }

    /// A stall injected for real: the whole test process (the sleeper with it) is
    /// stopped by SIGSTOP for 80 ms from a child shell, then continued, as a host stops
    /// a vCPU. The sleeper must see it, at about its length, inside the window.
    #[test]
    fn a_process_stopped_for_80_ms_is_seen_as_a_stall() {
        let cpu = first_allowed_cpu();
        let watch = StallWatch::start(&[cpu]);
        std::thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        let quiet = watch.between(start - Duration::from_millis(40), start);
        let pid = std::process::id();
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("kill -STOP {pid}; sleep 0.08; kill -CONT {pid}"),
            ])
            .status()
            .unwrap();
        assert!(status.success());
        std::thread::sleep(Duration::from_millis(20));
        let end = Instant::now();
        let seen = watch.between(start, end);
        let w = summarize(&seen);
        assert!(
            w.max_ms >= 60.0 && w.max_ms < 2000.0,
            "stall of {} ms seen (fifo {}); quiet window before: {quiet:?}",
            w.max_ms,
            watch.fifo
        );
        assert!(w.count >= 1);
        assert!(
            watch
                .between(end + Duration::from_secs(1), end + Duration::from_secs(2))
                .is_empty(),
            "nothing in a window after the stall"
        );
    }
}
