//! The access log: one common-log-format line per answered request, gathered per core
//! and written to standard output once per batch (not once per request).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{Method, Version};

use crate::date::format_clf;

thread_local! {
    static LINES: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Appends one line: `host - - [date] "METHOD target VERSION" status bytes`.
pub(crate) fn line(
    peer: Option<SocketAddr>,
    req: Option<(&Method, &str, Version)>,
    status: u16,
    bytes: u64,
) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    LINES.with(|l| {
        let mut l = l.borrow_mut();
        let host = peer.map_or_else(|| "-".to_string(), |p| p.ip().to_string());
        let _ = write!(l, "{host} - - [{}] ", format_clf(now));
        match req {
            Some((m, t, v)) => {
                let _ = write!(l, "\"{m} {t} {v:?}\"");
            }
            None => l.push_str("\"-\""),
        }
        let bytes = if bytes == 0 {
            "-".to_string()
        } else {
            bytes.to_string()
        };
        let _ = writeln!(l, " {status} {bytes}");
    });
}

/// Writes the gathered lines to standard output.
pub(crate) fn flush() {
    LINES.with(|l| {
        let mut l = l.borrow_mut();
        if !l.is_empty() {
            let _ = std::io::stdout().lock().write_all(l.as_bytes());
            l.clear();
        }
    });
}
