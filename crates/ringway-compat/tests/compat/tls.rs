//! tokio-rustls over the adapter, on both backends: a TLS 1.3 handshake between a
//! ringway server and a ringway client, then hyper on both ends of the encrypted
//! stream: a request and a 1 MiB echo, every byte checked.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rand::{RngCore, SeedableRng};
use ringway::net::{TcpListener, TcpStream};
use ringway_compat::{CompatStream, RingwayTimer};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio_rustls::{TlsAcceptor, TlsConnector};

fn configs() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = CertificateDer::from(key.cert.der().to_vec());
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], private)
        .unwrap();
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    (Arc::new(server), Arc::new(client))
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match req.uri().path() {
        "/echo" => req.into_body().collect().await.unwrap().to_bytes(),
        _ => Bytes::from_static(b"hello over tls"),
    };
    Ok(Response::new(Full::new(body)))
}

#[ringway::test(both)]
async fn tokio_rustls_handshake_and_requests_over_the_adapter() {
    let (server_cfg, client_cfg) = configs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = ringway::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let tls = TlsAcceptor::from(server_cfg)
            .accept(CompatStream::new(tcp))
            .await
            .expect("server handshake");
        let (_, session) = tls.get_ref();
        assert_eq!(session.alpn_protocol(), Some(&b"http/1.1"[..]));
        hyper::server::conn::http1::Builder::new()
            .timer(RingwayTimer)
            .serve_connection(TokioIo::new(tls), service_fn(handle))
            .await
            .expect("serve");
    });

    let tcp = TcpStream::connect(addr).await.unwrap();
    let tls = TlsConnector::from(client_cfg)
        .connect(
            ServerName::try_from("localhost").unwrap(),
            CompatStream::new(tcp),
        )
        .await
        .expect("client handshake");
    let (_, session) = tls.get_ref();
    assert_eq!(
        session.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    let client_conn = ringway::spawn(conn);

    let req = Request::get("/")
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let r = send.send_request(req).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.into_body().collect().await.unwrap().to_bytes(),
        "hello over tls"
    );

    let mut big = vec![0u8; 1 << 20];
    rand::rngs::StdRng::seed_from_u64(11).fill_bytes(&mut big);
    let req = Request::post("/echo")
        .header("host", "localhost")
        .body(Full::new(Bytes::from(big.clone())))
        .unwrap();
    let r = send.send_request(req).await.unwrap();
    let echoed = r.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(echoed.len(), big.len());
    assert!(echoed == big, "the 1 MiB echo differs");

    drop(send);
    client_conn.await.unwrap().unwrap();
    server.await.unwrap();
}
