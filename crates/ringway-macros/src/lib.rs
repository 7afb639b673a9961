//! Attribute macros for the `ringway` runtime.
//!
//! This crate is an implementation detail of `ringway`: depend on `ringway`
//! and use the re-exports [`ringway::main`](macro@main) and
//! [`ringway::test`](macro@test). The generated code refers to the runtime
//! through the absolute path `::ringway`, so the `ringway` crate must be a
//! direct dependency of the crate that uses these attributes.
//!
//! # `#[ringway::main]`
//!
//! Turns `async fn main()` into a synchronous `fn main()` that starts a
//! runtime and blocks on the body:
//!
//! ```
//! # async fn serve(_port: u16) -> std::io::Result<()> { Ok(()) }
//! #[ringway::main(threads = 4, backend = "auto", pin = true)]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let port: u16 = std::env::var("PORT").unwrap_or("8080".into()).parse()?;
//!     serve(port).await?;
//!     Ok(())
//! }
//! ```
//!
//! expands to
//!
//! ```text
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     ::ringway::Runtime::builder()
//!         .worker_threads(4)
//!         .backend(::ringway::Backend::Auto)
//!         .pin_threads(true)
//!         .build()
//!         .expect("ringway: failed to start the runtime")
//!         .block_on(async move {
//!             let port: u16 = std::env::var("PORT")?.parse()?;
//!             serve(port).await?;
//!             Ok(())
//!         })
//! }
//! ```
//!
//! The attributes, visibility and return type of the function are kept; `?`
//! and `return` in the body work as in the `async fn`, since they now apply
//! to the `async move` block whose output `block_on` returns. Every argument
//! is optional; a setting that is not given is left to the builder's default.
//!
//! | argument                              | builder call                                  |
//! |---------------------------------------|-----------------------------------------------|
//! | `threads = N` (integer literal, ≥ 1)  | `.worker_threads(N)`                          |
//! | `backend = "uring"`                   | `.backend(::ringway::Backend::Uring)`         |
//! | `backend = "epoll"`                   | `.backend(::ringway::Backend::Epoll)`         |
//! | `backend = "auto"`                    | `.backend(::ringway::Backend::Auto)`          |
//! | `pin = true` / `pin = false`          | `.pin_threads(true)` / `.pin_threads(false)`  |
//!
//! # `#[ringway::test]`
//!
//! Turns an `async fn` into a `#[test]` that runs its body on a fresh
//! single-threaded runtime (`.worker_threads(1)` unless `threads = N` is
//! given). It accepts the same arguments as `#[ringway::main]`:
//!
//! ```
//! # async fn compute() -> u32 { 42 }
//! # async fn roundtrip() -> std::io::Result<()> { Ok(()) }
//! #[ringway::test]
//! async fn answers() {
//!     assert_eq!(compute().await, 42);
//! }
//!
//! #[ringway::test(threads = 2, backend = "epoll")]
//! async fn two_workers_on_epoll() -> std::io::Result<()> {
//!     roundtrip().await?;
//!     Ok(())
//! }
//! # fn main() {} // the tests above are compiled only under `cargo test`
//! ```
//!
//! expands to (the test attribute is spelled by path so that a
//! `use ringway::test;` in scope cannot capture it)
//!
//! ```text
//! #[::core::prelude::v1::test]
//! fn answers() {
//!     ::ringway::Runtime::builder()
//!         .worker_threads(1)
//!         .build()
//!         .expect("ringway: failed to start the runtime")
//!         .block_on(async move {
//!             assert_eq!(compute().await, 42);
//!         })
//! }
//! ```
//!
//! `#[ringway::test(both)]` runs one body on both backends: it generates a
//! module named after the function that holds two tests, `uring` and `epoll`,
//! each on a runtime with that backend forced. Test names become
//! `name::uring` and `name::epoll`:
//!
//! ```
//! #[ringway::test(both)]
//! async fn echo_roundtrip() {
//!     // runs as `echo_roundtrip::uring` and as `echo_roundtrip::epoll`
//! }
//! # fn main() {}
//! ```
//!
//! expands to
//!
//! ```text
//! mod echo_roundtrip {
//!     #[allow(unused_imports)]
//!     use super::*;
//!
//!     #[::core::prelude::v1::test]
//!     fn uring() {
//!         ::ringway::Runtime::builder()
//!             .worker_threads(1)
//!             .backend(::ringway::Backend::Uring)
//!             .build()
//!             .expect("ringway: failed to start the runtime")
//!             .block_on(async move { /* body */ })
//!     }
//!
//!     #[::core::prelude::v1::test]
//!     fn epoll() {
//!         ::ringway::Runtime::builder()
//!             .worker_threads(1)
//!             .backend(::ringway::Backend::Epoll)
//!             .build()
//!             .expect("ringway: failed to start the runtime")
//!             .block_on(async move { /* body */ })
//!     }
//! }
//! ```
//!
//! Attributes written on the function (`#[ignore]`, `#[should_panic]`, doc
//! comments, lints, ...) are kept on every generated test function; the
//! function's visibility goes to the module, and `use super::*` makes the
//! enclosing module's items visible to the body.
//!
//! # Errors
//!
//! Mistakes are reported as compile errors pointing at the offending token:
//! an unknown argument (``unknown ringway::main argument `thread`; expected
//! one of: threads, backend, pin``), a value of the wrong kind, a repeated
//! argument, a function that is not `async`, takes parameters or is generic,
//! and (for tests) a function that already carries `#[test]`.

use proc_macro::TokenStream;

mod args;
mod expand;

/// Runs an `async fn main` on a ringway runtime.
///
/// Arguments (all optional): `threads = N` (`.worker_threads(N)`),
/// `backend = "uring" | "epoll" | "auto"` (`.backend(Backend::..)`),
/// `pin = true | false` (`.pin_threads(..)`).
///
/// ```
/// # async fn run() -> std::io::Result<()> { Ok(()) }
/// #[ringway::main(threads = 2)]
/// async fn main() -> std::io::Result<()> {
///     run().await
/// }
/// ```
///
/// becomes
///
/// ```text
/// fn main() -> std::io::Result<()> {
///     ::ringway::Runtime::builder()
///         .worker_threads(2)
///         .build()
///         .expect("ringway: failed to start the runtime")
///         .block_on(async move { run().await })
/// }
/// ```
///
/// See the [crate documentation](crate) for details and error messages.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::main(args.into(), item.into()).into()
}

/// Runs an `async fn` as a `#[test]` on a single-threaded ringway runtime.
///
/// Takes the same arguments as [`macro@main`] (`threads` defaults to 1), plus
/// `both`, which runs the body once on each backend, as the tests
/// `name::uring` and `name::epoll`.
///
/// ```
/// # async fn compute() -> u32 { 42 }
/// #[ringway::test]
/// async fn answers() {
///     assert_eq!(compute().await, 42);
/// }
///
/// #[ringway::test(both)]
/// async fn echo_roundtrip() {
///     // runs as `echo_roundtrip::uring` and as `echo_roundtrip::epoll`
/// }
/// # fn main() {}
/// ```
///
/// See the [crate documentation](crate) for the exact expansions.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::test(args.into(), item.into()).into()
}
