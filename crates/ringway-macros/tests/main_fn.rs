//! `#[ringway::main]` on a real `async fn main` (this test target has
//! `harness = false`), run against the stand-in `ringway` crate.

extern crate self as ringway;

mod support;
pub use support::*;

#[ringway_macros::main(backend = "epoll")]
async fn main() -> Result<(), String> {
    let config = current();
    if config
        != (Config {
            threads: None,
            backend: Some(Backend::Epoll),
            pin: None,
        })
    {
        return Err(format!("unexpected runtime settings: {config:?}"));
    }
    println!("main_fn: ok");
    Ok(())
}
