//! The connections' byte buffers (responses being written, input that straddles two
//! receives, TLS records), lent by a per-core pool and given back as soon as they are
//! empty: an idle connection holds none, and a busy one reuses the same few instead of
//! allocating per request.
//!
//! Each core counts the buffers it has lent ([`buffers_in_use`]): the count the tests
//! read to show that idle connections own no buffer.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::ops::{Deref, DerefMut};

use ringway::buf::IoBuf;

/// Capacity of a fresh buffer: a batch of small responses fits without growing.
const FRESH: usize = 4096;
/// Buffers that grew beyond this are freed instead of kept (one large response must
/// not pin its memory in the pool).
const KEEP_UP_TO: usize = 64 * 1024;
/// At most this many free buffers are kept per core.
const KEEP_COUNT: usize = 256;

thread_local! {
    static FREE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static LENT: Cell<usize> = const { Cell::new(0) };
}

/// Buffers of this crate's connections lent on the calling core and not yet given back
/// (the pool's free buffers do not count). A server whose connections are all idle
/// has 0.
pub fn buffers_in_use() -> usize {
    LENT.with(Cell::get)
}

/// A byte buffer lent by the core's pool; it goes back when dropped.
pub(crate) struct PooledBuf {
    v: Vec<u8>,
}

impl PooledBuf {
    /// Borrows an empty buffer from the pool (allocating one if the pool is empty).
    pub(crate) fn take() -> PooledBuf {
        LENT.with(|n| n.set(n.get() + 1));
        let v = FREE
            .try_with(|f| f.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_else(|| Vec::with_capacity(FRESH));
        PooledBuf { v }
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        LENT.with(|n| n.set(n.get().saturating_sub(1)));
        let mut v = std::mem::take(&mut self.v);
        if v.capacity() <= KEEP_UP_TO {
            v.clear();
            let _ = FREE.try_with(|f| {
                let mut f = f.borrow_mut();
                if f.len() < KEEP_COUNT {
                    f.push(v);
                }
            });
        }
    }
}

impl Deref for PooledBuf {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.v
    }
}

impl DerefMut for PooledBuf {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.v
    }
}

impl fmt::Debug for PooledBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PooledBuf({} bytes)", self.v.len())
    }
}

// SAFETY: the bytes live in the Vec's heap block, which does not move when the
// PooledBuf moves and is not touched while the runtime holds the buffer for a write.
unsafe impl IoBuf for PooledBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.v.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.v.len()
    }
    fn bytes_total(&self) -> usize {
        self.v.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_buffers_are_counted_and_reused() {
        let before = buffers_in_use();
        let mut a = PooledBuf::take();
        a.extend_from_slice(b"hello");
        let ptr = a.as_ptr();
        assert_eq!(buffers_in_use(), before + 1);
        drop(a);
        assert_eq!(buffers_in_use(), before);
        let b = PooledBuf::take();
        assert!(b.is_empty(), "given back empty");
        assert_eq!(b.as_ptr(), ptr, "the same block comes back");
        drop(b);
        // One that grew large is freed, not kept.
        let mut big = PooledBuf::take();
        big.reserve(KEEP_UP_TO * 2);
        drop(big);
        FREE.with(|f| assert!(f.borrow().iter().all(|v| v.capacity() <= KEEP_UP_TO)));
        assert_eq!(buffers_in_use(), before);
    }
}
