//! The sans-IO request decoder: the heads and bodies of one connection's requests, from
//! the bytes as they arrive, without I/O. The server's connection loop serves with it;
//! [`crate::whole_buffer::decode_stream`], the property tests and the fuzz target drive the
//! very same code, so what is tested is what serves.
//!
//! Feeding it is the caller's job: pass the unconsumed input, act on the event, consume
//! the bytes the event says were used, call again. A head's bytes may stay in the
//! input while the request is answered (a borrowed view of them is what the handler
//! reads); its body is decoded from the bytes after them.

use crate::chunked::{ChunkedDecoder, Decoded};
use crate::config::Config;
use crate::error::{ErrorClass, HttpError};
use crate::framing::BodyKind;
use crate::head::{scan_head_into, HeadGate, RawHead};

/// What one call of [`RequestDecoder::decode`] or [`BodyDecoder::decode`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A whole head, the first `head.len` bytes of the input. If it announces a body,
    /// the next calls decode it (from the bytes after the head).
    Head(RawHead),
    /// Body bytes: `input[start..end]`.
    Data(usize, usize),
    /// The body ended (after its trailers, if chunked).
    BodyEnd,
    /// Every byte given was used or is kept for later: more input is needed.
    NeedMore,
}

/// What [`RequestDecoder::next_head`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// A whole head, written where the caller asked.
    Head,
    /// More input is needed.
    NeedMore,
    /// The decoder is inside a body: nothing was decoded.
    InBody,
}

/// Decodes one request body: `Content-Length` or chunked, bounded by
/// [`Config::max_body_size`].
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    framing: Framing,
    received: u64,
    max: u64,
}

#[derive(Debug, Clone)]
enum Framing {
    /// This many bytes are still to come.
    Length(u64),
    /// Boxed: its state is several times the size of the rest, and every connection
    /// carries a decoder, idle or not (chunked bodies are the rarer, larger case).
    Chunked(Box<ChunkedDecoder>),
}

impl BodyDecoder {
    /// A decoder for a body framed as `kind` (`BodyKind::None` is an empty body).
    pub fn new(kind: BodyKind, cfg: &Config) -> BodyDecoder {
        let framing = match kind {
            BodyKind::None => Framing::Length(0),
            BodyKind::Length(n) => Framing::Length(n),
            BodyKind::Chunked => Framing::Chunked(Box::new(ChunkedDecoder::new(
                cfg.max_chunk_ext,
                cfg.max_trailer_size,
            ))),
        };
        BodyDecoder {
            framing,
            received: 0,
            max: cfg.max_body_size,
        }
    }

    /// Decodes from `input`: how many bytes were used, and [`Event::Data`],
    /// [`Event::BodyEnd`] or [`Event::NeedMore`].
    pub fn decode(&mut self, input: &[u8]) -> Result<(usize, Event), HttpError> {
        let (used, event) = match &mut self.framing {
            Framing::Length(0) => return Ok((0, Event::BodyEnd)),
            Framing::Length(_) if input.is_empty() => return Ok((0, Event::NeedMore)),
            Framing::Length(left) => {
                let take = (input.len() as u64).min(*left) as usize;
                *left -= take as u64;
                (take, Event::Data(0, take))
            }
            Framing::Chunked(d) => match d.decode(input)? {
                (n, Decoded::Data(a, b)) => (n, Event::Data(a, b)),
                (n, Decoded::Done) => (n, Event::BodyEnd),
                (n, Decoded::NeedMore) => (n, Event::NeedMore),
            },
        };
        if let Event::Data(a, b) = event {
            self.received += (b - a) as u64;
            if self.received > self.max {
                return Err(HttpError::new(
                    ErrorClass::PayloadTooLarge,
                    "body too large",
                ));
            }
        }
        Ok((used, event))
    }

    /// Whether `input` holds the rest of the body (so nothing has to be waited for).
    pub fn is_complete_in(&self, input: &[u8]) -> bool {
        match &self.framing {
            Framing::Length(n) => input.len() as u64 >= *n,
            Framing::Chunked(_) => {
                let mut d = self.clone();
                let mut pos = 0;
                loop {
                    match d.decode(&input[pos..]) {
                        Ok((_, Event::BodyEnd)) => return true,
                        Ok((n, Event::Data(..))) => pos += n,
                        _ => return false,
                    }
                }
            }
        }
    }

