//! The request body as a stream: the connection pushes body bytes as they arrive (and
//! are framed), the handler pulls them through its [`Body`](crate::Body). A high-water
//! mark keeps a handler that reads slowly from making the connection buffer the body.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

use crate::body::BodyStream;

/// Bytes queued above which the connection stops reading the body until the handler
/// takes some.
pub(crate) const HIGH_WATER: usize = 256 * 1024;

#[derive(Default)]
struct State {
    queue: VecDeque<Bytes>,
    queued: usize,
    end: bool,
    failed: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

/// The queue of a streamed request body, shared by the connection (writer) and the
/// handler's [`Body`](crate::Body) (reader).
#[derive(Default)]
pub(crate) struct BodyQueue {
    state: RefCell<State>,
}

impl BodyQueue {
    pub(crate) fn push(&self, b: Bytes) {
        let mut s = self.state.borrow_mut();
        s.queued += b.len();
        s.queue.push_back(b);
        if let Some(w) = s.reader.take() {
            w.wake();
        }
    }

    pub(crate) fn finish(&self, failed: bool) {
        let mut s = self.state.borrow_mut();
        s.end = true;
        s.failed = failed;
        if let Some(w) = s.reader.take() {
            w.wake();
        }
    }

    /// Resolves when the queue is below the high-water mark.
    pub(crate) fn poll_space(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.state.borrow_mut();
        if s.queued < HIGH_WATER {
            Poll::Ready(())
        } else {
            s.writer = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// The reading end, inside the request's [`Body`](crate::Body).
pub(crate) struct BodyQueueReader(pub(crate) Rc<BodyQueue>);

impl BodyStream for BodyQueueReader {
    fn poll_chunk(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        let mut s = self.0.state.borrow_mut();
        if let Some(b) = s.queue.pop_front() {
            s.queued -= b.len();
            if s.queued < HIGH_WATER {
                if let Some(w) = s.writer.take() {
                    w.wake();
                }
            }
            return Poll::Ready(Some(Ok(b)));
        }
        if s.failed {
            return Poll::Ready(Some(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request body framing failed",
            ))));
        }
        if s.end {
            return Poll::Ready(None);
        }
        s.reader = Some(cx.waker().clone());
        Poll::Pending
    }
}
