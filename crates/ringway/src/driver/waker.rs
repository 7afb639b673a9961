//! Waking a driver from another thread: [`DriverWaker`], an eventfd the driver keeps a
//! read (io_uring) or a registration (epoll) on, written only when its core sleeps.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A `Send + Sync` handle that interrupts the driver's wait from any thread.
///
/// The driver closes its eventfd when it is dropped, however many clones are still
/// around (a task's waker kept by another thread, a runtime `Handle`): a dropped runtime
/// leaves no fd behind, and from then on these handles do nothing.
#[derive(Clone)]
pub struct DriverWaker {
    inner: Arc<WakerInner>,
}

impl fmt::Debug for DriverWaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverWaker")
            .field("eventfd", &self.inner.fd)
            .field(
                "closed",
                &(self.inner.writers.load(Ordering::Relaxed) & CLOSED != 0),
            )
            .field("sleeping", &self.inner.sleeping.load(Ordering::Relaxed))
            .finish()
    }
}

struct WakerInner {
    /// The eventfd; closed by the driver's drop (`close`), or by the last handle's if
    /// the driver never closed it.
    fd: RawFd,
    /// `CLOSED` once `fd` is closed, plus one `WRITER` per `notify` between its check of
    /// `CLOSED` and the end of its write: the closer waits for those to finish, so no
    /// write can reach another file that took the fd's number.
    writers: AtomicUsize,
    /// The driver is (about to be) blocked; a wake must write the eventfd.
    sleeping: AtomicBool,
}

const CLOSED: usize = 1;
const WRITER: usize = 2;

impl Drop for WakerInner {
    fn drop(&mut self) {
        if *self.writers.get_mut() & CLOSED == 0 {
            // SAFETY: the fd is ours and was not closed (no CLOSED), and no handle is left
            // to use it.
            unsafe { libc::close(self.fd) };
        }
    }
}

impl DriverWaker {
    pub(super) fn new() -> io::Result<Self> {
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(DriverWaker {
            inner: Arc::new(WakerInner {
                fd,
                writers: AtomicUsize::new(0),
                sleeping: AtomicBool::new(false),
            }),
        })
    }

    /// Wakes the driver if its owner marked it as sleeping (the runtime does, around
    /// each blocking turn); cheap when it is not. Loops that drive a `Driver` themselves
    /// use [`notify`](Self::notify).
    pub fn wake(&self) {
        if self.inner.sleeping.swap(false, Ordering::SeqCst) {
            self.notify();
        }
    }

    /// Interrupts the driver's current or next wait, unconditionally (one eventfd write;
    /// nothing once the driver is dropped).
    pub fn notify(&self) {
        let inner = &*self.inner;
        if inner.writers.fetch_add(WRITER, Ordering::Acquire) & CLOSED == 0 {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to our eventfd, which stays open
            // until this writer is counted out (see `close`).
            unsafe { libc::write(inner.fd, &one as *const u64 as *const _, 8) };
        }
        inner.writers.fetch_sub(WRITER, Ordering::Release);
    }

    /// Closes the eventfd (the driver's drop): waits for writes under way, which are
    /// one non-blocking syscall each, then closes; later `notify` calls do nothing.
    pub(super) fn close(&self) {
        let inner = &*self.inner;
        if inner.writers.fetch_or(CLOSED, Ordering::AcqRel) & CLOSED != 0 {
            return;
        }
        while inner.writers.load(Ordering::Acquire) & !CLOSED != 0 {
            std::thread::yield_now();
        }
        // SAFETY: the fd is ours; CLOSED is now set and no writer is between its check
        // and its write, so nothing uses the number after this.
        unsafe { libc::close(inner.fd) };
    }

    /// Marks the driver as about to sleep. The owner re-checks its queues after this
    /// and before waiting; a waker that pushed before the re-check is seen by it, one
    /// that pushed after sees the flag and writes the eventfd.
    pub(crate) fn set_sleeping(&self, sleeping: bool) {
        self.inner.sleeping.store(sleeping, Ordering::SeqCst);
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.inner.fd
    }
}

/// The driver's own waker: closes the eventfd when the driver goes, whatever clones
/// are left.
pub(super) struct OwnedWaker(pub(super) DriverWaker);

impl Drop for OwnedWaker {
    fn drop(&mut self) {
        self.0.close();
    }
}
