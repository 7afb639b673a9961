//! What the two floors (`echo-floor`, `http-floor`) share: a provided-buffer ring they
//! allocate and advance themselves, a submission side that flushes when the queue is
//! full, and the socket option every accepted connection gets.
//!
//! The floors are written straight on the `io-uring` crate, with no runtime in between,
//! so that they measure what the kernel's io_uring path costs and nothing else. Keeping
//! this plumbing in one place means the echo floor and the HTTP floor cannot drift apart
//! in how they feed the kernel buffers.

use std::io;
use std::ptr;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::{squeue, SubmissionQueue, Submitter};

/// One slot of the shared buffer ring, laid out as the kernel's `struct io_uring_buf`.
/// The `resv` field of slot 0 is the ring's tail.
#[repr(C)]
struct RawBuf {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

/// An anonymous, page-aligned, zeroed memory mapping.
#[derive(Debug)]
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> io::Result<Mapping> {
        // SAFETY: an anonymous private mapping with no address hint touches no existing
        // memory; the result is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned. A floor drops its buffer ring
        // only after the io_uring that may use it (each declares the ring after the
        // `BufRing`), and no pointer into the mapping outlives the `BufRing` owning it.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// The provided-buffer ring: the slots shared with the kernel, the buffers they point
/// to, and our private copy of the tail.
///
/// Register it with [`BufRing::register`] and drop it only after the io_uring it was
/// registered with: the kernel writes into the buffers for as long as the ring exists.
#[derive(Debug)]
pub struct BufRing {
    slots: Mapping,
    buffers: Mapping,
    count: u16,
    size: usize,
    /// Tail as we have advanced it; published to the kernel by [`BufRing::publish`].
    tail: u16,
    /// Buffers currently owned by the kernel (in the ring).
    available: usize,
}

impl BufRing {
    /// Allocates `count` buffers of `size` bytes (`count` a power of two, as the kernel
    /// requires) and puts them all in the ring.
    pub fn new(count: u16, size: usize) -> io::Result<BufRing> {
        if !count.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("buffer ring size {count} is not a power of two"),
            ));
        }
        let mut ring = BufRing {
            slots: Mapping::new(usize::from(count) * std::mem::size_of::<RawBuf>())?,
            buffers: Mapping::new(usize::from(count) * size)?,
            count,
            size,
            tail: 0,
            available: 0,
        };
        for bid in 0..count {
            ring.give_back(bid);
        }
        ring.publish();
        Ok(ring)
    }

    /// Registers the ring as buffer group `bgid` of `submitter`'s io_uring.
    ///
    /// # Safety
    ///
    /// `self` must outlive the io_uring (drop the ring first): the kernel keeps the
    /// address of the slots and writes into the buffers until then.
    pub unsafe fn register(&self, submitter: &Submitter<'_>, bgid: u16) -> io::Result<()> {
        // SAFETY: the slots mapping is page-aligned and holds `count` slots; the caller
        // guarantees it outlives the registration.
        unsafe {
            submitter.register_buf_ring_with_flags(self.slots.ptr as u64, self.count, bgid, 0)
        }
        .map_err(|e| io::Error::new(e.kind(), format!("register buffer ring: {e}")))
    }

    /// Size of each buffer.
    pub fn buffer_size(&self) -> usize {
        self.size
    }

    /// Buffers the kernel can still pick.
    pub fn available(&self) -> usize {
        self.available
    }

    /// Records that the kernel handed buffer `bid` to us (a receive completed into it).
    #[inline]
    pub fn taken(&mut self, bid: u16) {
        debug_assert!(bid < self.count);
        self.available -= 1;
    }

    /// Address of buffer `bid`.
    #[inline]
    pub fn buffer(&self, bid: u16) -> *const u8 {
        assert!(
            bid < self.count,
            "kernel returned an unknown buffer id {bid}"
        );
        // SAFETY: bid < count, so the offset stays inside the buffers mapping.
        unsafe { self.buffers.ptr.add(usize::from(bid) * self.size) }
    }

    /// The first `len` bytes of buffer `bid`, as the kernel filled them.
    ///
    /// Valid until the buffer is given back: the kernel only writes into buffers that
    /// are in the ring.
    #[inline]
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        assert!(
            len <= self.size,
            "receive of {len} bytes into a {}-byte buffer",
            self.size
        );
        // SAFETY: `buffer` checked bid; len <= size keeps the slice inside buffer `bid`,
        // which the kernel handed to us (it is not in the ring, so nothing writes it)
        // and which the mapping keeps alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.buffer(bid), len) }
    }

    /// Puts buffer `bid` back at the tail (visible to the kernel after `publish`).
    #[inline]
    pub fn give_back(&mut self, bid: u16) {
        let index = usize::from(self.tail & (self.count - 1));
        let addr = self.buffer(bid) as u64;
        // SAFETY: index < count, so the slot lies inside the slots mapping, which is
        // suitably aligned (page-aligned, slots are 16 bytes). The slot at the tail is not
        // yet published, so the kernel does not read it; we write its addr/len/bid fields
        // only, never `resv`, which in slot 0 is the tail the kernel does read.
        unsafe {
            let slot = self.slots.ptr.cast::<RawBuf>().add(index);
            ptr::addr_of_mut!((*slot).addr).write(addr);
            ptr::addr_of_mut!((*slot).len).write(self.size as u32);
            ptr::addr_of_mut!((*slot).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        self.available += 1;
    }

    /// Makes every buffer given back so far visible to the kernel.
    #[inline]
    pub fn publish(&self) {
        // SAFETY: the tail is the `resv` field of slot 0, a 2-byte-aligned u16 inside the
        // mapping that lives as long as `self`; the kernel only reads it, and all our
        // accesses to it are atomic, as `AtomicU16::from_ptr` requires.
        let tail = unsafe {
            let slot0 = self.slots.ptr.cast::<RawBuf>();
            AtomicU16::from_ptr(ptr::addr_of_mut!((*slot0).resv))
        };
        // Release: the slot contents written above become visible before the new tail.
        tail.store(self.tail, Ordering::Release);
    }
}

/// The submission side: pushes SQEs, flushing to the kernel if the queue is full.
pub struct Sq<'a> {
    /// Enters the kernel.
    pub submitter: Submitter<'a>,
    /// The submission queue proper.
    pub queue: SubmissionQueue<'a>,
}

