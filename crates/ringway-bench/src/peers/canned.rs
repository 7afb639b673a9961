//! The responses every HTTP peer sends, byte for byte what `ringway serve` sends except
//! the `Date` value: [`App::Hello`] is `ringway serve --hello` at `/plaintext`,
//! [`App::Body`] is `ringway serve --static DIR` for the 11,587-byte file of the nuclei
//! scenario (S4), which the harness writes with a fixed modification time so that its
//! `ETag` and `Last-Modified` are known in advance.
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
//! value `ringway serve` sends (its name is configurable in `ringway_http::Config`, not
//! on the command line), and every peer written here can send it. nginx and
//! may-minihttp cannot (fixed `Server` values, capitalised names, ...): the peer
//! registry declares what differs and the report prints it, see
//! [`crate::suite::run::conformance`].
//!
//! The `Date` is refreshed at most once per second (IMF-fixdate, RFC 9110 §5.6.7), as a
//! real server does: formatting it per request would charge every peer a cost no
//! production server pays.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Value of the `server` header.
pub const SERVER: &str = "ringway";
/// The hello body.
pub const HELLO_BODY: &str = "Hello, World!";
/// The request path of the hello scenarios.
pub const HELLO_PATH: &str = "/plaintext";
/// Size of the nuclei scenario's body.
pub const BODY_LEN: usize = 11_587;
/// File name (and request path, under `/`) of the nuclei scenario's body.
pub const BODY_FILE: &str = "body.txt";
/// Modification time the harness gives the body file (2026-01-01T00:00:00Z).
pub const BODY_MTIME_SECS: u64 = 1_767_225_600;

/// Length of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub const DATE_LEN: usize = 29;

/// Which canned response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum App {
    /// `Hello, World!` as `text/plain`.
    Hello,
    /// The 11,587-byte static file.
    Body,
}

impl App {
    /// Parses `hello` or `body`.
    pub fn parse(s: &str) -> Result<App, String> {
        match s {
            "hello" => Ok(App::Hello),
            "body" => Ok(App::Body),
            other => Err(format!("unknown app {other:?} (hello or body)")),
        }
    }

    /// The path a client asks for.
    pub fn path(self) -> String {
        match self {
            App::Hello => HELLO_PATH.to_string(),
            App::Body => format!("/{BODY_FILE}"),
        }
    }

    /// The response body.
    pub fn body(self) -> Vec<u8> {
        match self {
            App::Hello => HELLO_BODY.as_bytes().to_vec(),
            App::Body => body_bytes(),
        }
    }

    /// Header lines (name, value) after `date`, in the order `ringway serve` writes
    /// them, `content-length` included.
    pub fn headers(self) -> Vec<(&'static str, String)> {
        match self {
            App::Hello => vec![
                ("content-type", "text/plain".to_string()),
                ("content-length", HELLO_BODY.len().to_string()),
            ],
            App::Body => vec![
                ("etag", body_etag()),
                ("last-modified", imf_date(BODY_MTIME_SECS)),
                ("accept-ranges", "bytes".to_string()),
                ("content-type", "text/plain; charset=utf-8".to_string()),
                ("content-length", BODY_LEN.to_string()),
            ],
        }
    }
}

/// The nuclei body: printable lines, deterministic, exactly [`BODY_LEN`] bytes.
pub fn body_bytes() -> Vec<u8> {
    let line = b"ringway benchmark body: the nuclei scenario serves 11,587 bytes.\n";
    line.iter().copied().cycle().take(BODY_LEN).collect()
}

/// The `ETag` `ringway serve --static` computes for the body file (length and
/// modification time in nanoseconds, in hex).
pub fn body_etag() -> String {
    format!(
        "\"{:x}-{:x}\"",
        BODY_LEN,
        u128::from(BODY_MTIME_SECS) * 1_000_000_000
    )
}

/// A canned response with a `Date` refreshed at most once per second.
#[derive(Debug, Clone)]
pub struct Canned {
    bytes: Vec<u8>,
    date_at: usize,
    second: u64,
}

impl Canned {
    /// The response of `app`, dated now.
    pub fn new(app: App) -> Canned {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"HTTP/1.1 200 OK\r\nserver: ");
        bytes.extend_from_slice(SERVER.as_bytes());
        bytes.extend_from_slice(b"\r\ndate: ");
        let date_at = bytes.len();
        bytes.extend_from_slice(imf_date(0).as_bytes());
        bytes.extend_from_slice(b"\r\n");
        for (name, value) in app.headers() {
            bytes.extend_from_slice(name.as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(value.as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"\r\n");
        bytes.extend_from_slice(&app.body());
        let mut c = Canned {
            bytes,
            date_at,
            second: 0,
        };
        c.set_date(coarse_now_secs());
        c
    }

    /// Re-dates the response if the second changed since the last call; `true` if it
    /// did. Cheap enough to call once per event-loop turn or per receive (a vDSO read).
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
        self.bytes[self.date_at..self.date_at + DATE_LEN].copy_from_slice(text.as_bytes());
        self.second = secs;
    }

    /// The response, ready to send.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Offset of the date value in [`Canned::as_bytes`].
    pub fn date_offset(&self) -> usize {
        self.date_at
    }

    /// Just the date value.
    pub fn date(&self) -> &str {
        std::str::from_utf8(&self.bytes[self.date_at..self.date_at + DATE_LEN])
            .expect("the date is ASCII")
    }

    /// Appends `n` copies of the response to `out` (what a raw loop answers to `n`
    /// request heads).
    #[inline]
    pub fn append(&self, n: u32, out: &mut Vec<u8>) {
        for _ in 0..n {
            out.extend_from_slice(&self.bytes);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_is_laid_out_as_ringway_serve_sends_it() {
        let mut r = Canned::new(App::Hello);
        r.set_date(784111777);
        assert_eq!(
            std::str::from_utf8(r.as_bytes()).unwrap(),
            "HTTP/1.1 200 OK\r\nserver: ringway\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             content-type: text/plain\r\ncontent-length: 13\r\n\r\nHello, World!"
        );
        assert_eq!(r.as_bytes().len(), 132);
        assert_eq!(r.date(), "Sun, 06 Nov 1994 08:49:37 GMT");
        let mut two = Vec::new();
        r.append(2, &mut two);
        assert_eq!(two, [r.as_bytes(), r.as_bytes()].concat());
    }

    #[test]
    fn body_has_the_static_file_headers() {
        let r = Canned::new(App::Body);
        let text = String::from_utf8(r.as_bytes().to_vec()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(body.len(), BODY_LEN);
        assert_eq!(body.as_bytes(), &body_bytes()[..]);
        let names: Vec<&str> = head
            .lines()
            .skip(1)
            .map(|l| l.split_once(": ").unwrap().0)
            .collect();
        assert_eq!(
            names,
            [
                "server",
                "date",
                "etag",
                "last-modified",
                "accept-ranges",
                "content-type",
                "content-length"
            ]
        );
        assert!(head.contains("last-modified: Thu, 01 Jan 2026 00:00:00 GMT"));
        assert!(head.contains("etag: \"2d43-"));
        assert_eq!(App::Body.path(), "/body.txt");
    }

    #[test]
    fn refresh_redates_only_when_the_second_changes() {
        let mut r = Canned::new(App::Hello);
        r.set_date(0);
        assert!(r.refresh(), "a response dated 1970 is stale");
        let dated = r.date().to_string();
        assert_ne!(dated, "Thu, 01 Jan 1970 00:00:00 GMT");
        // Within the same second nothing changes (or the second ticked meanwhile).
        let again = r.refresh();
        assert!(!again || r.date() != dated);
    }
}
