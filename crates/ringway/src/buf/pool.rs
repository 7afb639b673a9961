//! The per-core provided-buffer pool.
//!
//! A multishot receive does not name a buffer: the kernel picks one from a pool when data
//! arrives, so an idle connection holds no memory. On io_uring the pool is a *provided
//! buffer ring* registered with the ring (the kernel takes buffers from its head, we put
//! them back at its tail); on epoll it is a plain free list that the driver takes from
//! itself. Either way a buffer handed to the program is a [`PoolBuf`], and dropping it
//! puts it back: that is the only way buffers return, so none can be lost.
//!
//! When the pool runs dry the kernel ends a multishot receive with `ENOBUFS`; the driver
//! parks that receive and re-arms it once a buffer has come back (see `returned`).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::rc::Rc;

use io_uring::types::BufRingEntry;

/// A pool of equally sized buffers owned by one core. Cheap to clone (reference counted).
#[derive(Clone)]
pub struct BufferPool {
    inner: Rc<PoolInner>,
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("stats", &self.stats())
            .field("ring", &self.ring_addr().is_some())
            .finish()
    }
}

/// Counts that tests and metrics read: a pool at rest has `in_use == 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers in the pool.
    pub total: usize,
    /// Buffers currently held by the program (as `PoolBuf`s).
    pub in_use: usize,
    /// Size of each buffer in bytes.
    pub buf_size: usize,
}

struct PoolInner {
    /// `count * buf_size` bytes; buffer `bid` starts at `bid * buf_size`.
    mem: NonNull<u8>,
    buf_size: usize,
    count: u16,
    in_use: Cell<usize>,
    /// Set whenever a buffer comes back; the driver clears it when it re-arms starved
    /// receives.
    returned: Cell<bool>,
    store: Store,
}

enum Store {
    /// io_uring provided buffer ring: `count` entries, page aligned, mmapped.
    Ring {
        base: NonNull<BufRingEntry>,
        map_len: usize,
        /// Our copy of the tail; published to the kernel with a release store.
        tail: Cell<u16>,
    },
    /// epoll: the driver takes and returns buffers itself.
    List(RefCell<Vec<u16>>),
}

