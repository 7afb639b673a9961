//! A file range read in chunks through the runtime, for files whose bytes are not kept.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;
use ringway::fs::File;

use super::cache::OpenFile;
use crate::body::BodyStream;

/// Bytes read per chunk.
const CHUNK: usize = 64 * 1024;

type ReadFut = ringway::net::ReadFuture<Vec<u8>>;

/// A file range read in chunks through the runtime.
pub(super) struct FileStream {
    file: Rc<OpenFile>,
    pos: u64,
    end: u64,
    reading: Option<Pin<Box<ReadFut>>>,
}

impl FileStream {
    pub(super) fn new(file: Rc<OpenFile>, pos: u64, end: u64) -> Self {
        FileStream {
            file,
            pos,
            end,
            reading: None,
        }
    }
}

impl BodyStream for FileStream {
    fn poll_chunk(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Bytes>>> {
        let this = &mut *self;
        if this.pos >= this.end {
            return Poll::Ready(None);
        }
        if this.reading.is_none() {
            let want = (this.end - this.pos).min(CHUNK as u64) as usize;
            this.reading = Some(Box::pin(
                this.file.file.read_at(Vec::with_capacity(want), this.pos),
            ));
        }
        let fut = this.reading.as_mut().expect("read in flight");
        let (r, buf) = match fut.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(v) => v,
        };
        this.reading = None;
        match r {
            Ok(0) => Poll::Ready(Some(Err(io::ErrorKind::UnexpectedEof.into()))),
            Ok(n) => {
                this.pos += n as u64;
                Poll::Ready(Some(Ok(Bytes::from(buf))))
            }
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn file_region(&self) -> Option<(&File, u64, u64)> {
        // Not once a read is under way: its bytes would be sent twice.
        self.reading
            .is_none()
            .then_some((&self.file.file, self.pos, self.end))
    }
}
