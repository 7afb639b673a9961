//! The handler API in a few lines: `cargo run -p ringway-http --example hello`, then
//! `curl -d hi http://127.0.0.1:8080/anything`. Ctrl-C stops it (process default).

use http::{Request, Response, StatusCode};
use ringway_http::{Body, Config, Server};

fn main() -> std::io::Result<()> {
    let rt = ringway::Runtime::new()?;
    Server::new(Config::default()).run(&rt, "127.0.0.1:8080", || {
        |req: Request<Body>| async move {
            match req.uri().path() {
                "/" => Response::new(Body::from("Hello, World!\n")),
                path => {
                    let path = path.to_string();
                    let body = req.into_body().bytes().await.unwrap_or_default();
                    Response::builder()
                        .status(StatusCode::OK)
                        .header("content-type", "text/plain")
                        .body(Body::from(format!("{path}: {} bytes\n", body.len())))
                        .unwrap()
                }
            }
        }
    })?;
    Ok(())
}
