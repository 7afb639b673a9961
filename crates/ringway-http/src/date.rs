//! The `Date` header value, formatted once per second per core (IMF-fixdate).

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

thread_local! {
    static CACHE: RefCell<(u64, [u8; 29])> = const { RefCell::new((u64::MAX, [0; 29])) };
}

/// Calls `f` with the current IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), reformatted
/// only when the second changes.
pub fn with_date<R>(f: impl FnOnce(&[u8; 29]) -> R) -> R {
    let now = coarse_now();
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != now {
            c.1 = format_imf(now);
            c.0 = now;
        }
        f(&c.1)
    })
}

/// Seconds since the epoch from the coarse real-time clock (a vDSO read of the last
/// tick, no time-stamp counter): a second's resolution is all a `Date` needs.
fn coarse_now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    if r == 0 && ts.tv_sec >= 0 {
        ts.tv_sec as u64
    } else {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
}

/// Formats seconds since the epoch as an IMF-fixdate.
pub fn format_imf(secs: u64) -> [u8; 29] {
    const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    let (y, mo, d, h, mi, s) = civil(secs);
    let wd = DAYS[((secs / 86_400) % 7) as usize];
    let mut out = [0u8; 29];
    out[..3].copy_from_slice(wd);
    out[3] = b',';
    out[4] = b' ';
    two(&mut out[5..7], d);
    out[7] = b' ';
    out[8..11].copy_from_slice(MONTHS[(mo - 1) as usize]);
    out[11] = b' ';
    four(&mut out[12..16], y);
    out[16] = b' ';
    two(&mut out[17..19], h);
    out[19] = b':';
    two(&mut out[20..22], mi);
    out[22] = b':';
    two(&mut out[23..25], s);
    out[25..29].copy_from_slice(b" GMT");
    out
}

/// Formats seconds since the epoch for the common log format: `21/Nov/2026:03:53:17 +0000`.
pub fn format_clf(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(secs);
    let m = std::str::from_utf8(MONTHS[(mo - 1) as usize]).unwrap_or("???");
    format!("{d:02}/{m}/{y:04}:{h:02}:{mi:02}:{s:02} +0000")
}

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

fn two(out: &mut [u8], v: u64) {
    out[0] = b'0' + (v / 10 % 10) as u8;
    out[1] = b'0' + (v % 10) as u8;
}

fn four(out: &mut [u8], v: u64) {
    two(&mut out[..2], v / 100);
    two(&mut out[2..], v % 100);
}

/// (year, month, day, hour, minute, second) of a Unix time, proleptic Gregorian, UTC.
fn civil(secs: u64) -> (u64, u64, u64, u64, u64, u64) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days-from-civil inverted (the era arithmetic of the proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y as u64,
        m as u64,
        d as u64,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(&format_imf(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&format_imf(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&format_imf(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(format_clf(784_111_777), "06/Nov/1994:08:49:37 +0000");
    }
}
