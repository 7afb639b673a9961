//! Whole-buffer request decoding without I/O: the server's own [`RequestDecoder`]
//! applied to a byte string, with the requests collected as `http` types. The fuzz
//! target and tests use it to ask "what would a connection that received these bytes
//! serve?".

use crate::config::Config;
use crate::decoder::{Event, RequestDecoder};
use crate::error::HttpError;
use crate::head::Head;

/// One request found in a buffer.
#[derive(Debug, Clone)]
pub struct DecodedRequest {
    /// Its head.
    pub head: Head,
    /// Its body.
    pub body: Vec<u8>,
}

/// What a buffer held.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    /// The requests that would be served, in order.
    pub requests: Vec<DecodedRequest>,
    /// The error that ends the connection, if any.
    pub error: Option<HttpError>,
    /// The buffer ended inside a request (more bytes needed).
    pub incomplete: bool,
    /// Bytes not looked at because the connection closes before them.
    pub ignored: usize,
}

/// Decodes every request in `buf` as one connection would.
pub fn decode_stream(buf: &[u8], cfg: &Config) -> Stream {
    let mut s = Stream::default();
    let mut decoder = RequestDecoder::new();
    let mut pos = 0;
    let mut current: Option<DecodedRequest> = None;
    loop {
        let (used, event) = match decoder.decode(&buf[pos..], cfg) {
            Ok(r) => r,
            Err(e) => {
                s.error = Some(e);
                return s;
            }
        };
        let done = match event {
            Event::Head(raw) => match raw.to_head(&buf[pos..]) {
                Ok(head) => {
                    let body = raw.body != crate::BodyKind::None;
                    current = Some(DecodedRequest {
                        head,
                        body: Vec::new(),
                    });
                    !body
                }
                Err(e) => {
                    s.error = Some(e);
                    return s;
                }
            },
            Event::Data(a, b) => {
                if let Some(r) = current.as_mut() {
                    r.body.extend_from_slice(&buf[pos + a..pos + b]);
                }
                false
            }
            Event::BodyEnd => true,
            Event::NeedMore => {
                s.incomplete = pos + used < buf.len() || current.is_some();
                return s;
            }
        };
        pos += used;
        if done {
            if let Some(r) = current.take() {
                let keep_alive = r.head.keep_alive;
                s.requests.push(r);
                if !keep_alive {
                    s.ignored = buf.len() - pos;
                    return s;
                }
            }
        }
    }
}
