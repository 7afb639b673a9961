//! The signals that stop the CLI's servers: `SIGINT` and `SIGTERM`, through
//! `ringway::signal`.

use std::io;
use std::task::Poll;

use ringway::signal::{signal, Signal, SignalKind};

/// Listens for `SIGINT` and `SIGTERM` from its creation on. Made before the runtime so
/// that its cores inherit the blocked mask; polled on the core whose thread made it.
pub(crate) struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    pub(crate) fn new() -> io::Result<StopSignals> {
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// The first of the two to come.
    pub(crate) async fn next(mut self) -> SignalKind {
        std::future::poll_fn(|cx| {
            if self.interrupt.poll_recv(cx).is_ready() {
                return Poll::Ready(SignalKind::interrupt());
            }
            if self.terminate.poll_recv(cx).is_ready() {
                return Poll::Ready(SignalKind::terminate());
            }
            Poll::Pending
        })
        .await
    }
}