impl BufferPool {
    /// A pool backed by a provided-buffer ring for io_uring. `count` must be a power of
    /// two no larger than 32768. The caller registers [`ring_addr`](Self::ring_addr).
    pub(crate) fn new_ring(count: u16, buf_size: usize) -> io::Result<Self> {
        if !count.is_power_of_two() || count > 32768 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("buffer pool size {count} must be a power of two up to 32768"),
            ));
        }
        let map_len = count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping has no preconditions; we check the result.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(ptr.cast::<BufRingEntry>()).expect("mmap returned null");
        let pool = Self::with_store(
            count,
            buf_size,
            Store::Ring {
                base,
                map_len,
                tail: Cell::new(0),
            },
        );
        for bid in 0..count {
            pool.inner.push_ring(bid);
        }
        pool.inner.publish_tail();
        Ok(pool)
    }

    /// A pool backed by a free list, for the epoll driver.
    pub(crate) fn new_list(count: u16, buf_size: usize) -> Self {
        let free = (0..count).rev().collect();
        Self::with_store(count, buf_size, Store::List(RefCell::new(free)))
    }

    fn with_store(count: u16, buf_size: usize, store: Store) -> Self {
        assert!(count > 0 && buf_size > 0, "empty buffer pool");
        // A buffer's length is kept as a `u32` (and the kernel's ring takes no more).
        assert!(
            buf_size <= u32::MAX as usize,
            "pool buffers are at most 4 GiB"
        );
        let total = count as usize * buf_size;
        let mem: Box<[u8]> = vec![0u8; total].into_boxed_slice();
        let mem = NonNull::new(Box::into_raw(mem).cast::<u8>()).expect("box is non-null");
        BufferPool {
            inner: Rc::new(PoolInner {
                mem,
                buf_size,
                count,
                in_use: Cell::new(0),
                returned: Cell::new(false),
                store,
            }),
        }
    }

    /// The ring's address for `register_buf_ring`, if this is a ring pool.
    pub(crate) fn ring_addr(&self) -> Option<u64> {
        match &self.inner.store {
            Store::Ring { base, .. } => Some(base.as_ptr() as u64),
            Store::List(_) => None,
        }
    }

    /// The ring's first entry (tests look at what the kernel would see).
    #[cfg(test)]
    fn ring_base(&self) -> *const BufRingEntry {
        match &self.inner.store {
            Store::Ring { base, .. } => base.as_ptr(),
            Store::List(_) => std::ptr::null(),
        }
    }

    /// Number of buffers.
    pub fn count(&self) -> u16 {
        self.inner.count
    }

    /// Size of each buffer.
    pub fn buf_size(&self) -> usize {
        self.inner.buf_size
    }

    /// Current counts.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            total: self.inner.count as usize,
            in_use: self.inner.in_use.get(),
            buf_size: self.inner.buf_size,
        }
    }

    /// Wraps buffer `bid`, which the kernel filled with `len` bytes, as a `PoolBuf`.
    pub(crate) fn provided(&self, bid: u16, len: usize) -> PoolBuf {
        debug_assert!(bid < self.inner.count && len <= self.inner.buf_size);
        self.inner.in_use.set(self.inner.in_use.get() + 1);
        PoolBuf {
            store: BufStore::Pool {
                pool: self.inner.clone(),
                bid,
                len: len as u32,
            },
        }
    }

    /// epoll: takes a free buffer, returning its id and memory. `None` when dry.
    pub(crate) fn take_free(&self) -> Option<(u16, *mut u8)> {
        match &self.inner.store {
            Store::List(free) => {
                let bid = free.borrow_mut().pop()?;
                Some((bid, self.inner.buf_ptr(bid)))
            }
            Store::Ring { .. } => None,
        }
    }

    /// Gives back a buffer that was taken but not handed out (a failed read, or a
    /// completion for an operation whose future was dropped).
    pub(crate) fn recycle(&self, bid: u16) {
        self.inner.give_back(bid);
    }

    /// True if a buffer came back since the last call; clears the mark.
    pub(crate) fn take_returned(&self) -> bool {
        self.inner.returned.replace(false)
    }

    /// Sets the mark again (starved receives are left that the driver will re-arm on a
    /// later turn).
    pub(crate) fn mark_returned(&self) {
        self.inner.returned.set(true);
    }

    /// Buffers not held by the program. On io_uring this counts the ones the kernel has
    /// picked but whose completions are not reaped yet, so it may be high by a few.
    pub(crate) fn free_count(&self) -> usize {
        match &self.inner.store {
            Store::List(free) => free.borrow().len(),
            Store::Ring { .. } => self.inner.count as usize - self.inner.in_use.get(),
        }
    }
}

impl PoolInner {
    #[inline]
    fn buf_ptr(&self, bid: u16) -> *mut u8 {
        // SAFETY: bid < count, so the offset stays inside the allocation.
        unsafe { self.mem.as_ptr().add(bid as usize * self.buf_size) }
    }

    #[inline]
    fn give_back(&self, bid: u16) {
        match &self.store {
            Store::Ring { base, tail, .. } => {
                let at = tail.get();
                // SAFETY: as in `push_ring` and `publish_tail`: the entry at our tail is
                // past the published tail (the kernel does not read it), inside the
                // mapping; the release store of the tail publishes it. Its length is
                // `buf_size` already: `new_ring` wrote every entry once, all buffers
                // have that length, and the kernel never writes an entry (the ring is
                // registered without incremental consumption, flags 0).
                unsafe {
                    let entry = &mut *base.as_ptr().add((at & (self.count - 1)) as usize);
                    debug_assert_eq!(entry.len(), self.buf_size as u32);
                    entry.set_addr(self.buf_ptr(bid) as u64);
                    entry.set_bid(bid);
                    let next = at.wrapping_add(1);
                    tail.set(next);
                    let tail_ptr =
                        BufRingEntry::tail(base.as_ptr()) as *const std::sync::atomic::AtomicU16;
                    (*tail_ptr).store(next, std::sync::atomic::Ordering::Release);
                }
            }
            Store::List(free) => free.borrow_mut().push(bid),
        }
        self.returned.set(true);
    }

