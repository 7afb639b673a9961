//! CPU time of a process, read from `/proc/PID/stat`.
//!
//! The harness charges each server with the CPU it spent (user + system, all threads)
//! between the start and the end of the client's measured window. The kernel reports
//! these as fields 14 (`utime`) and 15 (`stime`) of `/proc/PID/stat`, in clock ticks.
//! Field 2 (`comm`) is the executable name in parentheses and may itself contain spaces
//! and parentheses, so the fields are counted from the *last* `)` on the line.
//!
//! On a VM the host can take a core away for a while; the guest kernel accounts that as
//! *steal* time in `/proc/stat`. The harness records the steal of the two cores it uses
//! during each measured window, so that a disturbed round can be told from a slow server.

use std::fs;
use std::io;

/// User and system CPU time of a process, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    /// Field 14 of `/proc/PID/stat`.
    pub utime: u64,
    /// Field 15 of `/proc/PID/stat`.
    pub stime: u64,
}

impl CpuTicks {
    /// User plus system ticks.
    pub fn total(&self) -> u64 {
        self.utime + self.stime
    }
}

/// Parses the contents of a `/proc/PID/stat` file.
///
/// Returns `None` if the line is not shaped like a stat line.
pub fn parse_stat(line: &str) -> Option<CpuTicks> {
    let close = line.rfind(')')?;
    // After the comm come field 3 (state), 4 (ppid), ... so field N is at index N - 3.
    let mut rest = line[close + 1..].split_ascii_whitespace();
    let utime = rest.nth(14 - 3)?.parse().ok()?;
    let stime = rest.next()?.parse().ok()?;
    Some(CpuTicks { utime, stime })
}

/// Reads the CPU ticks of process `pid` (zombies included: their stat stays readable
/// until they are reaped).
pub fn read_cpu_ticks(pid: u32) -> io::Result<CpuTicks> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unparsable /proc/{pid}/stat: {text:?}"),
        )
    })
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of [`CpuTicks`].
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions; it only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// Steal time (the 8th value, in clock ticks) of `cpuN` in the text of `/proc/stat`.
pub fn parse_cpu_steal(proc_stat: &str, cpu: usize) -> Option<u64> {
    let label = format!("cpu{cpu}");
    let line = proc_stat
        .lines()
        .find(|l| l.split_ascii_whitespace().next() == Some(label.as_str()))?;
    // cpuN user nice system idle iowait irq softirq steal ...
    line.split_ascii_whitespace().nth(8)?.parse().ok()
}

/// Steal ticks of `cpu` so far, from `/proc/stat`.
pub fn read_cpu_steal(cpu: usize) -> io::Result<u64> {
    let text = fs::read_to_string("/proc/stat")?;
    parse_cpu_steal(&text, cpu).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("no steal value for cpu{cpu} in /proc/stat"),
        )
    })
}

/// Busy time of `cpuN` in clock ticks in the text of `/proc/stat`: user, nice, system,
/// irq and softirq (guest time is inside user); idle, iowait and steal are not busy.
pub fn parse_cpu_busy(proc_stat: &str, cpu: usize) -> Option<u64> {
    let label = format!("cpu{cpu}");
    let line = proc_stat
        .lines()
        .find(|l| l.split_ascii_whitespace().next() == Some(label.as_str()))?;
    // cpuN user nice system idle iowait irq softirq steal ...
    let v: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .take(7)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    (v.len() == 7).then(|| v[0] + v[1] + v[2] + v[5] + v[6])
}

/// Busy ticks of `cpus` summed, from one read of `/proc/stat`.
pub fn read_cpus_busy(cpus: &[usize]) -> io::Result<u64> {
    let text = fs::read_to_string("/proc/stat")?;
    cpus.iter()
        .map(|&c| {
            parse_cpu_busy(&text, c).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("no busy times for cpu{c} in /proc/stat"),
                )
            })
        })
        .sum()
}

/// Parses the parent pid (field 4) of a `/proc/PID/stat` line.
pub fn parse_ppid(line: &str) -> Option<u32> {
    let close = line.rfind(')')?;
    line[close + 1..]
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `pid` and every process descending from it (nginx's workers, a Python server's
/// children), found by walking the parent links of `/proc/*/stat`.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(pp) = fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .as_deref()
                .and_then(parse_ppid)
            {
                parents.push((p, pp));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree
}

/// First field of a `schedstat` file: nanoseconds the task has run on a CPU.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// CPU time (user + system) of every thread of process `pid`, in nanoseconds, from
/// `/proc/PID/task/*/schedstat`: the scheduler's own runtime account, exact to the
/// nanosecond where `/proc/PID/stat` counts 10 ms ticks (too coarse for rounds of a
/// second). Threads that exited are not counted: servers keep theirs for a round.
pub fn read_cpu_ns(pid: u32) -> io::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(format!("/proc/{pid}/task"))? {
        let path = entry?.path().join("schedstat");
        // A thread may exit between the listing and the read.
        if let Ok(text) = fs::read_to_string(&path) {
            total += parse_schedstat(&text).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unparsable {}: {text:?}", path.display()),
                )
            })?;
        }
    }
    Ok(total)
}

