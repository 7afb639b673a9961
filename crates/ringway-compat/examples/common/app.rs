//! What the TLS and WebSocket examples share with their tokio peers (`bench/
//! compare_tls_ws.sh` measures one against the other): the axum router, a self-signed
//! certificate, the command-line options.

#![allow(dead_code)]

use std::sync::Arc;

use axum::routing::get;
use axum::Router;

/// The HTTP app behind TLS: `/plaintext` answers `Hello, World!` (a JSON route shows
/// that extractors and serialisation run as usual).
pub(crate) fn router() -> Router {
    Router::new()
        .route("/plaintext", get(|| async { "Hello, World!" }))
        .route(
            "/json",
            get(|| async { axum::Json(serde_json::json!({ "message": "Hello, World!" })) }),
        )
}

/// A TLS configuration with a fresh self-signed certificate for `localhost` (and
/// 127.0.0.1), offering h2 then http/1.1 by ALPN; the certificate is written, as PEM, to
/// `cert_out` if given, for a client to trust.
pub(crate) fn tls_config(cert_out: Option<&str>) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let key =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("a self-signed certificate");
    if let Some(path) = cert_out {
        std::fs::write(path, key.cert.pem()).expect("write the certificate");
    }
    let cert = CertificateDer::from(key.cert.der().to_vec());
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS 1.2 and 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![cert], private)
        .expect("a valid certificate");
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

/// `--name value` pairs from the command line.
pub(crate) fn args() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(name) = it.next() {
        let Some(value) = it.next() else {
            eprintln!("option {name} needs a value");
            std::process::exit(2);
        };
        out.push((name, value));
    }
    out
}

/// `--backend auto|uring|epoll`.
pub(crate) fn backend(value: &str) -> ringway::Backend {
    match value {
        "auto" => ringway::Backend::Auto,
        "uring" => ringway::Backend::Uring,
        "epoll" => ringway::Backend::Epoll,
        _ => {
            eprintln!("--backend takes auto, uring or epoll, not {value:?}");
            std::process::exit(2);
        }
    }
}

/// A runtime of `threads` cores on `backend` (`--backend`) if given, else on the one
/// `RINGWAY_BACKEND` names (or the probe's choice), as any ringway runtime.
pub(crate) fn runtime(
    threads: usize,
    backend: Option<ringway::Backend>,
) -> std::io::Result<ringway::Runtime> {
    let mut builder = ringway::Runtime::builder();
    builder.worker_threads(threads);
    if let Some(backend) = backend {
        builder.backend(backend);
    }
    builder.build()
}
