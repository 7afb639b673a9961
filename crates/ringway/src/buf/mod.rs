//! Owned buffers for completion-style I/O.
//!
//! With io_uring the kernel reads from and writes into a buffer *after* the call that
//! submitted the operation has returned, so the buffer cannot be borrowed: the operation
//! takes it by value and hands it back with the result, `(io::Result<usize>, B)`.
//! [`IoBuf`] is a buffer the kernel may read from, [`IoBufMut`] one it may write into.
//! Both promise that the memory they point at does not move while the value itself is
//! moved around (a `Vec`'s heap block stays put when the `Vec` struct moves).
//!
//! [`PoolBuf`] is the buffer a multishot receive hands out: one slot of the per-core
//! provided-buffer pool, returned to the kernel's buffer ring when dropped.

mod books;
mod pool;
mod share;

pub use pool::{BufferPool, PoolBuf, PoolStats, MAX_POOL_BUF_SIZE, POOL_SHARE_DIVISOR};
pub use share::PoolShare;

/// A buffer the kernel may read `bytes_init()` bytes from, starting at `stable_ptr()`.
///
/// # Safety
///
/// Implementors promise that `stable_ptr()` stays valid for reads of `bytes_init()` bytes
/// and does not change while the value is moved, until it is dropped or mutated through
/// its own API. The runtime keeps the value alive until the kernel is done with it.
pub unsafe trait IoBuf: 'static {
    /// Start of the initialised bytes.
    fn stable_ptr(&self) -> *const u8;
    /// How many bytes are initialised (what a write sends).
    fn bytes_init(&self) -> usize;
    /// How many bytes the allocation can hold.
    fn bytes_total(&self) -> usize;

    /// Whether dropping the buffer wakes nobody: its drop frees memory or returns it to
    /// a pool, and no task waits for it (`false` unless a type says so).
    ///
    /// A background send ([`send_all`](crate::net::TcpStream::send_all)) of such a
    /// buffer ends without anyone hearing of it, so on io_uring the core's wait can
    /// look beyond its completion and sleep until an event that wakes a task: a server
    /// that answers one request at a time then makes one `io_uring_enter` per request,
    /// not two. A buffer whose drop tells a task that the send has ended (a writer
    /// that waits for its buffer to come back) must keep the default, or that task must
    /// call the socket's `awaiting_send` (e.g.
    /// [`TcpStream::awaiting_send`](crate::net::TcpStream::awaiting_send)) before each
    /// such wait; otherwise it may sleep until the next event. This is about liveness,
    /// not memory safety.
    #[inline]
    fn drop_wakes_nobody(&self) -> bool {
        false
    }
}

/// A buffer the kernel may write up to `bytes_total()` bytes into.
///
/// # Safety
///
/// As for [`IoBuf`], and `stable_mut_ptr()` must be valid for writes of `bytes_total()`
/// bytes. `set_init(n)` is only called with `n <= bytes_total()` after the kernel wrote
/// `n` bytes from the start.
pub unsafe trait IoBufMut: IoBuf {
    /// Start of the allocation.
    fn stable_mut_ptr(&mut self) -> *mut u8;
    /// Marks the first `n` bytes as initialised.
    ///
    /// # Safety
    ///
    /// The first `n` bytes must have been written.
    unsafe fn set_init(&mut self, n: usize);
}

// SAFETY: a Vec's heap block does not move when the Vec is moved; its length counts
// the initialised bytes.
unsafe impl IoBuf for Vec<u8> {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.capacity()
    }
    /// Its drop frees its heap block.
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

// SAFETY: the spare capacity of a Vec is writable; set_len is called only after the
// kernel initialised those bytes.
unsafe impl IoBufMut for Vec<u8> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    unsafe fn set_init(&mut self, n: usize) {
        if n > self.len() {
            // SAFETY: the caller guarantees the first `n` bytes are initialised and
            // `n <= capacity`.
            unsafe { self.set_len(n) };
        }
    }
}

// SAFETY: a boxed slice is a fixed heap block, fully initialised.
unsafe impl IoBuf for Box<[u8]> {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.len()
    }
    /// Its drop frees its heap block.
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

// SAFETY: every byte of a boxed slice is already initialised and writable.
unsafe impl IoBufMut for Box<[u8]> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    unsafe fn set_init(&mut self, _n: usize) {}
}

// SAFETY: `BytesMut` owns a heap block that does not move with the handle.
unsafe impl IoBuf for bytes::BytesMut {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.capacity()
    }
    /// Its drop frees (or un-shares) its heap block.
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

// SAFETY: as for Vec: spare capacity is writable, set_len follows a kernel write.
unsafe impl IoBufMut for bytes::BytesMut {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    unsafe fn set_init(&mut self, n: usize) {
        if n > self.len() {
            // SAFETY: the caller guarantees the bytes are initialised and in capacity.
            unsafe { self.set_len(n) };
        }
    }
}

// SAFETY: `Bytes` is immutable and its storage does not move with the handle.
// (`drop_wakes_nobody` keeps its default: a `Bytes` made by `from_owner` runs its
// owner's drop, which may be anything.)
unsafe impl IoBuf for bytes::Bytes {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.len()
    }
}

// SAFETY: static data lives for the whole program and never moves.
unsafe impl IoBuf for &'static [u8] {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.len()
    }
    /// Its drop does nothing.
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

// SAFETY: static data lives for the whole program and never moves.
unsafe impl IoBuf for &'static str {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.len()
    }
    /// Its drop does nothing.
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

// SAFETY: a String's heap block does not move with the String.
unsafe impl IoBuf for String {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.capacity()
    }
    /// Its drop frees its heap block.
    fn drop_wakes_nobody(&self) -> bool {
        true
    }
}

/// A view of part of an owned buffer: `buf.slice(a..b)` writes or reads only that range
/// and gives the whole buffer back with `into_inner()`. Used by `write_all` to resume a
/// short write without copying.
#[derive(Debug)]
pub struct Slice<B> {
    buf: B,
    begin: usize,
    end: usize,
}

impl<B: IoBuf> Slice<B> {
    /// A view of `buf[begin..end]`; panics if the range is out of the initialised bytes.
    pub fn new(buf: B, begin: usize, end: usize) -> Self {
        assert!(
            begin <= end && end <= buf.bytes_init(),
            "slice {begin}..{end} out of the buffer's {} initialised bytes",
            buf.bytes_init()
        );
        Slice { buf, begin, end }
    }

    /// The whole underlying buffer.
    pub fn into_inner(self) -> B {
        self.buf
    }

    /// Where the view starts in the underlying buffer.
    pub fn begin(&self) -> usize {
        self.begin
    }
}

// SAFETY: a sub-range of a stable buffer is stable.
unsafe impl<B: IoBuf> IoBuf for Slice<B> {
    fn stable_ptr(&self) -> *const u8 {
        // SAFETY: begin <= bytes_init, checked at construction.
        unsafe { self.buf.stable_ptr().add(self.begin) }
    }
    fn bytes_init(&self) -> usize {
        self.end - self.begin
    }
    fn bytes_total(&self) -> usize {
        self.end - self.begin
    }
    fn drop_wakes_nobody(&self) -> bool {
        self.buf.drop_wakes_nobody()
    }
}
