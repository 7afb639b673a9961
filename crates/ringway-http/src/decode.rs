//! Whole-buffer request decoding without I/O: the same head parser, framing rules and
//! chunked decoder the connection uses, applied to a byte string. The property tests
//! and the fuzz target use it; the connection drives the same pieces incrementally.

use crate::chunked::{ChunkedDecoder, Decoded};
use crate::config::Config;
use crate::error::{ErrorClass, HttpError};
use crate::framing::BodyKind;
use crate::head::{parse_head, Head, Parsed};

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
    let mut pos = 0;
    while pos < buf.len() {
        let (head, n) = match parse_head(&buf[pos..], cfg) {
            Err(e) => {
                s.error = Some(e);
                return s;
            }
            Ok(Parsed::Partial) => {
                s.incomplete = true;
                return s;
            }
            Ok(Parsed::Complete(h, n)) => (h, n),
        };
        pos += n;
        let mut body = Vec::new();
        match head.body {
            BodyKind::None => {}
            BodyKind::Length(n) if n > cfg.max_body_size => {
                s.error = Some(HttpError::new(
                    ErrorClass::PayloadTooLarge,
                    "body too large",
                ));
                return s;
            }
            BodyKind::Length(n) => {
                let n = n as usize;
                if buf.len() - pos < n {
                    s.incomplete = true;
                    return s;
                }
                body.extend_from_slice(&buf[pos..pos + n]);
                pos += n;
            }
            BodyKind::Chunked => {
                let mut d = ChunkedDecoder::new(cfg.max_chunk_ext, cfg.max_trailer_size);
                loop {
                    match d.decode(&buf[pos..]) {
                        Err(e) => {
                            s.error = Some(e);
                            return s;
                        }
                        Ok((n, Decoded::Data(a, b))) => {
                            if (body.len() + b - a) as u64 > cfg.max_body_size {
                                s.error = Some(HttpError::new(
                                    ErrorClass::PayloadTooLarge,
                                    "body too large",
                                ));
                                return s;
                            }
                            body.extend_from_slice(&buf[pos + a..pos + b]);
                            pos += n;
                        }
                        Ok((n, Decoded::Done)) => {
                            pos += n;
                            break;
                        }
                        Ok((_, Decoded::NeedMore)) => {
                            s.incomplete = true;
                            return s;
                        }
                    }
                }
            }
        }
        let keep = head.keep_alive;
        s.requests.push(DecodedRequest { head: *head, body });
        if !keep {
            s.ignored = buf.len() - pos;
            return s;
        }
    }
    s
}
