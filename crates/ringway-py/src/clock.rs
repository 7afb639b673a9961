//! The loop's clock: `CLOCK_MONOTONIC` in seconds, the same clock and the same values as
//! Python's `time.monotonic()` (which `asyncio` uses), so deadlines computed by user code
//! with either agree.

/// Seconds on `CLOCK_MONOTONIC`.
pub fn monotonic() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The clock's resolution in seconds (`clock_getres`), what asyncio calls
/// `_clock_resolution`: timers due within it of now are run rather than waited for.
pub fn resolution() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_moves_forward_and_resolution_is_fine() {
        let a = super::monotonic();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::monotonic();
        assert!(b - a >= 0.002, "{a} {b}");
        assert!(super::resolution() > 0.0 && super::resolution() < 0.001);
    }
}
