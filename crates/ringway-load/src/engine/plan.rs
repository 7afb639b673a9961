//! The plan of a run: the configuration checked, URLs resolved, requests built and TLS
//! set up, once, before any client core starts. Shared read-only by every core.

use std::time::Duration;

use crate::config::{LoadConfig, Payload, Shape};
use crate::conn::TlsTarget;
use crate::error::LoadError;
use crate::target::{Scheme, Target};
use crate::tls;

/// What the connections speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// HTTP/1.1 requests and responses.
    Http,
    /// Fixed-size raw echo.
    Echo(usize),
    /// Framed raw echo with random frames.
    Framed(u64),
}

/// The plan of a run, made once before any client core starts (see the
/// [module docs](self)).
pub(crate) struct Plan {
    /// Resolved targets.
    pub targets: Vec<Target>,
    /// Request bytes per target (HTTP).
    pub requests: Vec<Vec<u8>>,
    /// TLS parameters per target (`None` for plain targets).
    pub tls: Vec<Option<TlsTarget>>,
    /// Requests are HEAD: responses have no body.
    pub head: bool,
    /// Expected response body.
    pub expect: Option<Vec<u8>>,
    /// Protocol.
    pub mode: Mode,
    /// Timing model.
    pub shape: Shape,
    /// Connections over all cores.
    pub connections: usize,
    /// Pipeline depth.
    pub pipeline: usize,
    /// Requests per connection (`None`: unlimited).
    pub per_connection: Option<u64>,
    /// Request timeout.
    pub timeout: Duration,
}

impl Plan {
    /// Checks `cfg` and prepares everything a core needs.
    pub(crate) fn new(cfg: &LoadConfig) -> Result<Plan, LoadError> {
        let bad = |m: &str| Err(LoadError::Config(m.to_string()));
        if cfg.urls.is_empty() {
            return bad("no URL given");
        }
        if cfg.connections == 0 {
            return bad("-c must be at least 1");
        }
        if cfg.threads == 0 {
            return bad("-t must be at least 1");
        }
        if cfg.threads > cfg.connections {
            return bad("-t must not exceed -c: every thread needs a connection");
        }
        if cfg.pipeline == 0 {
            return bad("-p must be at least 1");
        }
        if cfg.per_connection == Some(0) {
            return bad("-x must be at least 1");
        }
        if cfg.timeout.is_zero() {
            return bad("--timeout must be positive");
        }
        if cfg.limit.duration.is_none() && cfg.limit.requests.is_none() {
            return bad("give a duration (-d) or a request count (-n)");
        }
        if cfg.limit.requests == Some(0) || cfg.limit.duration.is_some_and(|d| d.is_zero()) {
            return bad("-n and -d must be positive");
        }
        match cfg.shape {
            Shape::Open { rate } if !(rate.is_finite() && rate > 0.0) => {
                return bad("-R must be a positive rate (requests per second)")
            }
            Shape::Batch { size: 0 } => return bad("--batch must be at least 1"),
            _ => {}
        }
        let targets = cfg
            .urls
            .iter()
            .map(|u| Target::parse(u))
            .collect::<Result<Vec<_>, _>>()?;
        let (mode, head, expect, requests) = match &cfg.payload {
            Payload::Http {
                request,
                expect_body,
            } => {
                if let Some(t) = targets.iter().find(|t| t.scheme == Scheme::Tcp) {
                    return Err(LoadError::BadUrl(format!(
                        "{}:{} has no http:// or https:// scheme (raw tcp targets are for --echo)",
                        t.host, t.port
                    )));
                }
                let reqs = targets.iter().map(|t| request.build(t)).collect();
                (Mode::Http, request.is_head(), expect_body.clone(), reqs)
            }
            Payload::Echo { size } => {
                if *size == 0 {
                    return bad("--echo SIZE must be at least 1 byte");
                }
                (Mode::Echo(*size), false, None, Vec::new())
            }
            Payload::FramedEcho { seed } => (Mode::Framed(*seed), false, None, Vec::new()),
        };
        if mode != Mode::Http && targets.iter().any(|t| t.scheme == Scheme::Https) {
            return bad("echo modes speak raw TCP: use tcp://host:port");
        }
        let mut tls = Vec::new();
        let needs_tls = targets.iter().any(|t| t.scheme == Scheme::Https);
        let config = if needs_tls {
            Some(tls::client_config(&cfg.tls)?)
        } else {
            None
        };
        for t in &targets {
            tls.push(match (&config, t.scheme) {
                (Some(c), Scheme::Https) => Some(TlsTarget {
                    config: c.clone(),
                    name: tls::server_name(&t.host)?,
                }),
                _ => None,
            });
        }
        Ok(Plan {
            targets,
            requests,
            tls,
            head,
            expect,
            mode,
            shape: cfg.shape,
            connections: cfg.connections,
            pipeline: cfg.pipeline,
            per_connection: cfg.per_connection,
            timeout: cfg.timeout,
        })
    }
}
