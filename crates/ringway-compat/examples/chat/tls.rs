//! The TLS configuration: the certificate and key given (PEM files), or a self-signed
//! certificate for `localhost` and 127.0.0.1 made at start-up. ALPN is left to
//! `Server::tls`, which offers `h2` then `http/1.1`: HTTP/2 for the REST clients,
//! HTTP/1.1 for WebSocket upgrades (a browser offers both and asks for the upgrade over
//! HTTP/1.1).

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::options::Options;

/// The server's rustls configuration, as the options ask.
pub(crate) fn config(options: &Options) -> io::Result<Arc<rustls::ServerConfig>> {
    let (chain, key) = match &options.cert {
        Some((cert, key)) => (read_chain(cert)?, read_key(key)?),
        None => self_signed(options.cert_out.as_deref())?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("the certificate: {e}"))
        })?;
    Ok(Arc::new(config))
}

fn read_chain(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let chain = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_error(path, e))?;
    if chain.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: no certificate in it", path.display()),
        ));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> io::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| pem_error(path, e))
}

fn pem_error(path: &Path, e: rustls::pki_types::pem::Error) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{}: not a PEM file that holds what is needed ({e})",
            path.display()
        ),
    )
}

/// A fresh self-signed certificate; written as PEM to `out` if asked.
fn self_signed(
    out: Option<&Path>,
) -> io::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .map_err(io::Error::other)?;
    if let Some(path) = out {
        std::fs::write(path, made.cert.pem())
            .map_err(|e| io::Error::new(e.kind(), format!("--cert-out {}: {e}", path.display())))?;
    }
    let cert = CertificateDer::from(made.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    Ok((vec![cert], key))
}
