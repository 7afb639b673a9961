//! hyper hello on tokio, the same service as `hello_hyper`: the peer it is measured
//! against in `bench/compare.sh`. A benchmark peer only: the library never depends on
//! tokio's runtime.
//!
//! ```sh
//! cargo run --release -p ringway-compat --example hello_hyper_tokio -- --bind 127.0.0.1:8080 --flavor current_thread
//! ```

#[path = "common/hello.rs"]
mod hello;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};

fn main() -> std::io::Result<()> {
    let (mut bind, mut flavor) = ("127.0.0.1:8080".to_string(), "current_thread".to_string());
    for (name, value) in hello::args() {
        match name.as_str() {
            "--bind" => bind = value,
            "--flavor" => flavor = value,
            _ => panic!("unknown option {name}: expected --bind or --flavor"),
        }
    }
    let rt = match flavor.as_str() {
        "current_thread" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        "multi_thread" => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?,
        _ => panic!("--flavor takes current_thread or multi_thread, not {flavor:?}"),
    };
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&bind).await?;
        println!(
            "hyper/tokio ({flavor}) listening on {}",
            listener.local_addr()?
        );
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            tokio::spawn(async move {
                let mut http = http1::Builder::new();
                // The same settings as ServeOptions::default() on ringway: a timer, so
                // hyper's header-read timeout is on.
                http.timer(TokioTimer::new());
                let _ = http
                    .serve_connection(TokioIo::new(stream), service_fn(hello::hello))
                    .await;
            });
        }
    })
}
