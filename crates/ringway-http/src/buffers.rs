//! The connections' byte buffers (responses being written, input that straddles two
//! receives, TLS records), lent by a per-core pool and given back as soon as they are
//! empty: an idle connection holds none, and a busy one reuses the same few instead of
//! allocating per request.
//!
//! Each core counts the buffers it has lent ([`buffers_in_use`]): the count the tests
//! read to show that idle connections own no buffer.

use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use ringway::buf::IoBuf;

/// Capacity of a fresh buffer: a batch of small responses fits without growing.
const FRESH: usize = 4096;
/// Buffers that grew beyond this are freed instead of kept (one large response must
/// not pin its memory in the pool).
const KEEP_UP_TO: usize = 64 * 1024;
/// At most this many free buffers are kept per core.
const KEEP_COUNT: usize = 256;

/// A core's free buffers, and how many buffers it has made and not freed (lent ones
/// are those made and not free). The common take and give-back touch only `free`: no
/// count, no borrow flag. Its type needs no drop, so reaching it is an address
/// computation (a thread-local that needs one is checked for its state on every
/// access); the buffers are freed at the thread's exit by [`Release`].
struct Pool {
    /// Only ever borrowed inside one of this module's functions, which call nothing
    /// that could reach the pool again (a `Vec`'s push and pop, the allocator).
    free: UnsafeCell<ManuallyDrop<Vec<Vec<u8>>>>,
    /// Buffers kept at most: `KEEP_COUNT`, 0 once the thread's `Release` has run (a
    /// buffer dropped later, by another thread-local's destructor, is freed).
    keep: Cell<usize>,
    made: Cell<usize>,
}

thread_local! {
    static POOL: Pool = const {
        Pool {
            free: UnsafeCell::new(ManuallyDrop::new(Vec::new())),
            keep: Cell::new(KEEP_COUNT),
            made: Cell::new(0),
        }
    };
    /// Frees the core's free buffers when its thread exits; registered by the first
    /// buffer the thread makes.
    static RELEASE: Release = const { Release };
}

/// See [`RELEASE`].
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        POOL.with(|p| {
            p.keep.set(0);
            // SAFETY: no other borrow of `free` is live (see `Pool::free`).
            let free = unsafe { &mut *p.free.get() };
            p.made.set(p.made.get().saturating_sub(free.len()));
            drop(ManuallyDrop::into_inner(std::mem::replace(
                free,
                ManuallyDrop::new(Vec::new()),
            )));
        });
    }
}

/// Buffers of this crate's connections lent on the calling core and not yet given back
/// (the pool's free buffers do not count). A server whose connections are all idle
/// has 0.
pub fn buffers_in_use() -> usize {
    POOL.with(|p| {
        // SAFETY: no other borrow of `free` is live (see `Pool::free`).
        let free = unsafe { &*p.free.get() };
        p.made.get().saturating_sub(free.len())
    })
}

/// A byte buffer lent by the core's pool; it goes back when dropped.
pub(crate) struct PooledBuf {
    /// Moved out only by `drop`.
    v: ManuallyDrop<Vec<u8>>,
}

impl PooledBuf {
    /// Borrows an empty buffer from the pool (allocating one if the pool is empty).
    #[inline]
    pub(crate) fn take() -> PooledBuf {
        // SAFETY: no other borrow of `free` is live (see `Pool::free`).
        match POOL.with(|p| unsafe { (*p.free.get()).pop() }) {
            Some(v) => PooledBuf {
                v: ManuallyDrop::new(v),
            },
            None => PooledBuf::fresh(),
        }
    }

    /// A new buffer, the pool being empty.
    #[cold]
    #[inline(never)]
    fn fresh() -> PooledBuf {
        // (After the thread's `Release` ran, nothing is kept: nothing to register.)
        let _ = RELEASE.try_with(|_| {});
        POOL.with(|p| p.made.set(p.made.get() + 1));
        PooledBuf {
            v: ManuallyDrop::new(Vec::with_capacity(FRESH)),
        }
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        // SAFETY: `v` is not used after this (the value is being dropped).
        let mut v = unsafe { ManuallyDrop::take(&mut self.v) };
        let kept = POOL.with(|p| {
            // SAFETY: no other borrow of `free` is live (see `Pool::free`).
            let free = unsafe { &mut *p.free.get() };
            if v.capacity() <= KEEP_UP_TO && free.len() < p.keep.get() {
                v.clear();
                free.push(v);
                None
            } else {
                Some(v)
            }
        });
        if let Some(v) = kept {
            give_up(v);
        }
    }
}

/// Frees a buffer the pool does not keep (grown large, or the pool full or closed).
#[cold]
#[inline(never)]
fn give_up(v: Vec<u8>) {
    POOL.with(|p| p.made.set(p.made.get().saturating_sub(1)));
    drop(v);
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
    /// Its drop puts the block on this thread's free list (or frees it).
    fn drop_wakes_nobody(&self) -> bool {
        true
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
        POOL.with(|p| {
            // SAFETY: no other borrow of `free` is live.
            let free = unsafe { &*p.free.get() };
            assert!(free.iter().all(|v| v.capacity() <= KEEP_UP_TO))
        });
        assert_eq!(buffers_in_use(), before);
    }

    #[test]
    fn the_threads_release_frees_what_is_kept_and_what_comes_back_later() {
        let mut a = PooledBuf::take();
        a.extend_from_slice(b"x");
        drop(PooledBuf::take());
        // SAFETY: no other borrow of `free` is live.
        let free = || POOL.with(|p| unsafe { &*p.free.get() }.len());
        assert!(free() >= 1);
        // What the thread's exit does (the test thread's own runs again at its exit).
        drop(Release);
        assert_eq!(free(), 0, "the free buffers are freed");
        assert_eq!(buffers_in_use(), 1, "the lent one is still counted");
        drop(a);
        assert_eq!(free(), 0, "a buffer given back after the release is freed");
        assert_eq!(buffers_in_use(), 0);
    }
}
