//! The per-core provided-buffer pool.
//!
//! A multishot receive does not name a buffer: the kernel picks one from a pool when data
//! arrives, so an idle connection holds no memory. On io_uring the pool is a *provided
//! buffer ring* registered with the ring (the kernel takes buffers from its head, we put
//! them back at its tail); on epoll it is a free list that the driver takes from itself.
//!
//! # Incremental consumption
//!
//! A buffer is not used up by one receive. With `IOU_PBUF_RING_INC` (Linux 6.12) the
//! kernel puts each receive's bytes right after the previous receive's in the buffer at
//! the head of the ring, and moves on to the next buffer only once that one is full; the
//! epoll backend does the same in user space. So a few large buffers (64 KiB by default)
//! serve both shapes: a 16 KiB message arrives in one piece, and a thousand 64-byte
//! requests share one buffer instead of taking a thousand (their bytes sit together in
//! memory, warm in the cache). Where the kernel refuses incremental consumption the
//! probe falls back to whole buffers of 4 KiB, as many as fit in the same memory.
//!
//! A [`PoolBuf`] is therefore a *piece* of a buffer: `(buffer id, offset, length)`. A
//! buffer goes back to the ring once the kernel (or the epoll filler) is done with it
//! *and* every piece cut from it has been dropped: each buffer counts its references
//! (the pieces alive, plus one while it may still be written into). Dropping a piece is
//! still the only way bytes return, so none can be lost.
//!
//! When the pool runs dry the kernel ends a multishot receive with `ENOBUFS`; the driver
//! parks that receive and re-arms it once a buffer has come back (see `returned`).
//!
//! # Growing
//!
//! Whole buffers (io_uring's default) are one per receive, so a thousand connections
//! whose requests arrive in one turn take a thousand buffers before any comes back. A
//! pool starts at its count (128) and doubles, up to its capacity (1024 by default,
//! `DriverConfig::pool_buffers_max`), each time receives were parked on it: the ring is
//! registered with the capacity's entries and the memory reserved for it, and a buffer
//! not yet given out is never written, so it costs address space only.
//!
//! # One connection's share
//!
//! A piece pins its whole buffer, however small it is, until it is dropped: ten bytes
//! left unread keep 64 KiB out of the ring. So what one receive may hold is counted in
//! buffers pinned, not in bytes or completions: a multishot receive whose unread pieces
//! pin [`share`](BufferPool::share) buffers (an eighth of the pool,
//! [`POOL_SHARE_DIVISOR`]) is stopped by the driver, its unread pieces are copied out
//! of the pool, and TCP's window holds the rest of that peer's bytes in the socket until
//! its reader has caught up. [`PoolStats::peak_pinned`] shows what was held at most.
//! The share is the driver's [`PoolShare`] (`DriverConfig::pool_share`; `Off` for
//! measuring what it buys).
//!
//! # Many connections' shares
//!
//! The share bounds one receive, not several together: nine readers that do not read,
//! each a little under its share, hold the whole default pool. So when a receive finds
//! the pool dry and no buffer comes back by the next turn, the driver copies out of the
//! pool every piece waiting in a receive's queue and stops those receives until their
//! readers catch up, as the share does (the pool-pressure rule, `driver::pressure`;
//! counted in `DriverStats::pool_pressure_stops` and `pool_reclaimed`).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::rc::Rc;

use io_uring::types::BufRingEntry;

use super::books::Books;
use super::PoolShare;

/// The largest buffer a pool may have: a piece's offset and length are kept in 20 bits
/// each (see [`PoolBuf`]).
pub const MAX_POOL_BUF_SIZE: usize = 512 * 1024;

/// One multishot receive may pin at most `1 / POOL_SHARE_DIVISOR` of its core's pool
/// ([`BufferPool::share`]): with the default pool (128 buffers of 64 KiB, 8 MiB), 16
/// buffers, 1 MiB. Beyond it the driver stops the receive (see the module docs).
pub const POOL_SHARE_DIVISOR: usize = 8;

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
            .field("incremental", &self.is_incremental())
            .finish()
    }
}

/// Counts that tests and metrics read: a pool at rest has `in_use == 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers in the pool.
    pub total: usize,
    /// The most buffers the pool may grow to ([`BufferPool::capacity`]).
    pub capacity: usize,
    /// Pieces of buffers currently held by the program (as `PoolBuf`s).
    pub in_use: usize,
    /// Size of each buffer in bytes.
    pub buf_size: usize,
    /// Buffers the kernel (or the epoll filler) can receive into right now: not pinned
    /// by a piece the program still holds.
    pub free: usize,
    /// Pieces cut since the pool was made: one per receive completion that carried
    /// bytes.
    pub pieces: u64,
    /// Buffers one multishot receive may pin with pieces its reader has not taken
    /// ([`BufferPool::share`]).
    pub share: usize,
    /// The most buffers out of reach of the kernel (or the epoll filler) at once since
    /// the pool was made or [`BufferPool::reset_peak`]: `total - free` at its highest.
    pub peak_pinned: usize,
}

