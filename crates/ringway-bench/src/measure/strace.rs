//! Parsing the summary table that `strace -c` writes.
//!
//! The `--syscalls` mode attaches `strace -c -f` to a server for a fixed load and divides
//! the syscall counts by the messages echoed. Only the table is read, so only its shape
//! matters here:
//!
//! ```text
//! % time     seconds  usecs/call     calls    errors syscall
//! ------ ----------- ----------- --------- --------- ----------------
//!  99.61    0.412417           4     95360           io_uring_enter
//! ...
//! ------ ----------- ----------- --------- --------- ----------------
//! 100.00    0.414025           4     95417         1 total
//! ```
//!
//! The `errors` column is blank for syscalls that never failed.

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallRow {
    /// Syscall name (`io_uring_enter`, `epoll_wait`, ...).
    pub name: String,
    /// Seconds spent in it, as strace measured (inflated by tracing itself).
    pub seconds: f64,
    /// Number of calls.
    pub calls: u64,
    /// Number of calls that returned an error.
    pub errors: u64,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallTable {
    /// Rows in strace's order (most time first), without the total.
    pub rows: Vec<SyscallRow>,
    /// Total number of calls (from the `total` row, or summed when it is absent).
    pub total_calls: u64,
    /// Total number of failed calls.
    pub total_errors: u64,
}

impl SyscallTable {
    /// Calls of the syscall `name` (0 if it does not appear).
    pub fn calls(&self, name: &str) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.name == name)
            .map(|r| r.calls)
            .sum()
    }
}

fn parse_row(line: &str) -> Option<SyscallRow> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    // percent, seconds, usecs/call, calls, [errors], name
    let (numbers, name) = match tokens.len() {
        5 | 6 => (&tokens[..tokens.len() - 1], tokens[tokens.len() - 1]),
        _ => return None,
    };
    numbers[0].parse::<f64>().ok()?;
    let seconds = numbers[1].parse().ok()?;
    numbers[2].parse::<u64>().ok()?;
    let calls = numbers[3].parse().ok()?;
    let errors = match numbers.get(4) {
        Some(e) => e.parse().ok()?,
        None => 0,
    };
    Some(SyscallRow {
        name: name.to_string(),
        seconds,
        calls,
        errors,
    })
}

/// Parses the text of an `strace -c -o FILE` output file.
pub fn parse_strace_summary(text: &str) -> Result<SyscallTable, String> {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.contains("calls") && l.contains("syscall"))
        .ok_or_else(|| "no strace -c header line found".to_string())?;
    let mut rows = Vec::new();
    let mut total = None;
    for line in lines {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('-') {
            continue;
        }
        let row = parse_row(trimmed).ok_or_else(|| format!("unparsable strace row {line:?}"))?;
        if row.name == "total" {
            total = Some(row);
        } else {
            rows.push(row);
        }
    }
    let (total_calls, total_errors) = match total {
        Some(t) => (t.calls, t.errors),
        None => (
            rows.iter().map(|r| r.calls).sum(),
            rows.iter().map(|r| r.errors).sum(),
        ),
    };
    Ok(SyscallTable {
        rows,
        total_calls,
        total_errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured with strace 6.1 attached (`-c -f -p`) to a shell script; the file ends
    /// without a newline, as strace writes it.
    const SMALL: &str = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
100.00    0.004733        2366         2         1 wait4
  0.00    0.000000           0         1           rt_sigaction
  0.00    0.000000           0         1           rt_sigprocmask
  0.00    0.000000           0         1           rt_sigreturn
------ ----------- ----------- --------- --------- ----------------
100.00    0.004733         946         5         1 total";

    /// Captured with strace 6.1 (`-c -f -p PID -o FILE`, detached by SIGINT) from
    /// echo-tokio under 50 connections x 64 B for one second.
    const TOKIO: &str = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 73.85    0.222051          20     11102           sendto
 24.71    0.074291           6     11103           recvfrom
  1.22    0.003664          15       232           epoll_wait
  0.10    0.000310           6        51         1 accept4
  0.06    0.000192           3        50           epoll_ctl
  0.05    0.000145           2        50           setsockopt
  0.01    0.000033           5         6           brk
------ ----------- ----------- --------- --------- ----------------
100.00    0.300686          13     22594         1 total\n";

    /// The same from echo-floor; io_uring_enter is almost all it calls.
    const FLOOR: &str = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 99.97    0.474033         277      1707           io_uring_enter
  0.03    0.000158           3        50           setsockopt
------ ----------- ----------- --------- --------- ----------------
100.00    0.474191         269      1757           total";

    #[test]
    fn parses_real_tokio_table() {
        let t = parse_strace_summary(TOKIO).unwrap();
        assert_eq!(t.total_calls, 22594);
        assert_eq!(t.total_errors, 1);
        assert_eq!(t.rows.len(), 7);
        assert_eq!(t.calls("sendto"), 11102);
        assert_eq!(t.calls("recvfrom"), 11103);
        assert_eq!(t.calls("epoll_wait"), 232);
        let accept = t.rows.iter().find(|r| r.name == "accept4").unwrap();
        assert_eq!((accept.calls, accept.errors), (51, 1));
        assert_eq!(t.rows.iter().map(|r| r.calls).sum::<u64>(), t.total_calls);
    }

    #[test]
    fn parses_real_floor_table() {
        let t = parse_strace_summary(FLOOR).unwrap();
        assert_eq!(t.total_calls, 1757);
        assert_eq!(t.calls("io_uring_enter"), 1707);
        assert_eq!(t.calls("setsockopt"), 50);
        assert_eq!(t.rows[0].seconds, 0.474033);
    }

    #[test]
    fn parses_small_real_table() {
        let t = parse_strace_summary(SMALL).unwrap();
        assert_eq!(t.total_calls, 5);
        assert_eq!(t.total_errors, 1);
        assert_eq!(t.rows.len(), 4);
        assert_eq!(
            t.rows[0],
            SyscallRow {
                name: "wait4".into(),
                seconds: 0.004733,
                calls: 2,
                errors: 1
            }
        );
        assert_eq!(t.calls("rt_sigaction"), 1);
        assert_eq!(t.rows[3].errors, 0, "blank errors column means zero");
        assert_eq!(t.calls("io_uring_enter"), 0);
    }

    #[test]
    fn sums_rows_when_total_missing_and_rejects_garbage() {
        let text = "% time     seconds  usecs/call     calls    errors syscall\n\
                    ------ ----------- ----------- --------- --------- ----------------\n\
                     60.00    0.000600           3       200        10 read\n\
                     40.00    0.000400           2       200           write\n";
        let t = parse_strace_summary(text).unwrap();
        assert_eq!((t.total_calls, t.total_errors), (400, 10));
        assert!(parse_strace_summary("").is_err());
        assert!(
            parse_strace_summary("% time seconds usecs/call calls errors syscall\nxx yy\n")
                .is_err()
        );
    }
}
