//! The handler API: an async function from `http::Request<Body>` to
//! `http::Response<Body>`. Closures qualify.

use std::future::Future;

use http::{Request, Response};

use crate::body::Body;

/// Answers requests. One handler is made per core (see [`Server::start`](crate::Server));
/// it need not be `Send`.
pub trait Handler: 'static {
    /// Answers one request.
    fn call(&self, req: Request<Body>) -> impl Future<Output = Response<Body>>;
}

impl<F, Fut> Handler for F
where
    F: Fn(Request<Body>) -> Fut + 'static,
    Fut: Future<Output = Response<Body>>,
{
    fn call(&self, req: Request<Body>) -> impl Future<Output = Response<Body>> {
        self(req)
    }
}
