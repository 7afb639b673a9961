//! TLS: a rustls client (TLS 1.3 and 1.2, ALPN http/1.1, session resumption, pipelined
//! requests) and curl get the right bytes; plaintext on the TLS port is refused without
//! harm to the server.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ringway_http::Config;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

struct Certs {
    cert_pem: String,
    key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

fn certs() -> Certs {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen");
    Certs {
        cert_pem: ck.cert.pem(),
        key_pem: ck.key_pair.serialize_pem(),
        cert_der: ck.cert.der().clone(),
        key_der: ck.key_pair.serialize_der(),
    }
}

fn server(c: &Certs) -> TestServer {
    let tls = ringway_http::tls::server_config_from(
        vec![c.cert_der.clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(c.key_der.clone())),
    )
    .unwrap();
    TestServer::start_with(Config::default(), None, Some(tls))
}

fn client_config(
    c: &Certs,
    version: &'static rustls::SupportedProtocolVersion,
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(c.cert_der.clone()).unwrap();
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[version])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}

/// Sends `req` over a new TLS connection; returns the responses, the ALPN protocol and
/// whether the session was resumed.
fn tls_exchange(
    server: &TestServer,
    cfg: &Arc<rustls::ClientConfig>,
    req: &[u8],
    want: usize,
) -> (Vec<Resp>, Option<Vec<u8>>, bool) {
    let sock = TcpStream::connect(server.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let conn =
        rustls::ClientConnection::new(cfg.clone(), ServerName::try_from("localhost").unwrap())
            .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(req).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let (resps, _) = parse_responses(&raw, &[], false);
        if resps.len() >= want {
            let alpn = tls.conn.alpn_protocol().map(|p| p.to_vec());
            let resumed = tls.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            return (resps, alpn, resumed);
        }
        let n = tls.read(&mut buf).expect("tls read");
        assert!(n > 0, "closed early");
        raw.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn rustls_client_tls13_tls12_alpn_resumption_pipelining() {
    let c = certs();
    let server = server(&c);
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let cfg = client_config(&c, version);
        let (r, alpn, resumed) =
            tls_exchange(&server, &cfg, b"GET /one HTTP/1.1\r\nHost: a\r\n\r\n", 1);
        assert_eq!(r[0].status, 200);
        assert_eq!(r[0].json()["target"], "/one");
        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
        assert!(!resumed);
        // Same client config: the session is resumed (ticket for 1.3, id for 1.2).
        let batch = (0..8)
            .map(|i| format!("GET /{i} HTTP/1.1\r\nHost: a\r\n\r\n"))
            .collect::<String>();
        let (r, _, resumed) = tls_exchange(&server, &cfg, batch.as_bytes(), 8);
        assert!(resumed, "{version:?}: session resumed");
        let targets: Vec<_> = r
            .iter()
            .map(|r| r.json()["target"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(targets, (0..8).map(|i| format!("/{i}")).collect::<Vec<_>>());
    }
    server.stop();
}

/// What resumes a session, checked rather than assumed: TLS 1.3 by tickets; TLS 1.2
/// by tickets and, for a client that does not take tickets, by session id (the server
/// keeps a session cache and a ticketer, see `tls::server_config_from`).
#[test]
fn what_resumes_tls12_and_tls13_sessions() {
    use rustls::client::{Resumption, Tls12Resumption};
    let c = certs();
    let server = server(&c);
    let req = b"GET /r HTTP/1.1\r\nHost: a\r\n\r\n";
    let cases = [
        (
            "1.3 tickets",
            &rustls::version::TLS13,
            Tls12Resumption::SessionIdOrTickets,
        ),
        (
            "1.2 tickets",
            &rustls::version::TLS12,
            Tls12Resumption::SessionIdOrTickets,
        ),
        (
            "1.2 session id only",
            &rustls::version::TLS12,
            Tls12Resumption::SessionIdOnly,
        ),
    ];
    for (name, version, tls12) in cases {
        let mut cfg = (*client_config(&c, version)).clone();
        cfg.resumption = Resumption::in_memory_sessions(8).tls12_resumption(tls12);
        let cfg = Arc::new(cfg);
        let (_, _, first) = tls_exchange(&server, &cfg, req, 1);
        let (r, _, second) = tls_exchange(&server, &cfg, req, 1);
        assert_eq!(r[0].status, 200);
        assert!(!first && second, "{name}: resumed {first} then {second}");
    }
    // And without resumption on the client, nothing resumes (the check can fail).
    let mut cfg = (*client_config(&c, &rustls::version::TLS12)).clone();
    cfg.resumption = Resumption::disabled();
    let cfg = Arc::new(cfg);
    let _ = tls_exchange(&server, &cfg, req, 1);
    let (_, _, again) = tls_exchange(&server, &cfg, req, 1);
    assert!(!again, "nothing to resume with");
    server.stop();
}

#[test]
fn curl_gets_the_right_bytes() {
    assert!(
        std::process::Command::new("curl")
            .arg("--version")
            .output()
            .is_ok(),
        "curl is missing: apt-get install -y curl"
    );
    let c = certs();
    let dir = std::env::temp_dir().join(format!("ringway-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cert.pem"), &c.cert_pem).unwrap();
    std::fs::write(dir.join("key.pem"), &c.key_pem).unwrap();
    // The PEM loader is what `ringway serve --tls-cert/--tls-key` uses.
    let tls =
        ringway_http::tls::server_config(&dir.join("cert.pem"), &dir.join("key.pem")).unwrap();
    let server = TestServer::start_with(Config::default(), None, Some(tls));
    for v in [
        ["--tlsv1.3", "--tls-max", "1.3"],
        ["--tlsv1.2", "--tls-max", "1.2"],
    ] {
        let out = std::process::Command::new("curl")
            .args(["-sS", "--http1.1", "--max-time", "10", "--cacert"])
            .arg(dir.join("cert.pem"))
            .args(v)
            .args(["-d", "posted"])
            .arg(format!("https://localhost:{}/curl", server.addr.port()))
            .args([
                "--resolve",
                &format!("localhost:{}:127.0.0.1", server.addr.port()),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "curl {v:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(body["target"], "/curl");
        assert_eq!(body["body"], "posted");
        assert_eq!(body["method"], "POST");
    }
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plaintext_on_the_tls_port_is_refused_harmlessly() {
    let c = certs();
    let server = server(&c);
    let mut s = connect(server.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(!got.starts_with(b"HTTP/"), "no HTTP answer in plaintext");
    if !got.is_empty() {
        assert_eq!(got[0], 0x15, "a TLS alert record, if anything");
    }
    // The server is unharmed.
    let cfg = client_config(&c, &rustls::version::TLS13);
    let (r, _, _) = tls_exchange(&server, &cfg, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 1);
    assert_eq!(r[0].status, 200);
    let stats = server.stop();
    assert!(stats.tls_errors >= 1, "{stats}");
}
