//! The test server over TLS: rustls on std threads (one per connection), certificate and
//! key from PEM files the test generated.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::counters::{CONNECTIONS, REQUESTS, RESPONSES};
use crate::http::{self, Mode, Parsed};

/// Serves forever (until stdin closes).
pub(crate) fn serve(cert: &str, key: &str, mode: Mode, work: Duration) {
    let certs: Vec<_> = rustls_pemfile::certs(&mut BufReader::new(File::open(cert).expect("cert")))
        .collect::<Result<_, _>>()
        .expect("certificate PEM");
    let key = rustls_pemfile::private_key(&mut BufReader::new(File::open(key).expect("key")))
        .expect("key PEM")
        .expect("a private key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("certificate and key");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("listening on {}", listener.local_addr().expect("addr"));
    std::io::stdout().flush().expect("stdout");
    for stream in listener.incoming().flatten() {
        CONNECTIONS.fetch_add(1, Ordering::SeqCst);
        let config = config.clone();
        std::thread::spawn(move || {
            let _ = stream.set_nodelay(true);
            let conn = ServerConnection::new(config).expect("server connection");
            let mut tls = StreamOwned::new(conn, stream);
            let mut buf = Vec::new();
            let mut chunk = [0u8; 16 * 1024];
            loop {
                let n = match tls.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                let mut out = Vec::new();
                let mut answered = 0;
                while let Parsed::Request { len, status } = http::parse_request(&buf) {
                    REQUESTS.fetch_add(1, Ordering::SeqCst);
                    buf.drain(..len);
                    http::burn(work);
                    http::respond(mode, status, &mut out);
                    answered += 1;
                }
                if !out.is_empty() {
                    if tls.write_all(&out).and_then(|_| tls.flush()).is_err() {
                        return;
                    }
                    RESPONSES.fetch_add(answered, Ordering::SeqCst);
                }
            }
        });
    }
}
