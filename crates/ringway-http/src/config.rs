//! Limits and timeouts of the server, all configurable, with conservative defaults.

use std::time::Duration;

/// Server configuration. `Config::default()` is sane for the open internet.
#[derive(Debug, Clone)]
pub struct Config {
    /// Longest request line (method, target, version) in bytes; longer: 414.
    pub max_request_line: usize,
    /// Longest single field line (name and value) in bytes; longer: 431.
    pub max_field_size: usize,
    /// Largest whole head (request line and fields) in bytes; larger: 431.
    pub max_head_size: usize,
    /// Most fields in a head (at most 128); more: 431.
    pub max_headers: usize,
    /// Largest request body in bytes; larger: 413 (the body is not read).
    pub max_body_size: u64,
    /// Longest chunk-extension section of one chunk-size line; longer: 400.
    pub max_chunk_ext: usize,
    /// Largest trailer section (all trailer lines together); larger: 431.
    pub max_trailer_size: usize,
    /// Time allowed for a whole request head once its first byte arrived (408).
    pub header_timeout: Duration,
    /// Time allowed between two arrivals of body bytes (408).
    pub body_timeout: Duration,
    /// Time a keep-alive connection may sit idle between requests (then closed).
    pub idle_timeout: Duration,
    /// Time allowed for one send of responses to be taken by the peer (then closed).
    pub send_timeout: Duration,
    /// Requests served on one connection before it is closed (`Connection: close`).
    pub max_requests_per_connection: u64,
    /// Connections the server holds open at once, on all its cores together (nginx's
    /// `worker_connections`). A connection accepted beyond it is closed at once and
    /// counted ([`StatsSnapshot::over_limit`](crate::StatsSnapshot::over_limit)); the
    /// others are served on.
    pub max_connections: usize,
    /// The `Server` header value; `None` sends none.
    pub server_name: Option<String>,
    /// Write an access log line per request (common log format) to standard output.
    pub access_log: bool,
    /// After shutdown starts, how long in-flight requests may take before connections
    /// are dropped.
    pub drain_timeout: Duration,
    /// File bodies (static files) of at least this many bytes go to plain TCP
    /// connections by `splice` (file -> pipe -> socket, no copy through user space);
    /// `None` (the default): never. TLS connections always read and encrypt. Off by
    /// default because it did not win where measured (io_uring spends more CPU per GiB
    /// with it: each splice runs in a kernel worker); see the README.
    pub splice_min: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_request_line: 8 * 1024,
            max_field_size: 8 * 1024,
            max_head_size: 32 * 1024,
            max_headers: 100,
            max_body_size: 8 * 1024 * 1024,
            max_chunk_ext: 1024,
            max_trailer_size: 8 * 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(30),
            max_requests_per_connection: 100_000,
            max_connections: 65_536,
            server_name: Some("ringway".to_string()),
            access_log: false,
            drain_timeout: Duration::from_secs(10),
            splice_min: None,
        }
    }
}

/// The hard cap on [`Config::max_headers`] (the parser's field array lives on the stack).
pub const MAX_HEADERS_CAP: usize = 128;
