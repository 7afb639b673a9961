//! [`Body`]: the body of requests and responses, either whole bytes or a stream of
//! chunks (with or without a known length).

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};

/// A source of body chunks, polled by the connection as it sends.
pub trait BodyStream {
    /// The next chunk, `None` at the end.
    fn poll_chunk(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>>;

    /// If the rest of the stream is a region of a file: the file and the region
    /// (`start..end`). A plain TCP connection may then send it with `splice` instead of
    /// polling chunks (see [`Config::splice_min`](crate::Config::splice_min)).
    fn file_region(&self) -> Option<(&ringway::fs::File, u64, u64)> {
        None
    }
}

/// A [`BodyStream`] from a closure.
pub struct FnStream<F>(F);

impl<F> fmt::Debug for FnStream<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnStream")
    }
}

impl<F> BodyStream for FnStream<F>
where
    F: FnMut(&mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> + Unpin,
{
    fn poll_chunk(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Bytes>>> {
        (self.0)(cx)
    }
}

/// What a [`Body`] holds.
pub(crate) enum Contents {
    /// Nothing.
    Empty,
    /// All of it, in one piece.
    Full(Bytes),
    /// A stream of chunks, of `len` bytes in all when that is known.
    Stream {
        len: Option<u64>,
        stream: Pin<Box<dyn BodyStream>>,
    },
}

/// A request or response body.
///
/// A request body that was already whole in the input arrives as one piece; any other
/// is streamed to the handler as it is received and framed ([`Body::chunk`]), bounded
/// by [`Config::max_body_size`](crate::Config::max_body_size), with at most 256 KiB
/// queued ahead of the handler. A body the handler does not read is still read and
/// framed (then dropped) after it answers. Response bodies may be whole or streamed: a
/// stream with a known length is sent with `Content-Length`, one without is sent chunked
/// (or, to an HTTP/1.0 client, delimited by closing).
pub struct Body {
    pub(crate) contents: Contents,
}

impl Body {
    /// No body.
    pub fn empty() -> Body {
        Body {
            contents: Contents::Empty,
        }
    }

    /// A whole body.
    pub fn full(bytes: impl Into<Bytes>) -> Body {
        let b = bytes.into();
        if b.is_empty() {
            Body::empty()
        } else {
            Body {
                contents: Contents::Full(b),
            }
        }
    }

    /// A streamed body; `len` is its exact length when known.
    pub fn from_stream(len: Option<u64>, stream: impl BodyStream + 'static) -> Body {
        Body {
            contents: Contents::Stream {
                len,
                stream: Box::pin(stream),
            },
        }
    }

    /// A streamed body produced by a closure polled for each chunk.
    pub fn from_fn<F>(len: Option<u64>, f: F) -> Body
    where
        F: FnMut(&mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> + Unpin + 'static,
    {
        Body::from_stream(len, FnStream(f))
    }

    /// The exact length, if known.
    pub fn len(&self) -> Option<u64> {
        match &self.contents {
            Contents::Empty => Some(0),
            Contents::Full(b) => Some(b.len() as u64),
            Contents::Stream { len, .. } => *len,
        }
    }

    /// Whether the body is known to be empty.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The next chunk, `None` at the end.
    pub async fn chunk(&mut self) -> Option<io::Result<Bytes>> {
        match std::mem::replace(&mut self.contents, Contents::Empty) {
            Contents::Empty => None,
            Contents::Full(b) => Some(Ok(b)),
            Contents::Stream { len, mut stream } => {
                let r = poll_fn(|cx| stream.as_mut().poll_chunk(cx)).await;
                if r.is_some() {
                    self.contents = Contents::Stream { len, stream };
                }
                r
            }
        }
    }

    /// The whole body.
    pub async fn bytes(mut self) -> io::Result<Bytes> {
        if let Contents::Full(b) = self.contents {
            return Ok(b);
        }
        let mut all = BytesMut::new();
        while let Some(c) = self.chunk().await {
            all.extend_from_slice(&c?);
        }
        Ok(all.freeze())
    }
}

impl Default for Body {
    fn default() -> Self {
        Body::empty()
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.contents {
            Contents::Empty => f.write_str("Body::Empty"),
            Contents::Full(b) => write!(f, "Body::Full({} bytes)", b.len()),
            Contents::Stream { len, .. } => write!(f, "Body::Stream(len {len:?})"),
        }
    }
}

macro_rules! from_impl {
    ($($t:ty),*) => {$(
        impl From<$t> for Body {
            fn from(v: $t) -> Body {
                Body::full(Bytes::from(v))
            }
        }
    )*};
}
from_impl!(&'static str, &'static [u8], String, Vec<u8>, Bytes);
