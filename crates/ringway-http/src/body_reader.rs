//! The connection's end of a request body that is streamed to its handler: the queue the
//! decoded bytes go into, and whether the body has ended. The decoding itself is the
//! connection's [`RequestDecoder`](crate::RequestDecoder); this is the part that
//! survives between the connection's awaits, so reading can stop and resume safely.

use std::rc::Rc;

use crate::body::Body;
use crate::body_queue::{BodyQueue, BodyQueueReader};
use crate::error::HttpError;

/// Why a body could not be read.
pub(crate) enum Fail {
    /// Answer with this error, then close.
    Http(HttpError),
    /// Drop the connection.
    Abort,
}

/// The state of one streamed request body.
pub(crate) struct BodyReader {
    pub done: bool,
    /// Where the decoded bytes go; the handler's body reads the other end.
    pub queue: Rc<BodyQueue>,
}

impl BodyReader {
    /// The body ended badly: the handler reading it gets an error.
    pub(crate) fn fail(&mut self) {
        self.done = true;
        self.queue.finish(true);
    }

    /// The body ended.
    pub(crate) fn finish(&mut self) {
        self.done = true;
        self.queue.finish(false);
    }

    /// Whether anyone is left to read what is pushed.
    pub(crate) fn has_reader(&self) -> bool {
        Rc::strong_count(&self.queue) > 1
    }
}

/// The body a handler gets for a body that is not yet whole in the input (`len`: its
/// length, if known), and the reader that feeds it.
pub(crate) fn streamed(len: Option<u64>) -> (Body, BodyReader) {
    let queue = Rc::new(BodyQueue::default());
    let reader = BodyReader {
        done: false,
        queue: queue.clone(),
    };
    (Body::from_stream(len, BodyQueueReader(queue)), reader)
}
