//! The one response every HTTP peer sends: what `ringway serve --hello` answers at
//! `/plaintext`, byte for byte, except the `Date` value.
//!
//! ```text
//! HTTP/1.1 200 OK\r\n
//! server: ringway\r\n
//! date: Sun, 06 Nov 1994 08:49:37 GMT\r\n
//! content-type: text/plain\r\n
//! content-length: 13\r\n
//! \r\n
//! Hello, World!
//! ```
//!
//! Header names are lower case because that is how `ringway serve` (through the `http`
//! crate) and hyper write them; the `Server` value is `ringway` because that is the one
//! value `ringway serve` sends (its server name is configurable in `ringway_http::Config`
//! but not on the command line), and every peer written here can send it. nginx cannot
//! (it always writes `Server: nginx`, capitalised names and `Connection: keep-alive`):
//! the peer registry declares that difference and the report prints it, see
//! [`crate::conformance`].
//!
//! The `Date` is refreshed once per second (IMF-fixdate, RFC 9110 §5.6.7), as a real
//! server does: formatting it per request would charge every peer a cost no production
//! server pays.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Status line of the response.
pub const STATUS_LINE: &str = "HTTP/1.1 200 OK";
/// Value of the `server` header.
pub const SERVER: &str = "ringway";
/// Value of the `content-type` header.
pub const CONTENT_TYPE: &str = "text/plain";
/// The body.
pub const BODY: &str = "Hello, World!";
/// The request path every HTTP scenario asks for.
pub const PATH: &str = "/plaintext";

/// Length of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub const DATE_LEN: usize = 29;

const HEAD_BEFORE_DATE: &str = "HTTP/1.1 200 OK\r\nserver: ringway\r\ndate: ";
const HEAD_AFTER_DATE: &str = "\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n\r\n";

/// Offset of the date value inside [`HelloResponse::as_bytes`].
pub const DATE_OFFSET: usize = HEAD_BEFORE_DATE.len();
/// Length of the whole response in bytes.
pub const RESPONSE_LEN: usize = DATE_OFFSET + DATE_LEN + HEAD_AFTER_DATE.len() + BODY.len();

/// The canned response with a `Date` refreshed at most once per second.
#[derive(Debug, Clone)]
pub struct HelloResponse {
    bytes: [u8; RESPONSE_LEN],
    second: u64,
}

impl Default for HelloResponse {
    fn default() -> Self {
        Self::new()
    }
}

impl HelloResponse {
    /// A response dated now.
    pub fn new() -> HelloResponse {
        let mut bytes = [0u8; RESPONSE_LEN];
        let mut at = 0;
        for part in [
            HEAD_BEFORE_DATE,
            "Thu, 01 Jan 1970 00:00:00 GMT",
            HEAD_AFTER_DATE,
            BODY,
        ] {
            bytes[at..at + part.len()].copy_from_slice(part.as_bytes());
            at += part.len();
        }
        let mut r = HelloResponse { bytes, second: 0 };
        r.set_date(coarse_now_secs());
        r
    }

    /// Re-dates the response if the second changed since the last call; `true` if it did.
    /// Cheap enough to call once per event-loop turn (a vDSO clock read).
    #[inline]
    pub fn refresh(&mut self) -> bool {
        let now = coarse_now_secs();
        if now == self.second {
            return false;
        }
        self.set_date(now);
        true
    }

    /// Dates the response at `secs` since the Unix epoch.
    pub fn set_date(&mut self, secs: u64) {
        let text = imf_date(secs);
        self.bytes[DATE_OFFSET..DATE_OFFSET + DATE_LEN].copy_from_slice(text.as_bytes());
        self.second = secs;
    }

    /// The response, ready to send.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Just the date value.
    pub fn date(&self) -> &str {
        std::str::from_utf8(&self.bytes[DATE_OFFSET..DATE_OFFSET + DATE_LEN])
            .expect("the date is ASCII")
    }
}

/// `secs` since the epoch as an IMF-fixdate.
pub fn imf_date(secs: u64) -> String {
    let text = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs));
    debug_assert_eq!(text.len(), DATE_LEN);
    text
}

/// Seconds since the epoch from the coarse real-time clock (the last tick, read through
/// the vDSO without a syscall): a second's resolution is all a `Date` needs.
pub fn coarse_now_secs() -> u64 {
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

/// A GET of [`PATH`] as the load client sends it, for peers' own tests.
pub fn request(host: &str) -> String {
    format!("GET {PATH} HTTP/1.1\r\nhost: {host}\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_is_laid_out_as_ringway_serve_sends_it() {
        let mut r = HelloResponse::new();
        r.set_date(784111777);
        assert_eq!(
            std::str::from_utf8(r.as_bytes()).unwrap(),
            "HTTP/1.1 200 OK\r\nserver: ringway\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             content-type: text/plain\r\ncontent-length: 13\r\n\r\nHello, World!"
        );
        assert_eq!(RESPONSE_LEN, r.as_bytes().len());
        assert_eq!(r.date(), "Sun, 06 Nov 1994 08:49:37 GMT");
    }

    #[test]
    fn refresh_redates_only_when_the_second_changes() {
        let mut r = HelloResponse::new();
        r.set_date(0);
        assert!(r.refresh(), "a response dated 1970 is stale");
        let dated = r.date().to_string();
        assert_ne!(dated, "Thu, 01 Jan 1970 00:00:00 GMT");
        // Within the same second nothing changes (retry across a second boundary).
        let again = r.refresh();
        assert!(!again || r.date() != dated);
    }
}