struct PoolInner {
    /// `cap * buf_size` bytes; buffer `bid` starts at `bid * buf_size`. Pages of buffers
    /// not in the pool yet are never touched (and so never resident).
    mem: NonNull<u8>,
    buf_size: usize,
    /// Buffers in the pool: `0..count` (see [`BufferPool::grow`]).
    count: Cell<u16>,
    /// The most buffers the pool may grow to; for a ring, its entries (a power of two).
    cap: u16,
    /// Per buffer, its references and how far it is filled. A copied-out piece's pool
    /// has books of its one buffer too, so that a piece's drop need not ask which kind
    /// of pool it is in.
    books: Books,
    /// `BUF_MORE` on a ring registered with `IOU_PBUF_RING_INC`, otherwise 0: the CQE
    /// flag that says the kernel goes on filling the buffer after a completion.
    more: u32,
    /// Pieces cut, ever.
    pieces: Cell<u64>,
    /// Set whenever a buffer comes back; the driver clears it when it re-arms starved
    /// receives.
    returned: Cell<bool>,
    /// [`BufferPool::share`], set from the driver's [`PoolShare`].
    share: Cell<usize>,
    /// Whether the driver applies the pool-pressure rule ([`BufferPool::relieves_pressure`]).
    relieve: Cell<bool>,
    store: Store,
}

enum Store {
    /// io_uring provided buffer ring: `cap` entries, page aligned, mmapped.
    Ring {
        base: NonNull<BufRingEntry>,
        map_len: usize,
        /// Our copy of the tail; published to the kernel with a release store.
        tail: Cell<u16>,
    },
    /// epoll: the driver fills buffers itself, one at a time (`open`).
    List {
        free: RefCell<Vec<u16>>,
        /// The buffer being filled (`NO_BUF` if none): later receives go on after the
        /// bytes of the earlier ones.
        open: Cell<u16>,
    },
    /// One piece copied out of a pool ([`PoolBuf::unshare`]): the memory is freed with
    /// its last handle.
    Copy,
}

const NO_BUF: u16 = u16::MAX;

/// `IORING_CQE_F_BUF_MORE` (the io-uring crate keeps its constant private): the kernel
/// goes on filling the completion's buffer.
const BUF_MORE: u32 = 1 << 4;

