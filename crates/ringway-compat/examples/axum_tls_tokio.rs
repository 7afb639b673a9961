//! The same axum app over TLS on tokio (current_thread), the peer `axum_tls` is measured
//! against in `bench/compare_tls_ws.sh`: tokio-rustls, then hyper's HTTP/2 or HTTP/1.1
//! as ALPN chooses, with the same hyper settings as `ServeOptions::default()` (a timer).
//! A benchmark peer only: the library never depends on tokio's runtime.
//!
//! Options: `--bind ADDR`, `--cert-out FILE`.

#[path = "common/app.rs"]
mod app;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

fn main() -> std::io::Result<()> {
    let (mut bind, mut cert_out) = ("127.0.0.1:3443".to_string(), None);
    for (name, value) in app::args() {
        match name.as_str() {
            "--bind" => bind = value,
            "--cert-out" => cert_out = Some(value),
            _ => {
                eprintln!("unknown option {name}: expected --bind or --cert-out");
                std::process::exit(2);
            }
        }
    }
    let acceptor = tokio_rustls::TlsAcceptor::from(app::tls_config(cert_out.as_deref()));
    let router = app::router();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&bind).await?;
        println!(
            "axum over TLS (h2, http/1.1) on tokio (current_thread) listening on https://{}",
            listener.local_addr()?
        );
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let (acceptor, service) = (acceptor.clone(), TowerToHyperService::new(router.clone()));
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                let io = TokioIo::new(tls);
                if h2 {
                    let mut b = http2::Builder::new(TokioExecutor::new());
                    b.timer(TokioTimer::new());
                    let _ = b.serve_connection(io, service).await;
                } else {
                    let mut b = http1::Builder::new();
                    b.timer(TokioTimer::new());
                    let _ = b.serve_connection(io, service).with_upgrades().await;
                }
            });
        }
    })
}
