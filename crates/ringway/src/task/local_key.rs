//! [`task_local!`](crate::task_local): a value that belongs to a task (a request id, a
//! tracing context), set for the span of one future.
//!
//! Tasks never leave their core, so the value lives in a thread-local slot that the
//! [`TaskLocalFuture`] fills before each poll of its future and empties after (even if
//! the poll panics): other tasks on the same core never see it.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Declares task-local values: `static NAME: Type;`, one or more.
///
/// # Examples
///
/// ```
/// ringway::task_local! {
///     static REQUEST_ID: u64;
/// }
///
/// #[ringway::main]
/// async fn main() {
///     let a = REQUEST_ID.scope(1, async {
///         ringway::runtime::yield_now().await;
///         REQUEST_ID.get()
///     });
///     let b = REQUEST_ID.scope(2, async { REQUEST_ID.get() });
///     let (a, b) = (ringway::spawn(a), ringway::spawn(b));
///     assert_eq!((a.await.unwrap(), b.await.unwrap()), (1, 2));
///     assert!(REQUEST_ID.try_with(|_| ()).is_err()); // not set out here
/// }
/// ```
#[macro_export]
macro_rules! task_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty; $($rest:tt)*) => {
        $(#[$attr])*
        $vis static $name: $crate::task::LocalKey<$t> = {
            ::std::thread_local! {
                static SLOT: ::std::cell::RefCell<::std::option::Option<$t>> =
                    const { ::std::cell::RefCell::new(::std::option::Option::None) };
            }
            $crate::task::LocalKey::__new(&SLOT)
        };
        $crate::task_local!($($rest)*);
    };
}

/// A task-local key, made by [`task_local!`](crate::task_local).
pub struct LocalKey<T: 'static> {
    slot: &'static std::thread::LocalKey<RefCell<Option<T>>>,
}

impl<T: 'static> LocalKey<T> {
    #[doc(hidden)]
    pub const fn __new(slot: &'static std::thread::LocalKey<RefCell<Option<T>>>) -> Self {
        LocalKey { slot }
    }

    /// Runs `fut` with this key set to `value`.
    pub fn scope<F: Future>(&'static self, value: T, fut: F) -> TaskLocalFuture<T, F> {
        TaskLocalFuture {
            key: self,
            value: Some(value),
            fut,
        }
    }

    /// Runs `f` with this key set to `value`, synchronously.
    pub fn sync_scope<F: FnOnce() -> R, R>(&'static self, value: T, f: F) -> R {
        let mut value = Some(value);
        let _entered = Entered::new(self, &mut value);
        f()
    }

    /// Runs `f` with the value.
    ///
    /// # Panics
    ///
    /// Outside a `scope` of this key.
    pub fn with<F: FnOnce(&T) -> R, R>(&'static self, f: F) -> R {
        self.try_with(f)
            .expect("task-local value read outside a scope of its key")
    }

    /// Runs `f` with the value, or says that none is set here.
    ///
    /// # Errors
    ///
    /// [`AccessError`] outside a `scope` of this key.
    pub fn try_with<F: FnOnce(&T) -> R, R>(&'static self, f: F) -> Result<R, AccessError> {
        self.slot.with(|s| match &*s.borrow() {
            Some(v) => Ok(f(v)),
            None => Err(AccessError(())),
        })
    }

    /// A copy of the value.
    ///
    /// # Panics
    ///
    /// Outside a `scope` of this key.
    pub fn get(&'static self) -> T
    where
        T: Clone,
    {
        self.with(T::clone)
    }
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalKey { .. }")
    }
}

/// The value is in the thread-local slot while this lives; back in `value` after.
struct Entered<'a, T: 'static> {
    key: &'static LocalKey<T>,
    value: &'a mut Option<T>,
}

impl<'a, T: 'static> Entered<'a, T> {
    fn new(key: &'static LocalKey<T>, value: &'a mut Option<T>) -> Self {
        key.slot
            .with(|s| std::mem::swap(&mut *s.borrow_mut(), value));
        Entered { key, value }
    }
}

impl<T: 'static> Drop for Entered<'_, T> {
    fn drop(&mut self) {
        // Swapped back: the slot holds what it held before (an outer scope's value).
        self.key
            .slot
            .with(|s| std::mem::swap(&mut *s.borrow_mut(), self.value));
    }
}

/// Future of [`LocalKey::scope`].
#[must_use = "futures do nothing unless awaited"]
pub struct TaskLocalFuture<T: 'static, F> {
    key: &'static LocalKey<T>,
    value: Option<T>,
    fut: F,
}

impl<T: 'static, F: Future> Future for TaskLocalFuture<T, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is structurally pinned (never moved out of the pinned future);
        // `value` and `key` are not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let _entered = Entered::new(this.key, &mut this.value);
        // SAFETY: as above.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        fut.poll(cx)
    }
}

impl<T: 'static, F> fmt::Debug for TaskLocalFuture<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TaskLocalFuture { .. }")
    }
}

/// A task-local value was read outside a scope of its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessError(());

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("task-local value read outside a scope of its key")
    }
}

impl std::error::Error for AccessError {}
