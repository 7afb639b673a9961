//! Drop-ins for `tower::timeout` and tower-http's `timeout` layers, on ringway's timers.
//!
//! tower's and tower-http's timeout layers arm `tokio::time::sleep`, which needs tokio's
//! runtime: on a ringway core they panic ("there is no reactor running"). These have
//! the same API and behaviour, with [`ringway::time::sleep`] instead (a per-core timer,
//! no syscall of its own):
//!
//! | tokio | ringway |
//! |---|---|
//! | `tower::timeout::TimeoutLayer` / `Timeout` | [`TimeoutLayer`] / [`Timeout`] (the error is still a boxed `tower::timeout::error::Elapsed`, so `HandleErrorLayer`s that check for it keep working) |
//! | `tower_http::timeout::TimeoutLayer` / `Timeout` | [`http::TimeoutLayer`] / [`http::Timeout`] (a `408 Request Timeout`, or the status given) |
//! | `tokio::time::{sleep, timeout, interval}` | `ringway::time::{sleep, timeout, interval}` |
//!
//! tower-http's `RequestBodyTimeout` and `ResponseBodyTimeout` have no drop-in yet.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

pub mod http;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Applies [`Timeout`] to a service: tower's `TimeoutLayer`, on ringway's timers.
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    timeout: Duration,
}

impl TimeoutLayer {
    /// Requests that take longer than `timeout` fail with `tower`'s `Elapsed`.
    pub const fn new(timeout: Duration) -> Self {
        TimeoutLayer { timeout }
    }
}

impl<S> ::tower::Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout::new(inner, self.timeout)
    }
}

/// Fails a request that takes longer than its timeout with a boxed
/// [`tower::timeout::error::Elapsed`](::tower::timeout::error::Elapsed), as tower's
/// `Timeout` does; the inner service's errors are boxed as they are. The timer starts
/// when the service is called (not while waiting for `poll_ready`), as tower's does.
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
}

impl<S> Timeout<S> {
    /// Wraps `inner`.
    pub const fn new(inner: S, timeout: Duration) -> Self {
        Timeout { inner, timeout }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, R> ::tower::Service<R> for Timeout<S>
where
    S: ::tower::Service<R>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: R) -> Self::Future {
        ResponseFuture {
            response: self.inner.call(request),
            sleep: ringway::time::sleep(self.timeout),
        }
    }
}

pin_project! {
    /// The future of a [`Timeout`] call.
    pub struct ResponseFuture<F> {
        #[pin]
        response: F,
        #[pin]
        sleep: ringway::time::Sleep,
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(r) = this.response.poll(cx) {
            return Poll::Ready(r.map_err(Into::into));
        }
        match this.sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Box::new(::tower::timeout::error::Elapsed::new()))),
            Poll::Pending => Poll::Pending,
        }
    }
}
