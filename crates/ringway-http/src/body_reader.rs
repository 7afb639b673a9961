//! The state of a request body being read: how the rest is delimited, how much came,
//! and the pipe it goes into. The connection drives it (`Conn::pump`); this is the
//! part that survives between its awaits, so reading can stop and resume safely.

use std::rc::Rc;

use crate::body::Body;
use crate::chunked::{ChunkedDecoder, Decoded};
use crate::error::HttpError;
use crate::framing::BodyKind;
use crate::pipe::{Pipe, PipeReader};

/// Why a body could not be read.
pub(crate) enum Fail {
    /// Answer with this error, then close.
    Http(HttpError),
    /// Drop the connection.
    Abort,
}

/// How the rest of a body is delimited.
pub(crate) enum Framing {
    Length(u64),
    Chunked(ChunkedDecoder),
}

/// The state of one streamed request body.
pub(crate) struct BodyReader {
    pub framing: Framing,
    pub received: u64,
    pub done: bool,
    pub pipe: Rc<Pipe>,
}

impl BodyReader {
    pub fn new(kind: BodyKind, cfg: &crate::Config, pipe: Rc<Pipe>) -> Self {
        let framing = match kind {
            BodyKind::Chunked => {
                Framing::Chunked(ChunkedDecoder::new(cfg.max_chunk_ext, cfg.max_trailer_size))
            }
            BodyKind::Length(n) => Framing::Length(n),
            BodyKind::None => Framing::Length(0),
        };
        BodyReader {
            framing,
            received: 0,
            done: false,
            pipe,
        }
    }

    /// Whether `input` already holds the whole body (so no `100 Continue` is needed).
    pub fn complete_in(&self, input: &[u8]) -> bool {
        match &self.framing {
            Framing::Length(n) => input.len() as u64 >= *n,
            Framing::Chunked(d) => {
                let mut d = d.clone();
                let mut pos = 0;
                loop {
                    match d.decode(&input[pos..]) {
                        Ok((_, Decoded::Done)) => return true,
                        Ok((n, Decoded::Data(..))) => pos += n,
                        _ => return false,
                    }
                }
            }
        }
    }

    pub fn fail(&mut self) {
        self.done = true;
        self.pipe.finish(true);
    }
}

/// The body a handler gets for a body that is not yet whole in the input: a stream fed
/// by a new [`BodyReader`].
pub(crate) fn streamed(kind: BodyKind, cfg: &crate::Config) -> (Body, BodyReader) {
    let pipe = Rc::new(Pipe::default());
    let len = match kind {
        BodyKind::Length(n) => Some(n),
        _ => None,
    };
    let reader = BodyReader::new(kind, cfg, pipe.clone());
    (Body::from_stream(len, PipeReader(pipe)), reader)
}
