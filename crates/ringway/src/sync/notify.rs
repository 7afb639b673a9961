//! [`Notify`]: wakes tasks of one core that wait for something to happen.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::wait_list::WaitList;

/// A wake-up for the tasks of one core, without data: [`notify_one`] wakes the first
/// waiter, or, if none waits, lets the next [`notified`] complete at once (one permit
/// is kept, not a count); [`notify_waiters`] wakes every task waiting now. Core-local
/// (no atomics, `!Sync`).
///
/// As in tokio, a [`Notified`] counts a `notify_waiters` made after it was created,
/// even before its first poll, so "create, check the condition, await" loses nothing.
///
/// [`notify_one`]: Notify::notify_one
/// [`notify_waiters`]: Notify::notify_waiters
/// [`notified`]: Notify::notified
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use ringway::sync::Notify;
///
/// #[ringway::main]
/// async fn main() {
///     let ready = Rc::new(Notify::new());
///     let r = ready.clone();
///     let waiter = ringway::spawn(async move { r.notified().await; "woken" });
///     ringway::runtime::yield_now().await;
///     ready.notify_one();
///     assert_eq!(waiter.await.unwrap(), "woken");
/// }
/// ```
pub struct Notify {
    permit: Cell<bool>,
    /// How many times `notify_waiters` was called.
    generation: Cell<u64>,
    waiters: RefCell<WaitList<()>>,
    _local: PhantomData<*const ()>,
}

impl Notify {
    /// No permit, nobody waiting.
    pub fn new() -> Notify {
        Notify {
            permit: Cell::new(false),
            generation: Cell::new(0),
            waiters: RefCell::new(WaitList::default()),
            _local: PhantomData,
        }
    }

    /// Completes at the next notification meant for it.
    pub fn notified(&self) -> Notified<'_> {
        Notified {
            notify: self,
            generation: self.generation.get(),
            key: None,
            done: false,
        }
    }

    /// Wakes the first waiter, or keeps a permit for the next `notified` if none waits.
    pub fn notify_one(&self) {
        if !self.waiters.borrow_mut().serve_front() {
            self.permit.set(true);
        }
    }

    /// Wakes every task waiting now; keeps no permit.
    pub fn notify_waiters(&self) {
        self.generation.set(self.generation.get() + 1);
        let mut w = self.waiters.borrow_mut();
        while w.serve_front() {}
    }
}

impl Default for Notify {
    fn default() -> Self {
        Notify::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notify")
            .field("permit", &self.permit.get())
            .finish_non_exhaustive()
    }
}

/// Future of [`Notify::notified`]. Dropped after `notify_one` chose it but before it
/// saw so, it passes the notification on.
#[must_use = "futures do nothing unless awaited"]
pub struct Notified<'a> {
    notify: &'a Notify,
    generation: u64,
    key: Option<usize>,
    done: bool,
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let n = self.notify;
        if self.done {
            return Poll::Ready(());
        }
        if n.generation.get() != self.generation {
            self.finish();
            return Poll::Ready(());
        }
        match self.key {
            None => {
                if n.permit.replace(false) {
                    self.done = true;
                    return Poll::Ready(());
                }
                let key = n.waiters.borrow_mut().push((), cx.waker().clone());
                self.key = Some(key);
                Poll::Pending
            }
            Some(key) => {
                let mut w = n.waiters.borrow_mut();
                let waiter = w.get_mut(key);
                if waiter.served {
                    w.remove(key);
                    self.key = None;
                    self.done = true;
                    return Poll::Ready(());
                }
                waiter.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Notified<'_> {
    /// Leaves the line, if in it.
    fn finish(&mut self) {
        if let Some(key) = self.key.take() {
            self.notify.waiters.borrow_mut().remove(key);
        }
        self.done = true;
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let served = self.notify.waiters.borrow_mut().remove(key).served;
        // Chosen by `notify_one` (not by `notify_waiters`, which moves the generation)
        // but never told: the notification goes to the next in line.
        if served && self.notify.generation.get() == self.generation {
            self.notify.notify_one();
        }
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notified")
            .field("waiting", &self.key.is_some())
            .field("done", &self.done)
            .finish()
    }
}