impl BufferPool {
    /// A pool backed by a provided-buffer ring for io_uring: `count` buffers, which
    /// [`grow`](Self::grow) may double up to `cap` (less than `count`: never). `count`
    /// must be a power of two no larger than 32768 (`cap` is rounded up to one),
    /// `buf_size` at most [`MAX_POOL_BUF_SIZE`]. The caller registers
    /// [`ring_addr`](Self::ring_addr) with [`ring_entries`](Self::ring_entries)
    /// entries, with `IOU_PBUF_RING_INC` if `incremental`.
    pub(crate) fn new_ring(
        count: u16,
        cap: u16,
        buf_size: usize,
        incremental: bool,
    ) -> io::Result<Self> {
        if !count.is_power_of_two() || count > 32768 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("buffer pool size {count} must be a power of two up to 32768"),
            ));
        }
        check_size(buf_size)?;
        let cap = cap.max(count).min(32768).next_power_of_two();
        let mem = map_buffers(cap, buf_size)?;
        let map_len = cap as usize * std::mem::size_of::<BufRingEntry>();
        let base = match map_anonymous(map_len) {
            Ok(ptr) => ptr.cast::<BufRingEntry>(),
            Err(e) => {
                // SAFETY: mapped just above with this length, and handed to nobody.
                unsafe { libc::munmap(mem.as_ptr().cast(), cap as usize * buf_size) };
                return Err(e);
            }
        };
        let pool = Self::with_store(
            mem,
            count,
            cap,
            buf_size,
            if incremental { BUF_MORE } else { 0 },
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

    /// A pool backed by a free list, for the epoll driver: `count` buffers, which
    /// [`grow`](Self::grow) may double up to `cap`. `buf_size` is at most
    /// [`MAX_POOL_BUF_SIZE`].
    pub(crate) fn new_list(count: u16, cap: u16, buf_size: usize) -> io::Result<Self> {
        if count == 0 || count == NO_BUF {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("buffer pool size {count} must be between 1 and 65534"),
            ));
        }
        check_size(buf_size)?;
        let cap = cap.clamp(count, NO_BUF - 1);
        let mem = map_buffers(cap, buf_size)?;
        let free = (0..count).rev().collect();
        Ok(Self::with_store(
            mem,
            count,
            cap,
            buf_size,
            0,
            Store::List {
                free: RefCell::new(free),
                open: Cell::new(NO_BUF),
            },
        ))
    }

    /// A pool over `mem`, `cap * buf_size` bytes from [`map_buffers`].
    fn with_store(
        mem: NonNull<u8>,
        count: u16,
        cap: u16,
        buf_size: usize,
        more: u32,
        store: Store,
    ) -> Self {
        assert!(count > 0 && buf_size > 0, "empty buffer pool");
        BufferPool {
            inner: Rc::new(PoolInner::with_mem(mem, buf_size, count, cap, more, store)),
        }
    }

    /// Doubles the pool (up to its [`capacity`](Self::capacity)): the driver's answer
    /// when receives found it dry, before the pool-pressure rule. Many connections
    /// whose receives each take a buffer in one turn (a thousand requests arriving
    /// together on whole buffers) need more buffers than a few fast ones do, and a
    /// buffer that is never given out costs no memory; so the pool starts small and
    /// grows to what the core's traffic takes. False if it is at its capacity already.
    /// The buffers added are given to the kernel (or the free list) at once and the
    /// pool's "a buffer came back" mark is set, so parked receives are re-armed.
    pub(crate) fn grow(&self) -> bool {
        let inner = &self.inner;
        let from = inner.count.get();
        if from >= inner.cap {
            return false;
        }
        let to = from.saturating_mul(2).min(inner.cap);
        inner.books.grow(from, to);
        inner.count.set(to);
        match &inner.store {
            Store::Ring { .. } => {
                for bid in from..to {
                    inner.push_ring(bid);
                }
                inner.publish_tail();
            }
            Store::List { free, .. } => free.borrow_mut().extend((from..to).rev()),
            Store::Copy => unreachable!("a copied-out piece's pool has one buffer"),
        }
        inner.returned.set(true);
        true
    }

    /// The most buffers the pool may grow to (its ring's entries on io_uring).
    pub fn capacity(&self) -> u16 {
        self.inner.cap
    }

    /// Entries of the provided-buffer ring to register: the pool's capacity.
    pub(crate) fn ring_entries(&self) -> u16 {
        self.inner.cap
    }

    /// The ring's address for `register_buf_ring`, if this is a ring pool.
    pub(crate) fn ring_addr(&self) -> Option<u64> {
        match &self.inner.store {
            Store::Ring { base, .. } => Some(base.as_ptr() as u64),
            _ => None,
        }
    }

    /// The ring's first entry (tests look at what the kernel would see).
    #[cfg(test)]
    fn ring_base(&self) -> *const BufRingEntry {
        match &self.inner.store {
            Store::Ring { base, .. } => base.as_ptr(),
            _ => std::ptr::null(),
        }
    }

    /// Whether buffers are consumed incrementally: always on epoll (the driver fills
    /// them itself), on io_uring if the ring was registered with `IOU_PBUF_RING_INC`.
    pub fn is_incremental(&self) -> bool {
        match &self.inner.store {
            Store::Ring { .. } => self.inner.more != 0,
            _ => true,
        }
    }

    /// Number of buffers in the pool now (it grows up to its
    /// [`capacity`](Self::capacity) when receives find it dry).
    pub fn count(&self) -> u16 {
        self.inner.count.get()
    }

    /// Size of each buffer.
    pub fn buf_size(&self) -> usize {
        self.inner.buf_size
    }

    /// How many buffers one multishot receive may pin with pieces its reader has not
    /// taken before the driver stops it: by default `count / POOL_SHARE_DIVISOR` (the
    /// driver's [`PoolShare`]). A pool of fewer than `POOL_SHARE_DIVISOR` buffers is too
    /// small to share out (an eighth of it is less than a buffer): there it is
    /// `usize::MAX`, and only the driver's bound on waiting completions applies, as with
    /// [`PoolShare::Off`]. (Where the kernel refuses incremental buffers, the pool is
    /// more, smaller buffers in the same memory: the share is the same in bytes.) It is
    /// an eighth of the pool as made: its growth (when receives find it dry) serves more
    /// connections, and does not let one reader that does not read pin more.
    pub fn share(&self) -> usize {
        self.inner.share()
    }

    /// Sets what one receive may pin ([`share`](Self::share)) and whether the driver
    /// relieves a dry pool ([`relieves_pressure`](Self::relieves_pressure)).
    pub(crate) fn set_policy(&self, share: PoolShare, relieve: bool) {
        self.inner.share.set(share.buffers(self.inner.count.get()));
        self.inner.relieve.set(relieve);
    }

    /// Whether the driver applies the pool-pressure rule (on unless the driver's
    /// configuration turned it off, `DriverConfig::pool_pressure`): when a receive finds
    /// the pool dry, the pieces waiting in every receive's queue are copied out and those
    /// receives stopped until their readers catch up (`driver::pressure`).
    pub fn relieves_pressure(&self) -> bool {
        self.inner.relieve.get()
    }

    /// Pieces cut since the pool was made ([`PoolStats::pieces`]), without the rest of
    /// the stats.
    #[inline]
    pub(crate) fn pieces_cut(&self) -> u64 {
        self.inner.pieces.get()
    }

    /// Current counts.
    pub fn stats(&self) -> PoolStats {
        let books = &self.inner.books;
        PoolStats {
            total: usize::from(self.count()),
            capacity: usize::from(self.inner.cap),
            in_use: books.in_use(),
            buf_size: self.inner.buf_size,
            free: self.free_count(),
            pieces: self.inner.pieces.get(),
            share: self.share(),
            peak_pinned: usize::from(self.count()) - books.lowest(),
        }
    }

    /// Starts [`PoolStats::peak_pinned`] again from what is pinned now.
    pub fn reset_peak(&self) {
        self.inner.books.reset_lowest();
    }

    /// io_uring: the piece of buffer `bid` that a completion with `result` and CQE
    /// `flags` reports, if it reports bytes (`result > 0`). Without `BUF_MORE` the
    /// kernel is done with the buffer.
    ///
    /// A completion of no bytes (end of stream) never gives a buffer back: on an
    /// incremental ring it consumed nothing (some kernels still leave `BUF_MORE` off
    /// then, though the buffer stays at the head); on a plain ring its buffer is
    /// recycled at once.
    #[inline]
    pub(crate) fn provided(&self, bid: u16, result: i32, flags: u32) -> Option<PoolBuf> {
        let Store::Ring { .. } = &self.inner.store else {
            unreachable!("a provided buffer from a list pool")
        };
        debug_assert!(bid < self.inner.count.get());
        if result <= 0 {
            if self.inner.more == 0 {
                let books = &self.inner.books;
                books.take_available();
                if books.release(bid) {
                    self.inner.give_back(bid);
                }
            }
            return None;
        }
        Some(self.provided_bytes(bid, result as u32, flags))
    }

    /// [`provided`](Self::provided) for a completion known to carry `len > 0` bytes.
    #[inline(always)]
    pub(crate) fn provided_bytes(&self, bid: u16, len: u32, flags: u32) -> PoolBuf {
        debug_assert!(matches!(self.inner.store, Store::Ring { .. }));
        debug_assert!(bid < self.inner.count.get() && len > 0);
        let open = flags & self.inner.more != 0;
        let off = self.inner.books.cut(bid, len, open);
        debug_assert!(off as usize + len as usize <= self.inner.buf_size);
        self.inner.piece(bid, off, len)
    }

    /// epoll: one receive into the free space of the buffer being filled (a fresh one
    /// if it has too little left), by `recv(ptr, capacity) -> bytes or -errno`.
    /// `Ok((piece, short))`, `short` if it took less than it was offered; `Err` with the
    /// receive's result if it took nothing (0: end of stream), `-ENOBUFS` if no buffer
    /// had room.
    #[inline(always)]
    pub(crate) fn receive(
        &self,
        recv: impl FnOnce(*mut u8, usize) -> i32,
    ) -> Result<(PoolBuf, bool), i32> {
        let Store::List { free, open } = &self.inner.store else {
            unreachable!("a receive into a ring pool")
        };
        let books = &self.inner.books;
        let size = self.inner.buf_size;
        let mut bid = open.get();
        let mut off = 0;
        if bid != NO_BUF {
            off = books.filled(bid) as usize;
            if size - off < min_room(size) {
                // Too little room left to be worth a receive: close it.
                open.set(NO_BUF);
                books.take_available();
                if books.release(bid) {
                    self.inner.give_back(bid);
                }
                bid = NO_BUF;
            }
        }
        if bid == NO_BUF {
            bid = free.borrow_mut().pop().ok_or(-libc::ENOBUFS)?;
            open.set(bid);
            // A free buffer is empty (`Books::renew`).
            off = 0;
        }
        debug_assert_eq!(off, books.filled(bid) as usize);
        let room = size - off;
        // SAFETY: bytes `off..size` of buffer `bid` are handed to nobody yet: pieces
        // are cut from its start, up to `filled`.
        let r = recv(unsafe { self.inner.buf_ptr(bid).add(off) }, room);
        if r <= 0 {
            return Err(r);
        }
        let len = r as u32;
        let full = len as usize == room;
        if full {
            open.set(NO_BUF);
        }
        books.cut(bid, len, !full);
        Ok((
            self.inner.piece(bid, off as u32, len),
            (len as usize) < room,
        ))
    }

    /// True if a buffer came back since the last call; clears the mark.
    pub(crate) fn take_returned(&self) -> bool {
        self.inner.returned.replace(false)
    }

    /// Whether a buffer came back since the mark was last cleared (the mark stays).
    pub(crate) fn has_returned(&self) -> bool {
        self.inner.returned.get()
    }

    /// Sets the mark again (starved receives are left that the driver will re-arm on a
    /// later turn).
    pub(crate) fn mark_returned(&self) {
        self.inner.returned.set(true);
    }

    /// Buffers that can take bytes now (on io_uring: in the ring; on epoll: free, or
    /// open with room).
    pub(crate) fn free_count(&self) -> usize {
        match &self.inner.store {
            Store::Ring { .. } | Store::List { .. } => self.inner.books.available(),
            Store::Copy => 0,
        }
    }
}

