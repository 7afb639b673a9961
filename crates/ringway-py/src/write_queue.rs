//! A transport's outgoing bytes: the chunks `write()` was given, in order, sent as one
//! vectored send per loop turn and consumed by however many bytes the kernel took.
//!
//! A chunk is a pointer and a length plus the value that owns the memory (a
//! Python `bytes` object, whose buffer never moves, or an owned copy of a mutable
//! buffer), so `write(bytes)` copies nothing. While a send is in flight its iovecs point
//! at the front chunks; new writes only append, which never moves existing chunks'
//! memory. Sans-IO: the transport does the sending.

use std::collections::VecDeque;

/// Most iovecs in one `sendmsg` (`IOV_MAX` on Linux).
pub const MAX_IOVECS: usize = 1024;

struct Chunk<K> {
    ptr: *const u8,
    len: usize,
    /// Owns the memory at `ptr`; dropped with the chunk.
    _owner: K,
}

/// Pending outgoing bytes, oldest first.
pub struct WriteQueue<K> {
    chunks: VecDeque<Chunk<K>>,
    /// Bytes of the front chunk already sent.
    head_offset: usize,
    total: usize,
}

impl<K> std::fmt::Debug for WriteQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteQueue")
            .field("chunks", &self.chunks.len())
            .field("bytes", &self.total)
            .finish_non_exhaustive()
    }
}

impl<K> Default for WriteQueue<K> {
    fn default() -> Self {
        WriteQueue {
            chunks: VecDeque::new(),
            head_offset: 0,
            total: 0,
        }
    }
}

impl<K> WriteQueue<K> {
    /// Appends `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must stay valid for reads of `len` bytes, and unchanged, for as long as
    /// `owner` is alive (the queue drops `owner` only once the bytes are consumed or the
    /// queue is cleared).
    pub unsafe fn push(&mut self, ptr: *const u8, len: usize, owner: K) {
        if len == 0 {
            return;
        }
        self.total += len;
        self.chunks.push_back(Chunk {
            ptr,
            len,
            _owner: owner,
        });
    }

    /// Bytes not yet sent.
    pub fn len(&self) -> usize {
        self.total
    }

    /// True if nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Chunks waiting (the first may be partly sent).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Replaces `out` with iovecs for the oldest unsent bytes, at most `max` of them;
    /// returns the bytes they cover.
    pub fn fill_iovecs(&self, out: &mut Vec<libc::iovec>, max: usize) -> usize {
        out.clear();
        let mut bytes = 0;
        for (i, c) in self.chunks.iter().take(max).enumerate() {
            let skip = if i == 0 { self.head_offset } else { 0 };
            out.push(libc::iovec {
                // SAFETY: `skip < c.len` (fully sent chunks are removed), so the pointer
                // stays inside the chunk.
                iov_base: unsafe { c.ptr.add(skip) } as *mut libc::c_void,
                iov_len: c.len - skip,
            });
            bytes += c.len - skip;
        }
        bytes
    }

    /// Forgets the first `n` bytes (the kernel took them); drops chunks fully sent.
    pub fn consume(&mut self, mut n: usize) {
        assert!(
            n <= self.total,
            "consumed {n} of {} queued bytes",
            self.total
        );
        self.total -= n;
        while n > 0 {
            let front = self.chunks.front().expect("bytes remain");
            let left = front.len - self.head_offset;
            if n >= left {
                n -= left;
                self.chunks.pop_front();
                self.head_offset = 0;
            } else {
                self.head_offset += n;
                n = 0;
            }
        }
    }

    /// Drops everything (abort).
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.head_offset = 0;
        self.total = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(q: &mut WriteQueue<Vec<u8>>, data: &[u8]) {
        let v = data.to_vec();
        // SAFETY: the Vec's heap block does not move when the Vec is moved into the queue.
        unsafe { q.push(v.as_ptr(), v.len(), v) };
    }

    fn gather(iov: &[libc::iovec]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in iov {
            // SAFETY: the iovecs point into live chunks of the queue.
            out.extend_from_slice(unsafe {
                std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len)
            });
        }
        out
    }

    #[test]
    fn short_sends_resume_mid_chunk_in_order() {
        let mut q = WriteQueue::default();
        push(&mut q, b"hello ");
        push(&mut q, b"");
        push(&mut q, b"world");
        assert_eq!((q.len(), q.chunk_count()), (11, 2));
        let mut iov = Vec::new();
        assert_eq!(q.fill_iovecs(&mut iov, MAX_IOVECS), 11);
        assert_eq!(gather(&iov), b"hello world");
        q.consume(3);
        q.fill_iovecs(&mut iov, MAX_IOVECS);
        assert_eq!(gather(&iov), b"lo world");
        q.consume(5);
        q.fill_iovecs(&mut iov, 1);
        assert_eq!(gather(&iov), b"rld");
        push(&mut q, b"!");
        q.consume(3);
        q.fill_iovecs(&mut iov, MAX_IOVECS);
        assert_eq!(gather(&iov), b"!");
        q.consume(1);
        assert!(q.is_empty() && q.chunk_count() == 0);
    }

    #[test]
    fn iovecs_are_capped() {
        let mut q = WriteQueue::default();
        for i in 0..2000u32 {
            push(&mut q, &i.to_le_bytes());
        }
        let mut iov = Vec::new();
        assert_eq!(q.fill_iovecs(&mut iov, MAX_IOVECS), 4 * MAX_IOVECS);
        assert_eq!(iov.len(), MAX_IOVECS);
        q.consume(4 * MAX_IOVECS);
        assert_eq!(q.len(), 4 * (2000 - MAX_IOVECS));
    }

    #[test]
    #[should_panic(expected = "consumed")]
    fn consuming_more_than_queued_is_a_bug() {
        let mut q = WriteQueue::default();
        push(&mut q, b"ab");
        q.consume(3);
    }
}
