//! The connection's end of a request body that is streamed to its handler: the pipe the
//! decoded bytes go into, and whether the body has ended. The decoding itself is the
//! connection's [`RequestDecoder`](crate::RequestDecoder); this is the part that
//! survives between the connection's awaits, so reading can stop and resume safely.

use std::rc::Rc;

use crate::body::Body;
use crate::error::HttpError;
use crate::pipe::{Pipe, PipeReader};

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
    pub pipe: Rc<Pipe>,
}

impl BodyReader {
    /// The body ended badly: the handler reading it gets an error.
    pub(crate) fn fail(&mut self) {
        self.done = true;
        self.pipe.finish(true);
    }

    /// The body ended.
    pub(crate) fn finish(&mut self) {
        self.done = true;
        self.pipe.finish(false);
    }

    /// Whether anyone is left to read what is pushed.
    pub(crate) fn has_reader(&self) -> bool {
        Rc::strong_count(&self.pipe) > 1
    }
}

/// The body a handler gets for a body that is not yet whole in the input (`len`: its
/// length, if known), and the reader that feeds it.
pub(crate) fn streamed(len: Option<u64>) -> (Body, BodyReader) {
    let pipe = Rc::new(Pipe::default());
    let reader = BodyReader {
        done: false,
        pipe: pipe.clone(),
    };
    (Body::from_stream(len, PipeReader(pipe)), reader)
}