/// Memory for `cap` buffers of `buf_size` bytes: an anonymous mapping, whose pages
/// become resident only when a receive writes them (a pool's capacity costs address
/// space; the buffers it has given out, memory), and whose failure is an error rather
/// than the allocator's abort. Freed by `PoolInner`'s drop.
fn map_buffers(cap: u16, buf_size: usize) -> io::Result<NonNull<u8>> {
    let len = cap as usize * buf_size;
    map_anonymous(len).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("buffer pool: mapping {cap} buffers of {buf_size} bytes ({len} bytes): {e}"),
        )
    })
}

/// `len` bytes of zeroed, private, readable and writable memory (the buffers, and the
/// ring's entries), for `munmap` with the same length.
fn map_anonymous(len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: an anonymous private mapping has no preconditions; we check the result.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(NonNull::new(ptr.cast::<u8>()).expect("mmap returned null"))
}

/// The least room an epoll receive is offered: less left in the open buffer than this,
/// and a fresh buffer is opened (an eighth of a buffer is the most that is left unused).
#[inline]
fn min_room(buf_size: usize) -> usize {
    (buf_size / 8).max(1)
}

fn check_size(buf_size: usize) -> io::Result<()> {
    if buf_size == 0 || buf_size > MAX_POOL_BUF_SIZE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("pool buffer size {buf_size} must be between 1 and {MAX_POOL_BUF_SIZE} bytes"),
        ));
    }
    Ok(())
}

impl PoolInner {
    /// `mem` is `cap * buf_size` bytes: mapped by [`map_buffers`], or for
    /// [`Store::Copy`] a boxed slice (`Box::into_raw`); the drop frees it as such.
    fn with_mem(
        mem: NonNull<u8>,
        buf_size: usize,
        count: u16,
        cap: u16,
        more: u32,
        store: Store,
    ) -> PoolInner {
        PoolInner {
            mem,
            buf_size,
            count: Cell::new(count),
            cap,
            books: Books::new(count, cap),
            more,
            pieces: Cell::new(0),
            returned: Cell::new(false),
            share: Cell::new(PoolShare::default().buffers(count)),
            relieve: Cell::new(true),
            store,
        }
    }

