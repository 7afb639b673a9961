//! A two-way race of futures (the runtime has no `select!`; this is all we need).

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

/// Which future finished first.
pub(crate) enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls `a` then `b` until one is ready; the other is dropped.
pub(crate) async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}
