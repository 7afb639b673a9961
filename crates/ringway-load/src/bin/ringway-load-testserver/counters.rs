//! What the test server counts, and its final report.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Requests parsed.
pub static REQUESTS: AtomicU64 = AtomicU64::new(0);
/// Responses written completely.
pub static RESPONSES: AtomicU64 = AtomicU64::new(0);
/// Connections accepted.
pub static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// Prints the counts and ends the process.
pub fn report_and_exit() -> ! {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "requests={} responses={} connections={}",
        REQUESTS.load(Ordering::SeqCst),
        RESPONSES.load(Ordering::SeqCst),
        CONNECTIONS.load(Ordering::SeqCst)
    );
    let _ = out.flush();
    std::process::exit(0);
}