    /// See [`BufferPool::share`].
    #[inline]
    fn share(&self) -> usize {
        self.share.get()
    }

    #[inline]
    fn buf_ptr(&self, bid: u16) -> *mut u8 {
        // SAFETY: bid < count <= cap, so the offset stays inside the allocation.
        unsafe { self.mem.as_ptr().add(bid as usize * self.buf_size) }
    }

    /// A handle on `len` bytes at `off` of buffer `bid` (its reference is counted by
    /// the caller).
    #[inline(always)]
    fn piece(self: &Rc<Self>, bid: u16, off: u32, len: u32) -> PoolBuf {
        self.pieces.set(self.pieces.get() + 1);
        PoolBuf::new(self.clone(), bid, off, len)
    }

    /// A piece of buffer `bid` was dropped (or copied out).
    #[inline(always)]
    fn release(&self, bid: u16) {
        if self.books.release(bid) {
            self.give_back(bid);
        }
    }

    /// Buffer `bid`'s last reference went (see [`Books::release`]): back into the ring
    /// (or the free list; a copied-out piece's memory is freed with its handle). Once
    /// per buffer's life: with incremental buffers once per many pieces, with whole
    /// ones (io_uring's default) once per receive, so it is not marked cold.
    #[inline(never)]
    fn give_back(&self, bid: u16) {
        self.books.renew(bid);
        match &self.store {
            Store::Ring { base, tail, .. } => {
                let at = tail.get();
                // SAFETY: as in `push_ring` and `publish_tail`: the entry at our tail is
                // past the published tail (the kernel does not read it), inside the
                // mapping; the release store of the tail publishes it. Every field is
                // written: an incremental ring's kernel moves an entry's address and
                // length as it fills the buffer.
                unsafe {
                    let entry = &mut *base.as_ptr().add((at & (self.cap - 1)) as usize);
                    entry.set_addr(self.buf_ptr(bid) as u64);
                    entry.set_len(self.buf_size as u32);
                    entry.set_bid(bid);
                    let next = at.wrapping_add(1);
                    tail.set(next);
                    let tail_ptr =
                        BufRingEntry::tail(base.as_ptr()) as *const std::sync::atomic::AtomicU16;
                    (*tail_ptr).store(next, std::sync::atomic::Ordering::Release);
                }
            }
            Store::List { free, .. } => free.borrow_mut().push(bid),
            Store::Copy => return,
        }
        self.returned.set(true);
    }

    /// Writes the entry for `bid` at our tail (not yet visible to the kernel).
    fn push_ring(&self, bid: u16) {
        let Store::Ring { base, tail, .. } = &self.store else {
            unreachable!("push_ring on a list pool")
        };
        let mask = self.cap - 1;
        let idx = tail.get() & mask;
        // SAFETY: idx < cap (the ring's entries), inside the mapping; the kernel only reads entries between
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
        let total = self.cap as usize * self.buf_size;
        if let Store::Copy = self.store {
            // SAFETY: a copy's `mem` came from Box::into_raw of a boxed slice of exactly
            // `total` bytes (`PoolBuf::unshare`).
            unsafe {
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.mem.as_ptr(),
                    total,
                )))
            };
        } else {
            // SAFETY: mapped by `map_buffers` with this length; no piece outlives the
            // pool (each holds a reference to it), and the kernel no longer writes:
            // the ring is unregistered before the driver's last reference goes.
            unsafe { libc::munmap(self.mem.as_ptr().cast(), total) };
        }
        if let Store::Ring { base, map_len, .. } = &self.store {
            // SAFETY: the mapping was made by us with this length. The pool outlives the
            // ring's registration: the driver owns a clone and unregisters on drop, and
            // the ring fd is closed before this last reference goes.
            unsafe { libc::munmap(base.as_ptr().cast(), *map_len) };
        }
    }
}

/// Received bytes in a piece of a pool buffer. Dereferences to those bytes; the piece
/// goes back to its buffer when dropped, and the buffer to the pool (and to the kernel's
/// buffer ring) once its last piece has.
///
/// A piece whose receive has fallen behind its reader (its unread pieces pin the
/// receive's [share](BufferPool::share) of the pool, or the driver's `BACKLOG` of
/// completions wait) is copied out of the pool into memory of its own, so that a stalled
/// reader never holds the core's pool: `pool_index` is then `None`.
pub struct PoolBuf {
    /// Dropped by hand in `Drop`, after the piece's release: the common drop (not the
    /// buffer's last piece) then makes no call.
    pool: ManuallyDrop<Rc<PoolInner>>,
    at: Place,
}

/// Where a piece is, in one word beside the pool's pointer: its buffer (16 bits), its
/// offset and its length (20 bits each: buffers are at most [`MAX_POOL_BUF_SIZE`]).
/// Two words in all: a received piece is moved several times on its way to its reader
/// (and back to the driver, for a send), and as a `Poll<Option<io::Result<PoolBuf>>>`
/// it comes back in registers; the last byte is a tag with spare values, where those
/// enums keep their own.
#[derive(Clone, Copy)]
struct Place {
    /// The length (bits 0..20) and bits 0..12 of the offset (20..32): the length alone
    /// is one mask, the offset two loads.
    low: u32,
    bid: u16,
    /// Bits 12..20 of the offset.
    off_high: u8,
    _tag: Tag,
}

