//! The load shapes the harness runs: N connections each ping-ponging SIZE-byte messages.
//!
//! Written on the command line as `CONNSxSIZE` (`50x64`, `10x1k`; `k` means KiB), so that
//! a run can be narrowed or widened without recompiling.

use std::fmt;

/// One load shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Concurrent connections.
    pub conns: usize,
    /// Message size in bytes.
    pub size: usize,
}

impl Scenario {
    /// Compact id, as accepted by [`parse_scenarios`]: `50x64`, `10x1024`.
    pub fn id(&self) -> String {
        format!("{}x{}", self.conns, self.size)
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.size >= 1024 && self.size % 1024 == 0 {
            write!(f, "{} conns x {} KiB", self.conns, self.size / 1024)
        } else {
            write!(f, "{} conns x {} B", self.conns, self.size)
        }
    }
}

fn parse_size(s: &str) -> Option<usize> {
    let (digits, mult) = match s.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1024),
        None => (s, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(mult)
}

/// Parses a comma-separated list of `CONNSxSIZE`.
pub fn parse_scenarios(list: &str) -> Result<Vec<Scenario>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (conns, size) = item
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("scenario {item:?} is not CONNSxSIZE"))?;
        let conns: usize = conns
            .parse()
            .map_err(|_| format!("bad connection count in {item:?}"))?;
        let size = parse_size(size).ok_or_else(|| format!("bad size in {item:?}"))?;
        if conns == 0 || size == 0 {
            return Err(format!("scenario {item:?} must have positive counts"));
        }
        out.push(Scenario { conns, size });
    }
    if out.is_empty() {
        return Err("no scenario given".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_suffixes() {
        let s = parse_scenarios("50x64, 10x1k,1X16K").unwrap();
        assert_eq!(
            s,
            [
                Scenario {
                    conns: 50,
                    size: 64
                },
                Scenario {
                    conns: 10,
                    size: 1024
                },
                Scenario {
                    conns: 1,
                    size: 16384
                },
            ]
        );
        assert_eq!(s[0].to_string(), "50 conns x 64 B");
        assert_eq!(s[1].to_string(), "10 conns x 1 KiB");
        assert_eq!(s[1].id(), "10x1024");
    }

    #[test]
    fn rejects_bad_input() {
        for bad in ["", "50", "0x64", "50x0", "ax64", "50xk", "50x64q"] {
            assert!(parse_scenarios(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
