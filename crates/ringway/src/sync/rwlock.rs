//! [`RwLock`]: many readers or one writer, for the tasks of one core.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

use super::semaphore::{Semaphore, SemaphorePermit};

/// Readers hold one permit each; a writer holds them all.
const ALL: usize = Semaphore::MAX_PERMITS;

/// Many readers or one writer, held across `.await`, for the tasks of one core.
/// Requests are served in order: a writer waiting behind readers makes the readers
/// that come after it wait too, so writers do not starve. Core-local (no atomics,
/// `!Sync`).
///
/// # Examples
///
/// ```
/// use ringway::sync::RwLock;
///
/// #[ringway::main]
/// async fn main() {
///     let config = RwLock::new("v1");
///     {
///         let a = config.read().await;
///         let b = config.read().await; // readers share
///         assert_eq!((*a, *b), ("v1", "v1"));
///         assert!(config.try_write().is_none());
///     }
///     *config.write().await = "v2";
///     assert_eq!(*config.read().await, "v2");
/// }
/// ```
pub struct RwLock<T: ?Sized> {
    sem: Semaphore,
    value: UnsafeCell<T>,
}

impl<T> RwLock<T> {
    /// A lock holding `value`.
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            sem: Semaphore::new(ALL),
            value: UnsafeCell::new(value),
        }
    }

    /// The value, the lock gone.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Waits for shared access.
    pub async fn read(&self) -> RwLockReadGuard<'_, T> {
        let permit = self.sem.acquire().await.expect("never closed");
        RwLockReadGuard {
            lock: self,
            _permit: permit,
        }
    }

    /// Waits for exclusive access.
    pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
        let permit = self.sem.acquire_many(ALL).await.expect("never closed");
        RwLockWriteGuard {
            lock: self,
            _permit: permit,
        }
    }

    /// Shared access if it can be had now.
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        let permit = self.sem.try_acquire()?;
        Some(RwLockReadGuard {
            lock: self,
            _permit: permit,
        })
    }

    /// Exclusive access if it can be had now.
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        let permit = self.sem.try_acquire_many(ALL)?;
        Some(RwLockWriteGuard {
            lock: self,
            _permit: permit,
        })
    }

    /// The value through `&mut self`: no locking needed.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T: ?Sized> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("readers_or_writer", &(ALL - self.sem.available_permits()))
            .finish_non_exhaustive()
    }
}

/// Shared access to an [`RwLock`]'s value.
#[must_use = "the access ends as soon as the guard is dropped"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    _permit: SemaphorePermit<'a>,
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a reader's permit excludes every writer (a writer needs all permits).
        unsafe { &*self.lock.value.get() }
    }
}

/// Exclusive access to an [`RwLock`]'s value.
#[must_use = "the access ends as soon as the guard is dropped"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    _permit: SemaphorePermit<'a>,
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the writer holds every permit: no other guard exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only access.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
