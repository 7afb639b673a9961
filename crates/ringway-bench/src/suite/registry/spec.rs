//! What a peer is to the suite: the service a scenario asks of it ([`Service`], with the
//! Python servers of S14 as [`PyServer`]), how it treats HTTP ([`HttpWork`]), what its
//! responses may differ in ([`Deviation`], checked by the conformance check and printed),
//! where a run happens ([`LaunchCtx`]) and how it starts for a service ([`Launch`]). The
//! peers themselves are listed in [`super::list`].

use std::path::PathBuf;

use crate::measure::launch::LaunchSpec;
use crate::peers::canned::App;

/// What a scenario asks a server to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Plain HTTP/1.1 answering the canned response of this app.
    Http(App),
    /// HTTPS (rustls or OpenSSL) answering the hello response.
    Tls,
    /// A TCP echo server (every byte sent back).
    Echo,
    /// One of the Python servers of S14 (only the Python peers have them).
    Python(PyServer),
    /// S15's ASGI app (or its aiohttp twin) at one endpoint (only the Python
    /// frameworks have it).
    Asgi(Endpoint),
}

/// How a peer treats HTTP: the report says which peers do the work of parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpWork {
    /// Parses every request (method, target, headers) and frames the response.
    Parses,
    /// Counts `\r\n\r\n` and writes canned bytes, as the raw loops of the write-ups did.
    CountsHeads,
}

/// Where the suite runs things: what a peer needs to build its command line.
#[derive(Debug, Clone)]
pub struct LaunchCtx {
    /// Directory of `ringway` and the peer binaries (one cargo profile directory).
    pub bin_dir: PathBuf,
    /// Scratch directory of this run (generated configs, the body file, certificates).
    pub work_dir: PathBuf,
    /// The server's `taskset -c` list.
    pub server_cpus: String,
    /// How many cores the server has (threads / workers of multi-core peers).
    pub server_threads: usize,
    /// Directory holding [`crate::peers::canned::BODY_FILE`] (for static-file servers).
    pub static_dir: PathBuf,
    /// TLS certificate and key (PEM), for [`Service::Tls`].
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The largest connection count of the run (for backlogs and connection limits).
    pub max_connections: usize,
    /// The directory of an earlier build's `ringway` (`--baseline`), which the
    /// `-baseline` peers run: before and after measured in one interleaved run.
    pub baseline_dir: Option<PathBuf>,
    /// The modules that import in S15's Python environment (`None`: not made).
    pub s15_modules: Option<Vec<String>>,
    /// The command every server runs under (`ip netns exec NS` over a veth); empty on
    /// loopback.
    pub server_prefix: Vec<String>,
}

impl LaunchCtx {
    /// The path of binary `name` of this profile, as a string for a command line.
    pub fn bin(&self, name: &str) -> String {
        self.bin_dir.join(name).display().to_string()
    }
}

/// What a peer answers for one service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// Start it with this.
    Run(LaunchSpec),
    /// The peer has no such server (e.g. hyper has no echo server): not a failure.
    NotApplicable(&'static str),
    /// The peer cannot run here; the string says why and how to fix it.
    Unavailable(String),
}

/// One peer.
#[derive(Debug, Clone)]
pub struct PeerSpec {
    /// Short name used in tables, JSON and `--peers`.
    pub name: &'static str,
    /// One line: what it is, as built here.
    pub about: &'static str,
    /// How it treats HTTP.
    pub http: HttpWork,
    /// What its responses differ in from ringway's (each checked, each printed).
    pub deviations: &'static [Deviation],
    /// Which runs take it when `--peers` is not given.
    pub runs: Runs,
    /// The command for a service.
    pub launch: fn(&LaunchCtx, Service) -> Launch,
}

/// Which runs take a peer when `--peers` does not name the peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Every run: the default run and `--full`.
    Default,
    /// `--full` only: peers that were never the best other peer nor a counted rival in
    /// any scenario of the default run (its time budget is 7 minutes).
    Full,
    /// Only when `--peers` names it (a variant of another peer, or one that needs an
    /// option such as `--baseline`).
    ByName,
}

/// A declared, tolerated difference from the canned response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deviation {
    /// The reason phrase of the status line is this instead of `OK`.
    ReasonPhrase(&'static str),
    /// The `Server` value is this instead of `ringway`.
    ServerValue(&'static str),
    /// Header names are written in another case (`Content-Length`).
    HeaderNameCase,
    /// The same headers in another order.
    HeaderOrder,
    /// An extra header with this (lower-case) name.
    ExtraHeader(&'static str),
    /// The `ETag` of the static body is computed another way.
    EtagValue,
    /// This (lower-case) header of the canned response is not sent.
    MissingHeader(&'static str),
}

impl std::fmt::Display for Deviation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Deviation::ReasonPhrase(p) => write!(f, "reason phrase {p:?}"),
            Deviation::ServerValue(v) => write!(f, "Server: {v}"),
            Deviation::HeaderNameCase => write!(f, "header names capitalised"),
            Deviation::HeaderOrder => write!(f, "header order"),
            Deviation::ExtraHeader(h) => write!(f, "extra header {h:?}"),
            Deviation::EtagValue => write!(f, "its own ETag format"),
            Deviation::MissingHeader(h) => write!(f, "no {h:?} header"),
        }
    }
}

/// Which server `servers.py` runs (its `--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyServer {
    /// Echo in `Protocol.data_received` (`transport.write(data)`).
    Protocol,
    /// Echo through `BufferedProtocol` (`get_buffer` / `buffer_updated`).
    Buffered,
    /// Echo with `asyncio.start_server`: `reader.read`, `writer.write`, `drain`.
    Streams,
    /// HTTP: counts request heads and answers each with two `write()` calls, the
    /// headers then the body, as ASGI servers do.
    TwoWriteHttp,
}

impl PyServer {
    /// `servers.py --mode`.
    pub fn mode(self) -> &'static str {
        match self {
            PyServer::Protocol => "protocol",
            PyServer::Buffered => "buffered",
            PyServer::Streams => "streams",
            PyServer::TwoWriteHttp => "http",
        }
    }

    /// `true` when clients speak HTTP to it (else it echoes).
    pub fn is_http(self) -> bool {
        self == PyServer::TwoWriteHttp
    }
}

/// An endpoint of S15's app (`crates/ringway-bench/python/serve.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `GET /plaintext`: `Hello, World!` as `text/plain`.
    Plaintext,
    /// `GET /json`: `{"message":"Hello, World!"}` as `application/json`.
    Json,
}

impl Endpoint {
    /// The request path.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Plaintext => "/plaintext",
            Endpoint::Json => "/json",
        }
    }

    /// The body every server must send.
    pub fn body(self) -> &'static [u8] {
        match self {
            Endpoint::Plaintext => b"Hello, World!",
            Endpoint::Json => br#"{"message":"Hello, World!"}"#,
        }
    }

    /// The content type it must carry (parameters may follow).
    pub fn content_type(self) -> &'static str {
        match self {
            Endpoint::Plaintext => "text/plain",
            Endpoint::Json => "application/json",
        }
    }
}
