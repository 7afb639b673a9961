//! The signals that stop the service: ctrl-c (`SIGINT`) and `SIGTERM` (what `kill`,
//! systemd and container runtimes send), through `ringway::signal`: each a signalfd read
//! through the core's driver, no handler code of ours.

use std::future::poll_fn;
use std::io;
use std::task::Poll;

use ringway::signal::{signal, Signal, SignalKind};

/// Both signals, listened for from the moment this is made (before that, ctrl-c would
/// end the process at once).
#[derive(Debug)]
pub(crate) struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    pub(crate) fn listen() -> io::Result<StopSignals> {
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for either; says which came.
    pub(crate) async fn recv(&mut self) -> &'static str {
        poll_fn(|cx| {
            if self.interrupt.poll_recv(cx).is_ready() {
                return Poll::Ready("SIGINT (ctrl-c)");
            }
            if self.terminate.poll_recv(cx).is_ready() {
                return Poll::Ready("SIGTERM");
            }
            Poll::Pending
        })
        .await
    }
}