    /// Body bytes decoded so far.
    pub fn received(&self) -> u64 {
        self.received
    }
}

/// Decodes the requests of one connection (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct RequestDecoder {
    state: State,
    gate: HeadGate,
}

#[derive(Debug, Clone, Default)]
enum State {
    /// Waiting for (the rest of) a head.
    #[default]
    Head,
    /// Inside a body.
    Body(BodyDecoder),
    /// An error ended the connection: nothing more is decoded.
    Failed(HttpError),
}

impl RequestDecoder {
    /// A decoder at the start of a connection.
    pub fn new() -> RequestDecoder {
        RequestDecoder::default()
    }

    /// Decodes from `input` (the unconsumed bytes): how many bytes the event used, and
    /// the event. After an error every call returns it again: the connection must close,
    /// nothing after a framing error is ever looked at.
    pub fn decode(&mut self, input: &[u8], cfg: &Config) -> Result<(usize, Event), HttpError> {
        let result = match &mut self.state {
            // The common case first, returned straight away when it succeeds.
            State::Head => match self.head(input, cfg) {
                Ok(decoded) => return Ok(decoded),
                Err(e) => Err(e),
            },
            State::Failed(e) => return Err(e.clone()),
            State::Body(body) => {
                let r = body.decode(input);
                if let Ok((_, Event::BodyEnd)) = r {
                    self.state = State::Head;
                }
                r
            }
        };
        if let Err(e) = &result {
            self.state = State::Failed(e.clone());
        }
        result
    }

    /// [`decode`](Self::decode) for a caller that expects a head (the server, between
    /// requests): a whole head is written into `head`, where the caller keeps it (a head
    /// returned inside `(usize, Event)` was copied on its way out at every request).
    /// [`Next::InBody`] if the decoder is inside a body (whose bytes are
    /// [`decode`](Self::decode)'s to read).
    #[inline(always)]
    pub(crate) fn next_head(
        &mut self,
        input: &[u8],
        cfg: &Config,
        head: &mut RawHead,
    ) -> Result<Next, HttpError> {
        match &self.state {
            State::Head => {}
            State::Failed(e) => return Err(e.clone()),
            State::Body(_) => return Ok(Next::InBody),
        }
        match self.head_into(input, cfg, head) {
            Ok(true) => Ok(Next::Head),
            Ok(false) => Ok(Next::NeedMore),
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// [`decode`](Self::decode) between requests: a head, or more input needed.
    #[inline(always)]
    fn head(&mut self, input: &[u8], cfg: &Config) -> Result<(usize, Event), HttpError> {
        let mut head = RawHead::EMPTY;
        Ok(match self.head_into(input, cfg, &mut head)? {
            true => (head.len, Event::Head(head)),
            false => (0, Event::NeedMore),
        })
    }

    /// A head into `head` (`true`), or more input needed (`false`).
    #[inline(always)]
    fn head_into(
        &mut self,
        input: &[u8],
        cfg: &Config,
        head: &mut RawHead,
    ) -> Result<bool, HttpError> {
        // The gate is asked only once a head was found unfinished: the common head
        // arrives whole and is parsed at the first look.
        if input.is_empty() || (self.gate.is_waiting() && !self.gate.should_parse(input, cfg)) {
            return Ok(false);
        }
        if !scan_head_into(input, cfg, head)? {
            self.gate.unfinished(input.len());
            return Ok(false);
        }
        self.gate.reset();
        self.start_body(head.body, cfg)?;
        Ok(true)
    }

    fn start_body(&mut self, body: BodyKind, cfg: &Config) -> Result<(), HttpError> {
        match body {
            BodyKind::None => {}
            BodyKind::Length(n) if n > cfg.max_body_size => {
                return Err(HttpError::new(
                    ErrorClass::PayloadTooLarge,
                    "body too large",
                ))
            }
            kind => self.state = State::Body(BodyDecoder::new(kind, cfg)),
        }
        Ok(())
    }

    /// The body being decoded, if the decoder is inside one.
    pub fn body(&self) -> Option<&BodyDecoder> {
        match &self.state {
            State::Body(b) => Some(b),
            _ => None,
        }
    }

    /// Whether the decoder is between requests (no head begun, no body left).
    pub fn is_between_requests(&self) -> bool {
        matches!(self.state, State::Head)
    }
}