#[derive(Clone, Copy)]
#[repr(u8)]
enum Tag {
    Piece = 0,
}

impl Place {
    #[inline]
    fn new(bid: u16, off: u32, len: u32) -> Place {
        debug_assert!(off < 1 << 20 && len < 1 << 20);
        Place {
            low: len | off << 20,
            bid,
            off_high: (off >> 12) as u8,
            _tag: Tag::Piece,
        }
    }

    #[inline]
    fn off(self) -> usize {
        (self.low >> 20) as usize | (self.off_high as usize) << 12
    }

    #[inline]
    fn len(self) -> usize {
        (self.low & 0xf_ffff) as usize
    }

    #[inline]
    fn set_len(&mut self, len: usize) {
        *self = Place::new(self.bid, self.off() as u32, len as u32);
    }
}

impl PoolBuf {
    #[inline]
    fn new(pool: Rc<PoolInner>, bid: u16, off: u32, len: u32) -> PoolBuf {
        PoolBuf {
            pool: ManuallyDrop::new(pool),
            at: Place::new(bid, off, len),
        }
    }

    /// The index of the pool buffer this piece was cut from, or `None` for a piece
    /// copied out of the pool. Pieces of one buffer share its index.
    pub fn pool_index(&self) -> Option<u16> {
        match self.pool.store {
            Store::Copy => None,
            _ => Some(self.at.bid),
        }
    }

    /// The [share](BufferPool::share) of its pool one receive may pin (for a piece
    /// copied out, that of a pool of one buffer: 1).
    #[inline]
    pub(crate) fn pool_share(&self) -> usize {
        self.pool.share()
    }

    /// Shortens the visible bytes to `len` (no effect if `len` is larger).
    pub fn truncate(&mut self, len: usize) {
        if len < self.at.len() {
            self.at.set_len(len);
        }
    }

    /// Copies the bytes out of the pool into memory of their own and lets the pool
    /// buffer go (the bytes stay the same).
    pub(crate) fn unshare(&mut self) {
        if matches!(self.pool.store, Store::Copy) {
            return;
        }
        let len = self.at.len();
        let bytes: Box<[u8]> = Box::from(&self[..]);
        // A copy of no bytes is one byte long (a pool has at least one).
        let bytes = if bytes.is_empty() {
            Box::from(&[0u8][..])
        } else {
            bytes
        };
        let size = bytes.len();
        let mem = NonNull::new(Box::into_raw(bytes).cast::<u8>()).expect("box is non-null");
        let copy = Rc::new(PoolInner::with_mem(mem, size, 1, 1, 0, Store::Copy));
        let old = std::mem::replace(&mut *self.pool, copy);
        let bid = self.at.bid;
        self.at = Place::new(0, 0, len as u32);
        old.release(bid);
    }

    #[inline]
    fn ptr(&self) -> *mut u8 {
        // SAFETY: the piece lies inside its buffer (offset + length <= buffer size).
        unsafe { self.pool.buf_ptr(self.at.bid).add(self.at.off()) }
    }

    fn capacity(&self) -> usize {
        self.at.len()
    }
}

impl Deref for PoolBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the piece's bytes were written by the kernel (or the epoll driver, or
        // copied), no later receive writes into them (pieces are cut one after the
        // other), and they stay valid while the handle keeps the pool alive.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.at.len()) }
    }
}

impl DerefMut for PoolBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for deref; no other handle covers these bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.at.len()) }
    }
}

impl Drop for PoolBuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a piece's buffer is one of its pool's: `Books::cut` checked it against
        // the books (a copied-out piece is buffer 0 of a pool of one).
        if unsafe { self.pool.books.release_unchecked(self.at.bid) } {
            return self.drop_last();
        }
        // SAFETY: this is the handle's drop; `pool` is not used again.
        unsafe { ManuallyDrop::drop(&mut self.pool) }
    }
}

impl PoolBuf {
    /// The drop of its buffer's last piece: the buffer goes back, then the handle. Every
    /// piece's drop with whole buffers.
    #[inline]
    fn drop_last(&mut self) {
        self.pool.give_back(self.at.bid);
        // SAFETY: called from the handle's drop, as its last use of `pool`.
        unsafe { ManuallyDrop::drop(&mut self.pool) }
    }
}

impl fmt::Debug for PoolBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBuf")
            .field("pool_index", &self.pool_index())
            .field("offset", &self.at.off())
            .field("len", &self.at.len())
            .finish()
    }
}

