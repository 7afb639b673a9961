//! What the test server counts, and its final report.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Requests parsed.
pub(crate) static REQUESTS: AtomicU64 = AtomicU64::new(0);
/// Responses written completely.
pub(crate) static RESPONSES: AtomicU64 = AtomicU64::new(0);
/// Connections accepted.
pub(crate) static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
/// With `--hold N`: the most requests held at once.
pub(crate) static HELD_MAX: AtomicU64 = AtomicU64::new(0);
/// With `--hold N`: requests released by the hold timeout instead of the barrier.
pub(crate) static HOLD_TIMEOUTS: AtomicU64 = AtomicU64::new(0);

/// Prints the counts and ends the process.
pub(crate) fn report_and_exit() -> ! {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "requests={} responses={} connections={} held_max={} hold_timeouts={}",
        REQUESTS.load(Ordering::SeqCst),
        RESPONSES.load(Ordering::SeqCst),
        CONNECTIONS.load(Ordering::SeqCst),
        HELD_MAX.load(Ordering::SeqCst),
        HOLD_TIMEOUTS.load(Ordering::SeqCst)
    );
    let _ = out.flush();
    std::process::exit(0);
}
