//! The two handler APIs.
//!
//! - [`Handler`]: an async function from `http::Request<Body>` to
//!   `http::Response<Body>`. Closures qualify. The `http` types are built for every
//!   request (a target copy, a field map, a response field map).
//! - [`ViewHandler`]: a function of a [`RequestView`] (the request borrowed from the
//!   input) and a [`Responder`] (the response written straight into the output
//!   buffer), for when those costs matter. Plain closures returning [`Written`] qualify;
//!   implement the trait for handlers that need to await.
//!
//! The server runs every handler as a [`ViewHandler`]: a [`Handler`] goes through
//! [`HttpTypes`], which builds the `http` request and sends the `http` response.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response, StatusCode};

use crate::body::Body;
use crate::future_box::FutureBox;
use crate::response::{Responder, Written};
use crate::view::RequestView;

/// Answers requests as `http` types. One handler is made per core (see
/// [`Server::start`](crate::Server::start)); it need not be `Send`.
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

/// Answers requests from a borrowed view, writing the response in place. One handler
/// is made per core (see [`Server::start_view`](crate::Server::start_view)).
///
/// A closure `Fn(RequestView<'_>, Responder<'_>) -> Written` is a `ViewHandler` that
/// answers at once. One that awaits implements the trait:
///
/// ```
/// use ringway_http::{RequestView, Responder, ViewHandler, Written};
///
/// struct Echo;
///
/// impl ViewHandler for Echo {
///     async fn call<'a>(&'a self, req: RequestView<'a>, res: Responder<'a>) -> Written {
///         match req.body_bytes().await {
///             Ok(body) => res.ok().bytes(&body),
///             Err(_) => res.status(http::StatusCode::BAD_REQUEST).empty(),
///         }
///     }
/// }
/// ```
pub trait ViewHandler: 'static {
    /// Answers one request.
    fn call<'a>(
        &'a self,
        req: RequestView<'a>,
        res: Responder<'a>,
    ) -> impl Future<Output = Written> + 'a;
}

impl<F> ViewHandler for F
where
    F: for<'a> Fn(RequestView<'a>, Responder<'a>) -> Written + 'static,
{
    // Inlined into the serve loop: called out of line, the view and the responder
    // were copied into its frame and the answer out of it (~60 instructions a request).
    #[inline(always)]
    fn call<'a>(
        &'a self,
        req: RequestView<'a>,
        res: Responder<'a>,
    ) -> impl Future<Output = Written> + 'a {
        std::future::ready(self(req, res))
    }
}

/// A [`Handler`] run as a [`ViewHandler`]: the request is built as `http` types, the
/// `http` response is written by [`Responder::send`].
#[derive(Debug, Clone)]
pub struct HttpTypes<H>(pub H);

impl<H: Handler> ViewHandler for HttpTypes<H> {
    fn call<'a>(
        &'a self,
        req: RequestView<'a>,
        res: Responder<'a>,
    ) -> impl Future<Output = Written> + 'a {
        // Filled in place (an `http::Request` is a few hundred bytes: each move is a
        // copy), then moved into the handler's future.
        let mut http_req = Request::new(Body::empty());
        // In a heap block: an `http::Request` and whatever the handler keeps across
        // its awaits would otherwise be part of every connection's state, idle or
        // not. The block is reused by the core's next request (no allocation).
        let answer = match req.fill_http(&mut http_req) {
            Ok(()) => Some(FutureBox::new(self.0.call(http_req))),
            // The scan checked everything the `http` types need: not expected.
            Err(_) => None,
        };
        Answer {
            answer,
            res: Some(res),
        }
    }
}

/// The future of [`HttpTypes::call`]: the handler's future, then its response sent.
/// Written by hand, not as an `async fn`: the response goes from the handler's `Poll`
/// straight into [`Responder::send`] (an `async fn` moved it out of the `Poll`, then
/// into the call: two copies of a 152-byte value per request).
struct Answer<'a, F> {
    /// `None` if the request could not be made (answered 500).
    answer: Option<FutureBox<F>>,
    /// Taken when the response is written.
    res: Option<Responder<'a>>,
}

impl<F: Future<Output = Response<Body>>> Future for Answer<'_, F> {
    type Output = Written;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Written> {
        // (Unpin: the handler's future is pinned in its block, not here.)
        let this = &mut *self;
        let Some(answer) = this.answer.as_mut() else {
            let res = this.res.take().expect("Answer polled after it completed");
            return Poll::Ready(res.status(StatusCode::INTERNAL_SERVER_ERROR).empty());
        };
        match Pin::new(answer).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(resp) => {
                let res = this.res.take().expect("Answer polled after it completed");
                Poll::Ready(res.send(resp))
            }
        }
    }
}
