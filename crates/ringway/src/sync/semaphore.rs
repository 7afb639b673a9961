//! [`Semaphore`]: permits for the tasks of one core, handed out first come first
//! served.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::wait_list::WaitList;
use super::AcquireError;

/// A served waiter's payload when `close` served it: refused, no permits taken.
const REFUSED: usize = usize::MAX;

/// A count of permits shared by the tasks of one core. Waiters are served in the order
/// they came (a large request at the front makes later small ones wait: nobody
/// starves). Core-local: no atomics, `!Sync` and `!Send` (it is shared between tasks
/// through `Rc` or a reference, never between threads).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use ringway::sync::Semaphore;
///
/// #[ringway::main]
/// async fn main() {
///     let limit = Rc::new(Semaphore::new(2));
///     let mut tasks = Vec::new();
///     for i in 0..5 {
///         let limit = limit.clone();
///         tasks.push(ringway::spawn(async move {
///             let _permit = limit.acquire().await.unwrap(); // at most two at a time
///             ringway::time::sleep(std::time::Duration::from_millis(1)).await;
///             i
///         }));
///     }
///     for t in tasks {
///         t.await.unwrap();
///     }
///     assert_eq!(limit.available_permits(), 2);
/// }
/// ```
pub struct Semaphore {
    permits: Cell<usize>,
    closed: Cell<bool>,
    /// Each waiter's payload: how many permits it asked for.
    waiters: RefCell<WaitList<usize>>,
    _local: PhantomData<*const ()>,
}

impl Semaphore {
    /// The most permits a semaphore can hold.
    pub const MAX_PERMITS: usize = usize::MAX >> 3;

    /// A semaphore with `permits` permits.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS).
    pub fn new(permits: usize) -> Semaphore {
        assert!(
            permits <= Self::MAX_PERMITS,
            "a semaphore holds at most MAX_PERMITS"
        );
        Semaphore {
            permits: Cell::new(permits),
            closed: Cell::new(false),
            waiters: RefCell::new(WaitList::default()),
            _local: PhantomData,
        }
    }

    /// Permits free now.
    pub fn available_permits(&self) -> usize {
        self.permits.get()
    }

    /// Waits for one permit. Released when the returned permit is dropped.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] once the semaphore is [closed](Self::close).
    pub fn acquire(&self) -> Acquire<'_> {
        self.acquire_many(1)
    }

    /// Waits for `n` permits at once.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] once the semaphore is closed.
    pub fn acquire_many(&self, n: usize) -> Acquire<'_> {
        Acquire {
            sem: self,
            n,
            key: None,
        }
    }

    /// One permit if it is free and nobody waits before; `None` otherwise.
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.try_acquire_many(1)
    }

    /// `n` permits if they are free and nobody waits before; `None` otherwise.
    pub fn try_acquire_many(&self, n: usize) -> Option<SemaphorePermit<'_>> {
        if self.closed.get() || !self.waiters.borrow().is_empty() || self.permits.get() < n {
            return None;
        }
        self.permits.set(self.permits.get() - n);
        Some(SemaphorePermit { sem: self, n })
    }

    /// Adds `n` permits (and serves the waiters they are enough for).
    pub fn add_permits(&self, n: usize) {
        self.permits.set(self.permits.get() + n);
        self.serve();
    }

    /// Closes the semaphore: every waiter, and every later `acquire`, gets
    /// [`AcquireError`]. Permits already held stay valid.
    pub fn close(&self) {
        self.closed.set(true);
        let mut w = self.waiters.borrow_mut();
        while let Some(key) = w.front_key() {
            w.get_mut(key).payload = REFUSED;
            w.serve_front();
        }
    }

    /// True once [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// Grants permits to the waiters at the front while there are enough.
    fn serve(&self) {
        let mut w = self.waiters.borrow_mut();
        while let Some(front) = w.front() {
            let need = front.payload;
            if need > self.permits.get() {
                break;
            }
            self.permits.set(self.permits.get() - need);
            w.serve_front();
        }
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("permits", &self.permits.get())
            .field("closed", &self.closed.get())
            .finish()
    }
}

/// Permits taken from a [`Semaphore`]; given back when dropped.
#[must_use = "the permits go back as soon as this is dropped"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    n: usize,
}

impl SemaphorePermit<'_> {
    /// Keeps the permits out of the semaphore for good.
    pub fn forget(mut self) {
        self.n = 0;
    }

    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.n
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        if self.n > 0 {
            self.sem.add_permits(self.n);
        }
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("permits", &self.n)
            .finish()
    }
}

/// Future of [`Semaphore::acquire`]. Dropping it before it completes leaves the line
/// (and gives back permits granted meanwhile).
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire<'a> {
    sem: &'a Semaphore,
    n: usize,
    /// Its place in line, once it waits.
    key: Option<usize>,
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<SemaphorePermit<'a>, AcquireError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let sem = self.sem;
        match self.key {
            None => {
                if sem.closed.get() {
                    return Poll::Ready(Err(AcquireError(())));
                }
                if let Some(p) = sem.try_acquire_many(self.n) {
                    return Poll::Ready(Ok(p));
                }
                let key = sem.waiters.borrow_mut().push(self.n, cx.waker().clone());
                self.key = Some(key);
                Poll::Pending
            }
            Some(key) => {
                let mut w = sem.waiters.borrow_mut();
                let waiter = w.get_mut(key);
                if !waiter.served {
                    waiter.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                let refused = w.remove(key).payload == REFUSED;
                self.key = None;
                if refused {
                    return Poll::Ready(Err(AcquireError(())));
                }
                Poll::Ready(Ok(SemaphorePermit { sem, n: self.n }))
            }
        }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let waiter = self.sem.waiters.borrow_mut().remove(key);
        if waiter.served && waiter.payload != REFUSED {
            // Granted but never taken: give back.
            self.sem.add_permits(self.n);
        } else {
            // It may have been the front, holding back smaller requests behind it.
            self.sem.serve();
        }
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.n)
            .field("waiting", &self.key.is_some())
            .finish()
    }
}
