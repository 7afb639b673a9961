//! Parsing `perf stat -x,` output: syscall counts without strace's distortion.
//!
//! `strace -c` stops the server at every syscall, which makes each syscall cost hundreds
//! of microseconds; an io_uring server then batches far more completions per
//! `io_uring_enter` than it does at full speed, and its syscalls per message come out
//! several times too low. Counting the `raw_syscalls:sys_enter` and
//! `syscalls:sys_enter_io_uring_enter` tracepoints with `perf stat` does not slow the
//! server, so `--syscall-tool perf` reports what the server really does.
//!
//! With `-x,` each counter is one CSV line: `value,unit,event,run time,percentage,...`.
//! Comment lines start with `#`; an event that could not be counted has a value such as
//! `<not counted>` or `<not supported>`.

/// One counter from `perf stat -x,`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// Event name, as given with `-e`.
    pub event: String,
    /// Count, or `None` if perf could not count the event.
    pub value: Option<u64>,
}

/// The events passed to `perf stat -e` by the harness.
pub const SYSCALL_EVENTS: &str = "raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter";

/// Parses the CSV output of `perf stat -x, -o FILE`.
pub fn parse_perf_csv(text: &str) -> Vec<Counter> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut fields = l.split(',');
            let value = fields.next()?;
            let _unit = fields.next()?;
            let event = fields.next()?.trim();
            if event.is_empty() {
                return None;
            }
            Some(Counter {
                event: event.to_string(),
                value: value.trim().parse().ok(),
            })
        })
        .collect()
}

/// The count of `event`, if present and counted.
pub fn counter(counters: &[Counter], event: &str) -> Option<u64> {
    counters.iter().find(|c| c.event == event)?.value
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured on this machine: `perf stat -x, -e raw_syscalls:sys_enter,
    /// syscalls:sys_enter_io_uring_enter -p PID -o FILE` on echo-floor under 50 x 64 B.
    const FLOOR: &str = "# started on Sat Nov 21 03:42:06 2026

56164,,raw_syscalls:sys_enter,1972358056,100.00,,
56114,,syscalls:sys_enter_io_uring_enter,1972358056,100.00,,
";

    #[test]
    fn parses_real_output() {
        let c = parse_perf_csv(FLOOR);
        assert_eq!(c.len(), 2);
        assert_eq!(counter(&c, "raw_syscalls:sys_enter"), Some(56164));
        assert_eq!(
            counter(&c, "syscalls:sys_enter_io_uring_enter"),
            Some(56114)
        );
        assert_eq!(counter(&c, "cycles"), None);
    }

    #[test]
    fn uncounted_events_have_no_value() {
        let c = parse_perf_csv("<not supported>,,cycles,0,100.00,,\n\n# note\n12,,x,5,100.00,,\n");
        assert_eq!(
            c,
            [
                Counter {
                    event: "cycles".into(),
                    value: None
                },
                Counter {
                    event: "x".into(),
                    value: Some(12)
                },
            ]
        );
        assert!(parse_perf_csv("# only a comment\n").is_empty());
    }
}
