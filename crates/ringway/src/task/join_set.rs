//! [`JoinSet`]: a group of tasks whose outputs come back in the order they finish.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use atomic_waker::AtomicWaker;
use crossbeam_queue::SegQueue;
use slab::Slab;

use crate::runtime::{JoinError, JoinHandle};

/// Tasks spawned together, awaited in the order they finish
/// ([`join_next`](Self::join_next)). Dropping the set cancels every task still in it.
///
/// Each task's handle is polled only when its task has finished (or was never polled):
/// a finished task's waker puts its key on a lock-free queue, so `join_next` over many
/// tasks costs what finished, not what is in the set.
///
/// # Examples
///
/// ```
/// use ringway::task::JoinSet;
///
/// #[ringway::main(threads = 2)]
/// async fn main() {
///     let mut set = JoinSet::new();
///     for i in 0..4u64 {
///         set.spawn(async move { i * 10 });
///     }
///     set.spawn_on(1, || async { ringway::runtime::current_core() as u64 + 100 });
///     let mut got = Vec::new();
///     while let Some(r) = set.join_next().await {
///         got.push(r.unwrap());
///     }
///     got.sort();
///     assert_eq!(got, [0, 10, 20, 30, 101]);
/// }
/// ```
pub struct JoinSet<T> {
    tasks: Slab<(JoinHandle<T>, Waker)>,
    ready: Arc<Ready>,
}

/// Keys of tasks to poll, and the waker of the `join_next` that waits.
#[derive(Default)]
struct Ready {
    keys: SegQueue<usize>,
    waiter: AtomicWaker,
}

/// The waker one task's handle is polled with: it queues the task's key.
struct EntryWaker {
    key: usize,
    ready: Arc<Ready>,
}

impl Wake for EntryWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.keys.push(self.key);
        self.ready.waiter.wake();
    }
}

impl<T: 'static> JoinSet<T> {
    /// An empty set.
    pub fn new() -> JoinSet<T> {
        JoinSet {
            tasks: Slab::new(),
            ready: Arc::default(),
        }
    }

    /// Spawns `fut` on the current core, into the set.
    pub fn spawn<F>(&mut self, fut: F)
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(crate::spawn(fut));
    }

    /// Spawns the future `make` builds on core `core` (see
    /// [`Handle::spawn_on`](crate::Handle::spawn_on)), into the set.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    pub fn spawn_on<M, F>(&mut self, core: usize, make: M)
    where
        M: FnOnce() -> F + Send + 'static,
        F: Future<Output = T> + 'static,
        T: Send,
    {
        self.insert(crate::Handle::current().spawn_on(core, make));
    }

    fn insert(&mut self, handle: JoinHandle<T>) {
        let entry = self.tasks.vacant_entry();
        let key = entry.key();
        let waker = Waker::from(Arc::new(EntryWaker {
            key,
            ready: self.ready.clone(),
        }));
        entry.insert((handle, waker));
        // Polled once by the next `join_next`, which registers the waker.
        self.ready.keys.push(key);
    }

    /// The output of the next task to finish; `None` once the set is empty.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        std::future::poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// Poll form of [`join_next`](Self::join_next).
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        if self.tasks.is_empty() {
            return Poll::Ready(None);
        }
        for registered in [false, true] {
            while let Some(key) = self.ready.keys.pop() {
                // A key may be stale (its task was taken out, the place reused): then
                // this is one spurious poll.
                let Some((handle, waker)) = self.tasks.get_mut(key) else {
                    continue;
                };
                let mut entry_cx = Context::from_waker(waker);
                if let Poll::Ready(r) = Pin::new(handle).poll(&mut entry_cx) {
                    drop(self.tasks.remove(key)); // finished: nothing to cancel
                    return Poll::Ready(Some(r));
                }
            }
            if !registered {
                self.ready.waiter.register(cx.waker());
            }
        }
        Poll::Pending
    }

    /// Cancels every task in the set; each still comes out of `join_next`, as
    /// `JoinError::Cancelled` unless it had finished.
    pub fn abort_all(&mut self) {
        for (_, (handle, _)) in &self.tasks {
            handle.abort();
        }
    }

    /// Cancels every task and waits until they are all gone.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Lets every task run on by itself, and empties the set.
    pub fn detach_all(&mut self) {
        for (handle, _) in self.tasks.drain() {
            handle.detach();
        }
    }

    /// Tasks in the set (finished ones whose output was not taken included).
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// True if the set holds no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

impl<T: 'static> Default for JoinSet<T> {
    fn default() -> Self {
        JoinSet::new()
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet")
            .field("len", &self.tasks.len())
            .finish()
    }
}