    /// Writes the entry for `bid` at our tail (not yet visible to the kernel).
    fn push_ring(&self, bid: u16) {
        let Store::Ring { base, tail, .. } = &self.store else {
            unreachable!("push_ring on a list pool")
        };
        let mask = self.count - 1;
        let idx = tail.get() & mask;
        // SAFETY: idx < count, inside the mapping; the kernel only reads entries between
        // its head and the published tail, and this one is past the published tail.
        unsafe {
            let entry = &mut *base.as_ptr().add(idx as usize);
            entry.set_addr(self.buf_ptr(bid) as u64);
            entry.set_len(self.buf_size as u32);
            entry.set_bid(bid);
        }
        tail.set(tail.get().wrapping_add(1));
    }

    /// Makes every pushed entry visible to the kernel.
    fn publish_tail(&self) {
        let Store::Ring { base, tail, .. } = &self.store else {
            return;
        };
        // SAFETY: the tail field lives in the first entry of our mapping; the kernel reads
        // it with acquire semantics, so a release store publishes the entries before it.
        unsafe {
            let tail_ptr = BufRingEntry::tail(base.as_ptr()) as *const std::sync::atomic::AtomicU16;
            (*tail_ptr).store(tail.get(), std::sync::atomic::Ordering::Release);
        }
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        let total = self.count as usize * self.buf_size;
        // SAFETY: `mem` came from Box::into_raw of a boxed slice of exactly `total` bytes.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.mem.as_ptr(),
                total,
            )))
        };
        if let Store::Ring { base, map_len, .. } = &self.store {
            // SAFETY: the mapping was made by us with this length. The pool outlives the
            // ring's registration: the driver owns a clone and unregisters on drop, and
            // the ring fd is closed before this last reference goes.
            unsafe { libc::munmap(base.as_ptr().cast(), *map_len) };
        }
    }
}

/// One buffer of the pool holding received bytes. Dereferences to those bytes; goes back
/// to the pool (and to the kernel's buffer ring) when dropped.
///
/// A buffer whose receive has fallen behind its reader (see the driver's `BACKLOG`) is
/// copied out of the pool into memory of its own, so that a stalled reader never holds
/// the core's pool: `pool_index` is then `None`.
pub struct PoolBuf {
    store: BufStore,
}

/// Where a [`PoolBuf`]'s bytes are, and how many (`len`, at most the pool's buffer
/// size, which fits in a `u32`). Two words in all: a received buffer is moved several
/// times on its way to its reader (and back to the driver, for a send), and as a
/// `Poll<Option<io::Result<PoolBuf>>>` it comes back in registers.
enum BufStore {
    /// Buffer `bid` of `pool`.
    Pool {
        pool: Rc<PoolInner>,
        bid: u16,
        len: u32,
    },
    /// A copy out of the pool (boxed twice to keep the handle two words: a rare path).
    Own { bytes: Box<Box<[u8]>>, len: u32 },
}

impl PoolBuf {
    /// The buffer's index in its pool, or `None` for a buffer copied out of it.
    pub fn pool_index(&self) -> Option<u16> {
        match &self.store {
            BufStore::Pool { bid, .. } => Some(*bid),
            BufStore::Own { .. } => None,
        }
    }

    /// Shortens the visible bytes to `len` (no effect if `len` is larger).
    pub fn truncate(&mut self, len: usize) {
        let (BufStore::Pool { len: filled, .. } | BufStore::Own { len: filled, .. }) =
            &mut self.store;
        if len < *filled as usize {
            *filled = len as u32;
        }
    }

    /// How many bytes it holds.
    #[inline]
    fn filled(&self) -> usize {
        let (BufStore::Pool { len, .. } | BufStore::Own { len, .. }) = &self.store;
        *len as usize
    }

    /// Copies the bytes out of the pool into memory of their own and gives the pool
    /// buffer back at once (the bytes stay the same).
    pub(crate) fn unshare(&mut self) {
        if let BufStore::Pool { len, .. } = self.store {
            let own = BufStore::Own {
                bytes: Box::new(self[..].into()),
                len,
            };
            let old = std::mem::replace(&mut self.store, own);
            if let BufStore::Pool { pool, bid, .. } = old {
                pool.in_use.set(pool.in_use.get() - 1);
                pool.give_back(bid);
            }
        }
    }

    fn ptr(&self) -> *mut u8 {
        match &self.store {
            BufStore::Pool { pool, bid, .. } => pool.buf_ptr(*bid),
            BufStore::Own { bytes, .. } => bytes.as_ptr() as *mut u8,
        }
    }

    fn capacity(&self) -> usize {
        match &self.store {
            BufStore::Pool { pool, .. } => pool.buf_size,
            BufStore::Own { bytes, .. } => bytes.len(),
        }
    }
}