// SAFETY: the piece's memory is owned by the pool, which this handle keeps alive; its
// address does not change.
unsafe impl super::IoBuf for PoolBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.ptr()
    }
    fn bytes_init(&self) -> usize {
        self.at.len()
    }
    fn bytes_total(&self) -> usize {
        self.capacity()
    }
    /// Its drop puts the buffer back in the ring. (A receive parked on an empty pool
    /// waits for that, but the core re-arms those itself, and its wait counts no send
    /// while one is parked: `Uring::turn`.)
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::IoBuf;

    /// Receives `bytes` into a list pool, as the epoll backend does.
    fn receive(pool: &BufferPool, bytes: &[u8]) -> Result<(PoolBuf, bool), i32> {
        pool.receive(|ptr, room| {
            let n = bytes.len().min(room);
            // SAFETY: the pool offers `room` writable bytes at `ptr`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, n) };
            n as i32
        })
    }

    #[test]
    fn a_piece_is_two_words_and_keeps_its_length_through_a_copy_out() {
        use std::mem::size_of;
        assert_eq!(size_of::<PoolBuf>(), 2 * size_of::<usize>());
        assert_eq!(
            size_of::<Option<io::Result<PoolBuf>>>(),
            2 * size_of::<usize>(),
            "what a receive stream yields fits in two registers"
        );
        let pool = BufferPool::new_list(2, 2, 16).unwrap();
        let (mut b, short) = receive(&pool, b"hello world").unwrap();
        assert!(short, "11 bytes of 16 offered");
        b.truncate(20);
        assert_eq!(&b[..], b"hello world", "a longer truncate changes nothing");
        b.truncate(5);
        assert_eq!(&b[..], b"hello");
        b.unshare();
        assert_eq!(b.pool_index(), None);
        assert_eq!(&b[..], b"hello", "copied out with its length");
        assert_eq!(pool.stats().in_use, 0, "the piece went back");
    }

    #[test]
    fn pieces_outlive_their_pool_handle_and_the_last_one_frees_the_pool() {
        let pool = BufferPool::new_ring(2, 2, 64, true).unwrap();
        let a = pool.provided(1, 10, BUF_MORE).unwrap();
        // Fills the buffer: the kernel lets go of it.
        let b = pool.provided(1, 54, 0).unwrap();
        let inner = Rc::downgrade(&pool.inner);
        drop(pool);
        drop(a);
        assert_eq!((b.len(), b.pool_index()), (54, Some(1)), "b holds the pool");
        assert!(inner.upgrade().is_some());
        // The buffer's last piece and the pool's last handle at once: the buffer goes
        // back into the ring, then the pool (its memory and mapping; Miri checks both
        // are freed, once).
        drop(b);
        assert!(inner.upgrade().is_none());
    }

    #[test]
    fn places_keep_twenty_bits_of_offset_and_length() {
        for (off, len) in [(0, 0), (1, 65535), (65536, 65536), ((1 << 19) - 1, 1 << 19)] {
            let p = Place::new(7, off, len);
            assert_eq!((p.bid, p.off(), p.len()), (7, off as usize, len as usize));
        }
    }

    #[test]
    fn list_pieces_pack_into_one_buffer_which_returns_with_its_last_piece() {
        let pool = BufferPool::new_list(2, 2, 64).unwrap();
        let (a, _) = receive(&pool, &[1; 10]).unwrap();
        let (b, _) = receive(&pool, &[2; 20]).unwrap();
        assert_eq!(a.pool_index(), b.pool_index(), "one buffer, two pieces");
        assert_eq!(b.stable_ptr() as usize - a.stable_ptr() as usize, 10);
        assert!(a.iter().all(|&x| x == 1) && b.iter().all(|&x| x == 2));
        assert_eq!(pool.stats().in_use, 2);
        // 34 bytes of room are left: a 40-byte receive takes them, and fills it.
        let (c, short) = receive(&pool, &[3; 40]).unwrap();
        assert!(!short && c.len() == 34 && c.pool_index() == a.pool_index());
        // Full: the next receive opens the other buffer.
        let (d, _) = receive(&pool, &[4; 8]).unwrap();
        assert_ne!(d.pool_index(), a.pool_index());
        let first = a.pool_index();
        drop((a, b));
        assert_eq!(
            pool.free_count(),
            1,
            "the open one has room; the full one still has a piece alive"
        );
        assert!(!pool.take_returned());
        drop(c);
        assert!(
            pool.take_returned(),
            "its last piece gone, the buffer is back"
        );
        assert_eq!(pool.free_count(), 2);
        // The open buffer has 56 bytes of room; 60 asked: it takes 56.
        let (e, _) = receive(&pool, &[5; 60]).unwrap();
        assert_eq!(e.len(), 56);
        // Both full, one free again: a fresh one is opened at its start.
        let (f, _) = receive(&pool, &[6; 1]).unwrap();
        assert_eq!(f.pool_index(), first);
        drop((d, e, f));
        assert_eq!(pool.stats().in_use, 0);
    }

    #[test]
    fn list_pool_runs_dry_and_says_so() {
        let pool = BufferPool::new_list(1, 1, 16).unwrap();
        let (a, _) = receive(&pool, &[0; 16]).unwrap();
        assert_eq!(receive(&pool, b"x").err(), Some(-libc::ENOBUFS));
        drop(a);
        let (b, _) = receive(&pool, b"x").unwrap();
        assert_eq!(&b[..], b"x");
        // A receive that takes nothing leaves the open buffer as it was.
        assert_eq!(pool.receive(|_, _| 0).err(), Some(0));
        assert_eq!(
            pool.receive(|_, _| -libc::EAGAIN).err(),
            Some(-libc::EAGAIN)
        );
        let (c, _) = receive(&pool, b"y").unwrap();
        assert_eq!(c.stable_ptr() as usize - b.stable_ptr() as usize, 1);
    }

    #[test]
    fn an_open_buffer_with_little_room_left_is_closed_before_a_receive() {
        let pool = BufferPool::new_list(2, 2, 64).unwrap();
        let (a, _) = receive(&pool, &[0; 60]).unwrap();
        // 4 bytes left, less than an eighth of 64: a fresh buffer takes the next bytes.
        let (b, _) = receive(&pool, &[0; 4]).unwrap();
        assert_ne!(a.pool_index(), b.pool_index());
        drop(a);
        assert_eq!(
            pool.stats().free,
            2,
            "the closed one came back with its piece"
        );
        drop(b);
    }

    #[test]
    fn ring_pool_publishes_every_buffer_and_recycles_at_the_tail() {
        let pool = BufferPool::new_ring(8, 8, 32, false).unwrap();
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
        let b = pool.provided(3, 5, 0).expect("bytes");
        assert_eq!(pool.stats().in_use, 1);
        assert_eq!(pool.free_count(), 7);
        drop(b);
        // SAFETY: as above.
        unsafe {
            assert_eq!(*BufRingEntry::tail(base), 9);
            let e = &*base.add(8 % 8);
            assert_eq!(e.bid(), 3, "the returned buffer went in at the old tail");
            assert_eq!(e.len(), 32);
        }
        assert_eq!(pool.stats().in_use, 0);
        assert_eq!(pool.free_count(), 8);
        // End of stream on a plain ring: its buffer comes straight back.
        assert!(pool.provided(4, 0, 0).is_none());
        // SAFETY: as above.
        unsafe { assert_eq!(*BufRingEntry::tail(base), 10) };
        assert!(
            BufferPool::new_ring(6, 6, 32, false).is_err(),
            "not a power of two"
        );
        assert!(BufferPool::new_ring(8, 8, MAX_POOL_BUF_SIZE + 1, true).is_err());
    }

    #[test]
    fn a_ring_pool_grows_by_doubling_to_its_cap_and_publishes_the_new_buffers() {
        let pool = BufferPool::new_ring(2, 6, 32, false).unwrap();
        assert_eq!((pool.count(), pool.capacity()), (2, 8), "the cap rounds up");
        let base = pool.ring_base();
        // The kernel took both buffers; the program holds them.
        let held = (
            pool.provided(0, 5, 0).unwrap(),
            pool.provided(1, 5, 0).unwrap(),
        );
        assert_eq!((pool.free_count(), pool.stats().peak_pinned), (0, 2));
        pool.take_returned();
        assert!(pool.grow());
        assert!(
            pool.take_returned(),
            "the parked receives are to be re-armed"
        );
        // SAFETY: the ring has 8 entries; the tail lives in the first one.
        unsafe {
            assert_eq!(
                *BufRingEntry::tail(base),
                4,
                "two more buffers for the kernel"
            );
            let added: Vec<_> = (2..4).map(|i| (*base.add(i)).bid()).collect();
            assert_eq!(added, vec![2, 3]);
            assert_eq!((*base.add(3)).addr(), pool.inner.buf_ptr(3) as u64);
        }
        let s = pool.stats();
        assert_eq!((s.total, s.capacity, s.free), (4, 8, 2));
        assert_eq!(
            s.peak_pinned, 2,
            "what was pinned at most is unchanged by growth"
        );
        let third = pool.provided(3, 7, 0).unwrap();
        assert_eq!(pool.stats().peak_pinned, 3);
        assert!(pool.grow());
        assert_eq!(pool.count(), 8);
        assert!(!pool.grow(), "at its cap");
        drop((held, third));
        let s = pool.stats();
        assert_eq!((s.total, s.in_use, s.free), (8, 0, 8));
        // SAFETY: as above; 8 pushed at first and by growth, 3 given back.
        unsafe { assert_eq!(*BufRingEntry::tail(base), 11) };
        let fixed = BufferPool::new_list(4, 2, 16).unwrap();
        assert_eq!(fixed.capacity(), 4, "a cap below the count: no growth");
        assert!(!fixed.grow());
    }

    #[test]
    fn incremental_ring_pieces_follow_each_other_until_the_kernel_lets_go() {
        let more = BUF_MORE;
        assert!(io_uring::cqueue::buffer_more(more) && !io_uring::cqueue::buffer_more(!more));
        let pool = BufferPool::new_ring(4, 4, 100, true).unwrap();
        let base = pool.ring_base();
        let a = pool.provided(0, 30, more).unwrap();
        let b = pool.provided(0, 50, more).unwrap();
        assert_eq!(b.stable_ptr() as usize - a.stable_ptr() as usize, 30);
        // End of stream consumes nothing, whatever the flags say.
        assert!(pool.provided(0, 0, 0).is_none());
        let c = pool.provided(0, 20, 0).unwrap();
        assert_eq!(c.stable_ptr() as usize - a.stable_ptr() as usize, 80);
        assert_eq!(pool.free_count(), 3, "full, and pinned by its pieces");
        drop((a, c));
        // SAFETY: the ring has 4 entries; the tail lives in the first one.
        unsafe { assert_eq!(*BufRingEntry::tail(base), 4, "b still holds it") };
        drop(b);
        // SAFETY: as above.
        unsafe {
            assert_eq!(*BufRingEntry::tail(base), 5);
            let e = &*base;
            assert_eq!((e.bid(), e.len()), (0, 100), "back whole, at its start");
            assert_eq!(e.addr(), pool.inner.buf_ptr(0) as u64);
        }
        // Its next life starts at offset 0.
        let d = pool.provided(0, 10, more).unwrap();
        assert_eq!(d.stable_ptr(), pool.inner.buf_ptr(0) as *const u8);
        drop(d);
        assert_eq!(pool.stats().in_use, 0);
    }
}