impl std::fmt::Debug for Sq<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sq")
            .field("queued", &self.queue.len())
            .finish()
    }
}

impl Sq<'_> {
    /// Queues `entry`; if the queue is full, submits what is queued first.
    ///
    /// # Safety
    ///
    /// Every pointer in `entry` must stay valid until its completion arrives, as
    /// [`SubmissionQueue::push`] requires.
    #[inline]
    pub unsafe fn push(&mut self, entry: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the caller vouches for the entry's pointers.
            if unsafe { self.queue.push(&entry) }.is_ok() {
                return Ok(());
            }
            self.queue.sync();
            self.submitter.submit()?;
            self.queue.sync();
        }
    }
}

/// Sets `TCP_NODELAY` on `fd`, reporting (not failing) if the kernel refuses; on a
/// listener, every connection it accepts inherits it.
pub fn set_nodelay(fd: i32) {
    let one: libc::c_int = 1;
    // SAFETY: the option value points to a live c_int and its exact size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            ptr::addr_of!(one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        eprintln!("TCP_NODELAY on fd {fd}: {}", io::Error::last_os_error());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_starts_full_and_counts_what_it_hands_out() {
        let mut ring = BufRing::new(8, 64).unwrap();
        assert_eq!(ring.available(), 8);
        ring.taken(3);
        assert_eq!(ring.available(), 7);
        ring.give_back(3);
        ring.publish();
        assert_eq!(ring.available(), 8);
        // Buffers are laid out back to back.
        assert_eq!(ring.buffer(1) as usize - ring.buffer(0) as usize, 64);
        assert_eq!(ring.bytes(2, 64).len(), 64);
        assert!(BufRing::new(6, 64).is_err(), "not a power of two");
    }
}