/// [`read_cpu_ns`] summed over `pid`'s process tree.
pub fn read_tree_cpu_ns(pid: u32) -> io::Result<u64> {
    let mut total = read_cpu_ns(pid)?;
    for p in process_tree(pid).into_iter().skip(1) {
        total += read_cpu_ns(p).unwrap_or(0);
    }
    Ok(total)
}

/// Resident set size in KiB from the text of `/proc/PID/status`.
pub fn parse_vm_rss_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Resident set size of `pid`'s process tree, in KiB.
pub fn read_tree_rss_kib(pid: u32) -> io::Result<u64> {
    let mut total = 0;
    for (i, p) in process_tree(pid).into_iter().enumerate() {
        match fs::read_to_string(format!("/proc/{p}/status")) {
            Ok(text) => total += parse_vm_rss_kib(&text).unwrap_or(0),
            Err(e) if i == 0 => return Err(e),
            Err(_) => {}
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comm_with_spaces_and_parentheses() {
        // A real stat line layout; comm is "echo (x) y)" and the utime/stime are 1234/567.
        let line = "4242 (echo (x) y)) S 1 4242 4242 0 -1 4194560 1021 0 0 0 1234 567 \
                    0 0 20 0 1 0 12345 10000000 300 18446744073709551615 1 1 0 0 0 0 0 \
                    4096 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        let t = parse_stat(line).unwrap();
        assert_eq!(
            t,
            CpuTicks {
                utime: 1234,
                stime: 567
            }
        );
        assert_eq!(t.total(), 1801);
    }

    #[test]
    fn rejects_truncated_and_malformed_lines() {
        assert_eq!(parse_stat("12 (x) S 1 2 3"), None);
        assert_eq!(parse_stat("no parenthesis at all"), None);
        assert_eq!(
            parse_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 5 0 0 0"),
            None,
            "a non-numeric utime is an error, not zero"
        );
    }

    #[test]
    fn steal_of_a_given_cpu() {
        // Captured from this machine's /proc/stat (first lines).
        let text = "cpu  54728 0 16098 60440 14565 0 4389 759 0 0\n\
                    cpu0 26763 0 7938 31517 6754 0 2251 346 0 0\n\
                    cpu1 27965 0 8159 28923 7810 0 2137 412 0 0\n\
                    intr 1234 0 0\n";
        assert_eq!(parse_cpu_steal(text, 0), Some(346));
        assert_eq!(parse_cpu_steal(text, 1), Some(412));
        assert_eq!(parse_cpu_steal(text, 2), None);
        assert_eq!(parse_cpu_steal("cpu1 1 2 3\n", 1), None, "too few columns");
        assert!(read_cpu_steal(0).is_ok());
    }

    #[test]
    fn busy_of_a_given_cpu_leaves_out_idle_iowait_and_steal() {
        let text = "cpu  54728 0 16098 60440 14565 0 4389 759 0 0\n\
                    cpu0 26763 5 7938 31517 6754 7 2251 346 0 0\n\
                    cpu1 27965 0 8159 28923 7810 0 2137 412 0 0\n";
        assert_eq!(parse_cpu_busy(text, 0), Some(26763 + 5 + 7938 + 7 + 2251));
        assert_eq!(parse_cpu_busy(text, 1), Some(27965 + 8159 + 2137));
        assert_eq!(parse_cpu_busy(text, 2), None);
        assert_eq!(parse_cpu_busy("cpu0 1 2 3 4\n", 0), None, "too few columns");
        assert_eq!(parse_cpu_busy("cpu0 1 x 3 4 5 6 7 8\n", 0), None);
        let both = read_cpus_busy(&[0, 1]).unwrap();
        assert!(both >= read_cpus_busy(&[0]).unwrap());
        assert!(read_cpus_busy(&[100_000]).is_err());
    }

    #[test]
    fn tree_cpu_and_rss_of_a_parent_with_a_child() {
        assert_eq!(
            parse_ppid("4242 (a) b) S 17 4242 0"),
            Some(17),
            "comm with a parenthesis"
        );
        assert_eq!(
            parse_schedstat("360449940 213023833 113\n"),
            Some(360449940)
        );
        assert_eq!(
            parse_vm_rss_kib("Name:\tx\nVmRSS:\t  1234 kB\n"),
            Some(1234)
        );
        // A shell that burns CPU in a child: the tree sees the child, and its CPU.
        let mut parent = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 30' & wait",
            ])
            .spawn()
            .unwrap();
        let pid = parent.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process_tree(pid).len() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let tree = process_tree(pid);
        assert!(tree.len() >= 2, "{tree:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let own = read_cpu_ns(pid).unwrap();
        let all = read_tree_cpu_ns(pid).unwrap();
        assert!(all > own, "the child's CPU is counted: {all} vs {own}");
        assert!(read_tree_rss_kib(pid).unwrap() > read_tree_rss_kib(tree[1]).unwrap());
        for p in tree.iter().rev() {
            // SAFETY: kill takes no pointers; these are processes this test started.
            unsafe { libc::kill(*p as i32, libc::SIGKILL) };
        }
        let _ = parent.wait();
    }

    #[test]
    fn reads_own_process() {
        // Burn a little CPU so that the numbers are plausible, then check the real file.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let t = read_cpu_ticks(std::process::id()).unwrap();
        let again = read_cpu_ticks(std::process::id()).unwrap();
        assert!(again.total() >= t.total(), "CPU time never goes backwards");
        assert!(clock_ticks_per_second() >= 1);
    }
}
