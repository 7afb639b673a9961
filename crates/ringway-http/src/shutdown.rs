//! Graceful shutdown: the [`ShutdownHandle`] that starts it from any thread, and what a
//! connection reads of it. The drain itself is the runtime's
//! ([`ringway::sync::drain`], which ringway-compat's hyper server drains with too): the handle raises a [`Signal`] that wakes
//! every core's accept loop; the loop stops accepting and asks its core's connections
//! to finish ([`CoreDrain::finish`]); each connection, counted in by its [`Watch`],
//! answers what it has read and closes.

use std::sync::Arc;
use std::task::{Context, Poll};

use ringway::sync::drain::{Ask, ConnGuard, CoreDrain, Signal};

use crate::response::ResponseContext;

/// One core's drain, with what its responses share (the server's name; the shutdown
/// flag they read to close their connections).
pub(crate) type CoreState = CoreDrain<ResponseContext>;

/// One connection's place in its core's drain; dropping it counts the connection out.
pub(crate) type Watch = ConnGuard<ResponseContext>;

/// What a connection reads of its [`Watch`].
pub(crate) trait Watching {
    /// Whether shutdown has begun.
    fn is_down(&self) -> bool;
    /// Ready once shutdown has begun. Polled only by the task of the connection that
    /// owns the watch, whose waker does not change (see [`ConnGuard::poll_ask`]).
    fn poll_down(&self, cx: &mut Context<'_>) -> Poll<()>;
    /// What this core's responses share (the server's name, the shutdown flag).
    fn response_context(&self) -> &ResponseContext;
}

impl Watching for Watch {
    #[inline]
    fn is_down(&self) -> bool {
        self.drain().is_finishing()
    }

    #[inline]
    fn poll_down(&self, cx: &mut Context<'_>) -> Poll<()> {
        match self.poll_ask(cx) {
            Ask::Serve => Poll::Pending,
            Ask::Finish | Ask::Abort => Poll::Ready(()),
        }
    }

    #[inline]
    fn response_context(&self) -> &ResponseContext {
        &self.drain().shared
    }
}

/// Asks the connections of one core to finish: their responses close from now on, and
/// idle ones close at once.
pub(crate) fn finish(state: &CoreState) {
    state.shared.down.set(true);
    state.finish();
}

/// Starts the graceful shutdown of a running server from any thread.
#[derive(Clone)]
pub struct ShutdownHandle {
    pub(crate) signal: Arc<Signal>,
}

impl ShutdownHandle {
    /// Stops accepting on every core; every request already read (or waiting in its
    /// socket) is answered, the last of each connection with `Connection: close`;
    /// idle connections close at once. Idempotent.
    pub fn shutdown(&self) {
        self.signal.raise();
    }

    /// Whether shutdown has been asked for.
    pub fn is_shutdown(&self) -> bool {
        self.signal.is_raised()
    }
}

impl std::fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShutdownHandle")
            .field("down", &self.is_shutdown())
            .finish()
    }
}
