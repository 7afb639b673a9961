//! tower-http's `TimeoutLayer` on ringway's timers: a request that takes too long gets a
//! response with a timeout status (`408 Request Timeout` by default) and an empty body.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use pin_project_lite::pin_project;

/// Applies [`Timeout`] to a service: `tower_http::timeout::TimeoutLayer`, on ringway's
/// timers.
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    timeout: Duration,
    status: StatusCode,
}

impl TimeoutLayer {
    /// A request that takes longer than `timeout` gets `408 Request Timeout`.
    pub const fn new(timeout: Duration) -> Self {
        TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout)
    }

    /// A request that takes longer than `timeout` gets `status`.
    pub const fn with_status_code(status: StatusCode, timeout: Duration) -> Self {
        TimeoutLayer { timeout, status }
    }
}

impl<S> ::tower::Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            timeout: self.timeout,
            status: self.status,
        }
    }
}

/// Answers a request that takes longer than its timeout with the timeout status and an
/// empty (`Default`) body, dropping the inner service's future; other responses and
/// errors pass through. The timer starts when the service is called.
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
    status: StatusCode,
}

impl<S> Timeout<S> {
    /// Wraps `inner`: `408 Request Timeout` after `timeout`.
    pub const fn new(inner: S, timeout: Duration) -> Self {
        Timeout {
            inner,
            timeout,
            status: StatusCode::REQUEST_TIMEOUT,
        }
    }
}

impl<S, ReqBody, ResBody> ::tower::Service<Request<ReqBody>> for Timeout<S>
where
    S: ::tower::Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: Default,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        ResponseFuture {
            response: self.inner.call(request),
            sleep: ringway::time::sleep(self.timeout),
            status: self.status,
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
        status: StatusCode,
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(r) = this.response.poll(cx) {
            return Poll::Ready(r);
        }
        match this.sleep.poll(cx) {
            Poll::Ready(()) => {
                let mut response = Response::new(B::default());
                *response.status_mut() = *this.status;
                Poll::Ready(Ok(response))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
