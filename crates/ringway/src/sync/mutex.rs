//! [`Mutex`]: exclusive access for the tasks of one core, held across `.await`.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

use super::semaphore::{Semaphore, SemaphorePermit};

/// A lock for data shared by the tasks of one core, which a task may hold across an
/// `.await` (a `RefCell` borrow held there would panic in the next task). Waiters get
/// the lock in the order they asked. Core-local: a `Cell` and a wait list, no atomics;
/// `!Sync`, so it cannot be shared with another core by mistake (across cores, send
/// messages: [`mpsc`](super::mpsc)).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use ringway::sync::Mutex;
///
/// #[ringway::main]
/// async fn main() {
///     let log = Rc::new(Mutex::new(Vec::new()));
///     let l = log.clone();
///     let t = ringway::spawn(async move {
///         let mut g = l.lock().await;
///         ringway::time::sleep(std::time::Duration::from_millis(1)).await; // held across
///         g.push("task");
///     });
///     ringway::runtime::yield_now().await; // the task takes the lock first
///     log.lock().await.push("main");
///     t.await.unwrap();
///     assert_eq!(*log.lock().await, ["task", "main"]);
/// }
/// ```
pub struct Mutex<T: ?Sized> {
    sem: Semaphore,
    value: UnsafeCell<T>,
}

impl<T> Mutex<T> {
    /// A mutex holding `value`.
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            sem: Semaphore::new(1),
            value: UnsafeCell::new(value),
        }
    }

    /// The value, the mutex gone.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Waits for the lock.
    pub async fn lock(&self) -> MutexGuard<'_, T> {
        let permit = self
            .sem
            .acquire()
            .await
            .expect("a mutex's semaphore is never closed");
        MutexGuard {
            mutex: self,
            _permit: permit,
        }
    }

    /// The lock if it is free and nobody waits for it.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let permit = self.sem.try_acquire()?;
        Some(MutexGuard {
            mutex: self,
            _permit: permit,
        })
    }

    /// The value through `&mut self`: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("locked", &(self.sem.available_permits() == 0))
            .finish_non_exhaustive()
    }
}

/// The lock of a [`Mutex`], released when dropped.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    _permit: SemaphorePermit<'a>,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the semaphore's only permit: no other guard exists.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only access.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
