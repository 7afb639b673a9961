//! hyper 1's runtime traits on ringway: `rt::Read` / `rt::Write` for [`CompatStream`],
//! an executor that spawns on the current core, and a timer on ringway's timers.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::rt::ReadBufCursor;

use crate::receiver::ReadSink;
use crate::socket::StreamSocket;
use crate::stream::CompatStream;

impl ReadSink for ReadBufCursor<'_> {
    fn room(&self) -> usize {
        self.remaining()
    }
    fn put(&mut self, bytes: &[u8]) {
        self.put_slice(bytes)
    }
}

impl<S: StreamSocket> hyper::rt::Read for CompatStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let receiver = self.get_mut().receiver();
        receiver.poll_read(cx, &mut buf)
    }
}

impl<S: StreamSocket> hyper::rt::Write for CompatStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_bufs(cx, &[buf])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_bufs(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush_inner(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_shutdown_inner(cx)
    }
}

/// hyper's executor on ringway: runs each future hyper hands it (HTTP/2 streams,
/// connection background work) on the **current core**. hyper's `Executor` does not
/// ask for `Send`, so neither does this: services may hold `Rc`s.
///
/// Under [`Server`](crate::Server), the HTTP/2 streams a poll of a connection hands
/// over are polled once by the connection's own task right after that poll, and become
/// tasks only if that first poll does not finish them: a stream whose handler answers
/// at once costs no task, and the connection's next poll, at once, writes the
/// responses of all of them together. A panic in that first poll is caught and drops
/// the future (the stream is reset), as a task's panic would. Anywhere else, each
/// future is spawned as a task.
///
/// Must be used from inside a ringway runtime (it panics elsewhere, as
/// [`ringway::spawn`] does).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalExecutor;

impl<F> hyper::rt::Executor<F> for LocalExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, fut: F) {
        crate::eager::execute(fut);
    }
}

/// hyper's timer on ringway's per-core timers ([`ringway::time::sleep`]): header-read
/// and keep-alive timeouts cost no syscall of their own.
///
/// Its `now()` is ringway's turn clock ([`ringway::time::now`]): read once per loop
/// turn, not once per request. hyper computes each header-read deadline as `now()`
/// plus the timeout, so that deadline counts from the start of the turn in which hyper
/// asked: the timeout can end earlier than counted from the real clock by at most how
/// long the core had been running that turn's tasks (microseconds under load, against
/// a timeout of seconds). Deadlines are never missed: a timer fires at the first turn
/// that finds it due.
#[derive(Debug, Clone, Copy, Default)]
pub struct RingwayTimer;

/// A ringway sleep as hyper's `Sleep`.
struct TimerSleep(ringway::time::Sleep);

impl Future for TimerSleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for TimerSleep {}

impl hyper::rt::Timer for RingwayTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(TimerSleep(ringway::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(TimerSleep(ringway::time::sleep_until(deadline)))
    }

    fn now(&self) -> Instant {
        ringway::time::now()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        // Ours: move the deadline in place, no new allocation.
        if let Some(mut ours) = sleep.as_mut().downcast_mut_pin::<TimerSleep>() {
            ours.0.reset(new_deadline);
        } else {
            *sleep = self.sleep_until(new_deadline);
        }
    }
}
