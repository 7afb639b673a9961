//! Helpers the HTTP tests share: a hyper client on a `CompatStream`, and a test per
//! backend for bodies that need a runtime of their own (several cores).

#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use ringway::net::TcpStream;
use ringway_compat::CompatStream;

/// Generates `name::uring` and `name::epoll`, each calling `super::name(backend)`.
#[macro_export]
macro_rules! per_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn uring() {
                super::$name(ringway::Backend::Uring)
            }
            #[test]
            fn epoll() {
                super::$name(ringway::Backend::Epoll)
            }
        }
    )*};
}

/// An HTTP/1 client connection (hyper's, over the adapter); its connection task runs
/// on the current core.
pub(crate) async fn client(addr: SocketAddr) -> SendRequest<Full<Bytes>> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (send, conn) = hyper::client::conn::http1::handshake(CompatStream::new(stream))
        .await
        .expect("handshake");
    ringway::spawn(async move {
        let _ = conn.await;
    })
    .detach();
    send
}

/// Sends `req` and collects the whole response.
pub(crate) async fn fetch(
    client: &mut SendRequest<Full<Bytes>>,
    req: Request<Full<Bytes>>,
) -> Response<Bytes> {
    client.ready().await.expect("connection ready");
    let resp = client.send_request(req).await.expect("response");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    Response::from_parts(parts, body)
}

/// A GET request for `path`.
pub(crate) fn get(path: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .header("host", "test")
        .body(Full::new(Bytes::new()))
        .unwrap()
}
