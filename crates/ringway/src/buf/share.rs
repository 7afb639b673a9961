//! How much of its core's pool one multishot receive may pin ([`PoolShare`]).

use std::fmt;
use std::io;
use std::str::FromStr;

use super::pool::POOL_SHARE_DIVISOR;

/// What one multishot receive may pin of its core's buffer pool with pieces its reader
/// has not taken, before the driver stops it (see [`BufferPool::share`]).
///
/// The default is an eighth ([`POOL_SHARE_DIVISOR`]): 16 of the default 128 buffers.
/// `Off` leaves only the driver's bound on waiting completions (16), as before the share
/// existed: it is there to measure what the share buys (`ringway serve --pool-share
/// off`), not to run with. Parsed from `off`, a fraction such as `1/8`, or a decimal
/// such as `0.125`.
///
/// ```
/// use ringway::buf::PoolShare;
/// assert_eq!("1/8".parse::<PoolShare>().unwrap(), PoolShare::default());
/// assert_eq!("0.25".parse::<PoolShare>().unwrap().buffers(64), 16);
/// assert_eq!("off".parse::<PoolShare>().unwrap().buffers(64), usize::MAX);
/// assert!("1/0".parse::<PoolShare>().is_err());
/// ```
///
/// [`BufferPool::share`]: super::BufferPool::share
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PoolShare {
    /// No bound of its own: only the driver's bound on waiting completions.
    Off,
    /// This fraction of the pool's buffers (more than 0, at most 1), rounded down; a
    /// pool too small for it to be one buffer is not shared out (like `Off`).
    Fraction(f64),
}

impl Default for PoolShare {
    fn default() -> Self {
        PoolShare::Fraction(1.0 / POOL_SHARE_DIVISOR as f64)
    }
}

impl PoolShare {
    /// The buffers one receive may pin in a pool of `count` buffers; `usize::MAX` when
    /// there is no share (`Off`, or a fraction of the pool smaller than one buffer).
    pub fn buffers(self, count: u16) -> usize {
        match self {
            PoolShare::Off => usize::MAX,
            PoolShare::Fraction(f) => match (count as f64 * f).floor() as usize {
                0 => usize::MAX,
                n => n,
            },
        }
    }
}

impl FromStr for PoolShare {
    type Err = io::Error;

    fn from_str(s: &str) -> io::Result<PoolShare> {
        let t = s.trim();
        let expected = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "expected `off`, a fraction of the pool such as 1/8, or a decimal \
                     above 0 and at most 1 such as 0.125, got {s:?}"
                ),
            )
        };
        if t.eq_ignore_ascii_case("off") {
            return Ok(PoolShare::Off);
        }
        let f = match t.split_once('/') {
            Some((n, d)) => {
                let n: u32 = n.trim().parse().map_err(|_| expected())?;
                let d: u32 = d.trim().parse().map_err(|_| expected())?;
                if d == 0 {
                    return Err(expected());
                }
                n as f64 / d as f64
            }
            None => t.parse::<f64>().map_err(|_| expected())?,
        };
        if !(f > 0.0 && f <= 1.0) {
            return Err(expected());
        }
        Ok(PoolShare::Fraction(f))
    }
}

impl fmt::Display for PoolShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolShare::Off => f.write_str("off"),
            PoolShare::Fraction(x) => write!(f, "{x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_off_fractions_and_decimals_and_refuses_the_rest() {
        assert_eq!("OFF".parse::<PoolShare>().unwrap(), PoolShare::Off);
        assert_eq!(" 1/8 ".parse::<PoolShare>().unwrap().buffers(64), 8);
        assert_eq!("1/1".parse::<PoolShare>().unwrap().buffers(64), 64);
        assert_eq!("0.125".parse::<PoolShare>().unwrap().buffers(64), 8);
        for bad in [
            "", "none", "0", "1.5", "-0.1", "1/0", "2/1", "a/8", "NaN", "1/8x",
        ] {
            let e = bad.parse::<PoolShare>().unwrap_err().to_string();
            assert!(e.contains("expected `off`"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_share_below_one_buffer_is_no_share() {
        let eighth = PoolShare::default();
        assert_eq!(eighth.buffers(64), 8);
        assert_eq!(eighth.buffers(8), 1);
        assert_eq!(eighth.buffers(4), usize::MAX, "an eighth of 4 buffers");
        assert_eq!(PoolShare::Off.buffers(1024), usize::MAX);
    }
}
