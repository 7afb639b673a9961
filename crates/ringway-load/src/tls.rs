//! TLS client set-up with rustls: trusted roots from a PEM file or the system bundle, or
//! (`--insecure`) any certificate at all, for self-signed test servers. Signatures are
//! still checked in insecure mode; only the certificate's identity is not.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::config::TlsOptions;
use crate::error::LoadError;

/// Where the system's trusted certificates usually are.
const SYSTEM_BUNDLES: [&str; 3] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// The client configuration for a run.
pub fn client_config(opts: &TlsOptions) -> Result<Arc<ClientConfig>, LoadError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| LoadError::Tls(e.to_string()))?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert { provider }))
            .with_no_client_auth()
    } else {
        let roots = match &opts.ca_file {
            Some(f) => load_roots(f)?,
            None => {
                let found = SYSTEM_BUNDLES.iter().map(Path::new).find(|p| p.exists());
                match found {
                    Some(f) => load_roots(f)?,
                    None => {
                        return Err(LoadError::Tls(
                            "no system certificate bundle found: give --cacert FILE, or \
                             --insecure for a test server"
                                .into(),
                        ))
                    }
                }
            }
        };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The name the server's certificate must carry.
pub fn server_name(host: &str) -> Result<ServerName<'static>, LoadError> {
    ServerName::try_from(host.to_string())
        .map_err(|e| LoadError::Tls(format!("{host:?} is not a valid server name: {e}")))
}

fn load_roots(path: &Path) -> Result<RootCertStore, LoadError> {
    let file = File::open(path)
        .map_err(|e| LoadError::Tls(format!("cannot open {}: {e}", path.display())))?;
    let mut roots = RootCertStore::empty();
    let certs: Result<Vec<CertificateDer<'static>>, _> =
        rustls_pemfile::certs(&mut BufReader::new(file)).collect();
    let certs =
        certs.map_err(|e| LoadError::Tls(format!("cannot read {}: {e}", path.display())))?;
    let (added, _ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(LoadError::Tls(format!(
            "{} holds no usable certificate",
            path.display()
        )));
    }
    Ok(roots)
}

/// `--insecure`: any certificate is accepted; handshake signatures are still verified.
#[derive(Debug)]
struct AcceptAnyCert {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
