//! What an op's epoll side keeps between tries ([`EpollOpState`]), which the backend
//! keeps by slot index.

use std::os::fd::OwnedFd;
use std::time::Instant;

use crate::driver::addr::RawAddr;

/// One operation's epoll-only state, by slot index.
pub(crate) struct EpollOpState {
    /// An address the op reads (`Connect`, `SendTo`), copied at submission. Boxed:
    /// a `sockaddr_storage` is 128 bytes and most ops (every stream's receive) read
    /// none; the slot keeps the box for its next op, so a socket's `SendTo`s reuse it.
    pub(crate) addr: Option<Box<RawAddr>>,
    /// A non-blocking connect is under way: the next try reads its outcome.
    pub connecting: bool,
    /// Bytes a `SendAll` has sent so far.
    pub progress: usize,
    /// When the operation's timeout fires.
    pub(crate) deadline: Option<Instant>,
    /// An fd to forget and close once this operation has ended (`close_after`).
    pub(crate) close_after: Option<OwnedFd>,
}

impl EpollOpState {
    /// The address copied at submission, for an op that reads one.
    pub(crate) fn addr(&self) -> &RawAddr {
        self.addr
            .as_deref()
            .expect("an op that reads an address had it copied at submission")
    }

    pub(crate) fn new() -> Self {
        EpollOpState {
            addr: None,
            connecting: false,
            progress: 0,
            deadline: None,
            close_after: None,
        }
    }
}
