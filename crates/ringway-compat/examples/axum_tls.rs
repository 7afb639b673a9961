//! axum over TLS on ringway: `Server::tls` terminates TLS itself (rustls) and serves
//! HTTP/2 or HTTP/1.1 on one port, as ALPN chooses. A fresh self-signed certificate for
//! `localhost` is made at start-up (`--cert-out FILE` writes it, for a client to trust).
//!
//! ```sh
//! cargo run --release -p ringway-compat --example axum_tls -- --bind 127.0.0.1:3443 --cert-out /tmp/cert.pem
//! curl --cacert /tmp/cert.pem --http2 https://localhost:3443/plaintext
//! curl --cacert /tmp/cert.pem --http1.1 https://localhost:3443/json
//! ```
//!
//! Options: `--bind ADDR`, `--threads N`, `--backend auto|uring|epoll` (without it,
//! `RINGWAY_BACKEND` chooses, as for any ringway runtime), `--cert-out FILE`.
//! The tokio peer of the benchmark is `axum_tls_tokio`, the same app.

#[path = "common/app.rs"]
mod app;

use ringway_compat::{ServeOptions, Server, TowerService};

fn main() -> std::io::Result<()> {
    let (mut bind, mut threads) = ("127.0.0.1:3443".to_string(), 1);
    let (mut backend, mut cert_out) = (None, None);
    for (name, value) in app::args() {
        match name.as_str() {
            "--bind" => bind = value,
            "--threads" => threads = value.parse().expect("--threads takes a number"),
            "--backend" => backend = Some(app::backend(&value)),
            "--cert-out" => cert_out = Some(value),
            _ => {
                eprintln!(
                    "unknown option {name}: expected --bind, --threads, --backend or --cert-out"
                );
                std::process::exit(2);
            }
        }
    }
    let rt = app::runtime(threads, backend)?;
    let config = app::tls_config(cert_out.as_deref());
    let router = app::router();
    let server = Server::tls(
        &rt.handle(),
        bind.as_str(),
        ServeOptions::default(),
        config,
        move || TowerService(router.clone()),
    )?;
    println!(
        "axum over TLS (h2, http/1.1) on ringway ({}) listening on https://{}",
        rt.backend(),
        server.local_addr()
    );
    let report = rt.block_on(server.wait())?;
    println!("{report:?}");
    Ok(())
}
