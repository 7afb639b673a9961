//! hyper hello on ringway: the bench peer `hyper/ringway` (see `bench/compare.sh`).
//!
//! ```sh
//! cargo run --release -p ringway-compat --example hello_hyper -- --bind 127.0.0.1:8080 --threads 1 --backend uring
//! ```
//!
//! Without `--backend`, `RINGWAY_BACKEND` chooses the backend, as for any ringway runtime.

#[path = "common/hello.rs"]
mod hello;

use hyper::service::service_fn;
use ringway::Backend;
use ringway_compat::{ServeOptions, Server};

fn main() -> std::io::Result<()> {
    // Without `--backend`, `RINGWAY_BACKEND` (or the probe) chooses, as for any runtime.
    let (mut bind, mut threads, mut backend) = ("127.0.0.1:8080".to_string(), 1, None);
    let mut options = ServeOptions::default();
    for (name, value) in hello::args() {
        match name.as_str() {
            "--bind" => bind = value,
            "--threads" => threads = value.parse().expect("--threads takes a number"),
            "--backend" => {
                backend = Some(match value.as_str() {
                    "auto" => Backend::Auto,
                    "uring" => Backend::Uring,
                    "epoll" => Backend::Epoll,
                    _ => panic!("--backend takes auto, uring or epoll, not {value:?}"),
                })
            }
            // hyper without a timer (no header-read timeout), for measurements.
            "--timer" if value == "off" => {
                options.http1 = hyper::server::conn::http1::Builder::new()
            }
            _ => panic!(
                "unknown option {name}: expected --bind, --threads, --backend or --timer off"
            ),
        }
    }
    let mut builder = ringway::Runtime::builder();
    builder.worker_threads(threads);
    if let Some(backend) = backend {
        builder.backend(backend);
    }
    let rt = builder.build()?;
    let server = Server::http1(&rt.handle(), bind.as_str(), options, || {
        service_fn(hello::hello)
    })?;
    println!(
        "hyper/ringway ({}) listening on {}",
        rt.backend(),
        server.local_addr()
    );
    let report = rt.block_on(server.wait())?;
    println!("{report:?}");
    Ok(())
}
