//! The `Date` header value and the access log's date, formatted once per second per
//! core. While a server runs, a ticker task on each core refreshes them at every
//! second boundary ([`tick`]), so a response reads them without reading a clock;
//! without a ticker (a lone encoder in a test) they are refreshed on use.

use std::cell::{Cell, RefCell};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The current second in both formats.
struct Dates {
    secs: u64,
    imf: [u8; 29],
    clf: [u8; 26],
}

thread_local! {
    static CACHE: RefCell<Dates> = const {
        RefCell::new(Dates { secs: u64::MAX, imf: [0; 29], clf: [0; 26] })
    };
    /// Tickers running on this core (one per server).
    static TICKERS: Cell<u32> = const { Cell::new(0) };
    /// Bumped whenever the dates change: what caches of formatted heads compare.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
}

/// Calls `f` with the current IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(crate) fn with_date<R>(f: impl FnOnce(&[u8; 29]) -> R) -> R {
    with_dates(|d| f(&d.imf))
}

/// Calls `f` with the current common-log-format date (`06/Nov/1994:08:49:37 +0000`).
pub(crate) fn with_log_date<R>(f: impl FnOnce(&[u8; 26]) -> R) -> R {
    with_dates(|d| f(&d.clf))
}

fn with_dates<R>(f: impl FnOnce(&Dates) -> R) -> R {
    let ticking = TICKERS.with(Cell::get) > 0;
    CACHE.with(|c| {
        if !ticking {
            refresh(&mut c.borrow_mut(), coarse_now());
        }
        f(&c.borrow())
    })
}

fn refresh(d: &mut Dates, now: u64) {
    if d.secs != now {
        d.imf = format_imf(now);
        d.clf = format_clf(now);
        d.secs = now;
        GENERATION.with(|g| g.set(g.get() + 1));
    }
}

/// A number that changes whenever the dates do: something formatted with
/// [`with_date`] is current while this has not changed.
#[inline]
pub(crate) fn generation() -> u64 {
    if TICKERS.with(Cell::get) == 0 {
        refresh_unticked();
    }
    GENERATION.with(Cell::get)
}

/// [`generation`] without a ticker (a lone encoder in a test): the dates are refreshed
/// on use.
#[cold]
#[inline(never)]
fn refresh_unticked() {
    CACHE.with(|c| refresh(&mut c.borrow_mut(), coarse_now()));
}

/// Keeps this core's dates current until dropped (the server runs it as a task per
/// core): one wake-up per second.
pub(crate) async fn tick() {
    struct Ticking;
    impl Drop for Ticking {
        fn drop(&mut self) {
            TICKERS.with(|t| t.set(t.get() - 1));
        }
    }
    TICKERS.with(|t| t.set(t.get() + 1));
    let _ticking = Ticking;
    loop {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        CACHE.with(|c| refresh(&mut c.borrow_mut(), now.as_secs()));
        let to_next = Duration::from_secs(1) - Duration::from_nanos(now.subsec_nanos().into());
        ringway::time::sleep(to_next).await;
    }
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
pub(crate) fn format_clf(secs: u64) -> [u8; 26] {
    let (y, mo, d, h, mi, s) = civil(secs);
    let mut out = *b"00/Jan/0000:00:00:00 +0000";
    two(&mut out[0..2], d);
    out[3..6].copy_from_slice(MONTHS[(mo - 1) as usize]);
    four(&mut out[7..11], y);
    two(&mut out[12..14], h);
    two(&mut out[15..17], mi);
    two(&mut out[18..20], s);
    out
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
        assert_eq!(&format_clf(784_111_777), b"06/Nov/1994:08:49:37 +0000");
    }
}