impl Deref for PoolBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of the buffer were written by the kernel (or the
        // epoll driver, or copied), and no one else touches it while we hold it.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.filled()) }
    }
}

impl DerefMut for PoolBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for deref; we hold the only handle to this buffer.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.filled()) }
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        if let BufStore::Pool { pool, bid, .. } = &self.store {
            pool.in_use.set(pool.in_use.get() - 1);
            pool.give_back(*bid);
        }
    }
}

impl fmt::Debug for PoolBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBuf")
            .field("pool_index", &self.pool_index())
            .field("len", &self.filled())
            .finish()
    }
}

// SAFETY: the buffer's memory is owned by the pool, which this handle keeps alive; its
// address does not change.
unsafe impl super::IoBuf for PoolBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.ptr()
    }
    fn bytes_init(&self) -> usize {
        self.filled()
    }
    fn bytes_total(&self) -> usize {
        self.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_handle_is_two_words_and_keeps_its_length_through_a_copy_out() {
        use std::mem::size_of;
        assert_eq!(size_of::<PoolBuf>(), 2 * size_of::<usize>());
        assert_eq!(
            size_of::<Option<io::Result<PoolBuf>>>(),
            2 * size_of::<usize>(),
            "what a receive stream yields fits in two registers"
        );
        let pool = BufferPool::new_list(2, 16);
        let (bid, ptr) = pool.take_free().expect("a free buffer");
        // SAFETY: the buffer is ours (taken) and 16 bytes long.
        unsafe { std::ptr::copy_nonoverlapping(b"hello world".as_ptr(), ptr, 11) };
        let mut b = pool.provided(bid, 11);
        b.truncate(20);
        assert_eq!(&b[..], b"hello world", "a longer truncate changes nothing");
        b.truncate(5);
        assert_eq!(&b[..], b"hello");
        b.unshare();
        assert_eq!(b.pool_index(), None);
        assert_eq!(&b[..], b"hello", "copied out with its length");
        assert_eq!(pool.stats().in_use, 0, "the pool buffer went back");
    }

    #[test]
    fn list_pool_hands_out_each_buffer_once_and_takes_it_back() {
        let pool = BufferPool::new_list(4, 16);
        let mut taken = Vec::new();
        while let Some((bid, ptr)) = pool.take_free() {
            // SAFETY: the driver writes into a free buffer before wrapping it.
            unsafe { std::ptr::write_bytes(ptr, bid as u8, 16) };
            taken.push(pool.provided(bid, 10));
        }
        assert_eq!(taken.len(), 4);
        assert_eq!(pool.stats().in_use, 4);
        for b in &taken {
            assert_eq!(b.len(), 10);
            assert!(
                b.iter().all(|&x| Some(x as u16) == b.pool_index()),
                "buffers do not overlap"
            );
        }
        assert!(!pool.take_returned());
        drop(taken);
        assert!(pool.take_returned());
        assert_eq!(pool.stats().in_use, 0);
        assert!(pool.take_free().is_some());
    }

    #[test]
    fn ring_pool_publishes_every_buffer_and_recycles_at_the_tail() {
        let pool = BufferPool::new_ring(8, 32).unwrap();
        let base = pool.ring_base();
        assert!(pool.ring_addr().is_some());
        // SAFETY: the ring has 8 entries; the tail lives in the first one.
        unsafe {
            let tail = *BufRingEntry::tail(base);
            assert_eq!(tail, 8, "all buffers were given to the kernel");
            let ids: Vec<u16> = (0..8).map(|i| (*base.add(i)).bid()).collect();
            assert_eq!(ids, (0..8).collect::<Vec<_>>());
        }
        // The kernel picked buffer 3 and wrote 5 bytes; the program drops it.
        let b = pool.provided(3, 5);
        assert_eq!(pool.stats().in_use, 1);
        drop(b);
        // SAFETY: as above.
        unsafe {
            assert_eq!(*BufRingEntry::tail(base), 9);
            let e = &*base.add(8 % 8);
            assert_eq!(e.bid(), 3, "the returned buffer went in at the old tail");
            assert_eq!(e.len(), 32);
        }
        assert_eq!(pool.stats().in_use, 0);
        assert!(BufferPool::new_ring(6, 32).is_err(), "not a power of two");
    }
}
