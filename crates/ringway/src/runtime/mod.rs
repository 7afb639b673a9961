//! The runtime: a [`Builder`], the [`Runtime`] it builds, and a [`Handle`] that reaches
//! every core from any thread.
//!
//! A runtime with `N` worker threads has `N` cores. Core 0 is the thread that calls
//! [`Runtime::block_on`] (so the future given to it may be `!Send`); cores `1..N` are
//! threads of their own, each running its loop until the runtime is dropped. Every core
//! owns one driver (one ring), one task slab, one timer structure and one buffer pool;
//! tasks never migrate. [`spawn`] puts a task on the current core; [`Handle::spawn_on`]
//! puts one on a chosen core.

mod blocking;
pub(crate) mod context;
mod core;
mod core_loop;
mod run_queue;
mod task;
mod task_blocks;
mod task_waker;

use std::future::Future;
use std::io;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

pub use blocking::spawn_blocking;
pub use task::{JoinError, JoinHandle};

use self::core::{Core, CoreShared, Remote};
use self::task::{JoinState, TaskHeader};
use crate::driver::{Backend, BackendInfo, Driver, DriverConfig, DriverStats};

/// Configures a [`Runtime`].
#[derive(Debug, Clone)]
pub struct Builder {
    threads: usize,
    pin: bool,
    driver: DriverConfig,
    backend_from_env: bool,
    name: String,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Defaults: one worker per available CPU, no pinning, 256 ring entries, backend
    /// `Auto` (overridden by `RINGWAY_BACKEND`), 1024 pool buffers of 4 KiB per core.
    pub fn new() -> Builder {
        Builder {
            threads: thread::available_parallelism().map_or(1, |n| n.get()),
            pin: false,
            driver: DriverConfig::default(),
            backend_from_env: true,
            name: "ringway-worker".into(),
        }
    }

    /// Number of cores (worker threads, the `block_on` thread included). At least 1.
    pub fn worker_threads(&mut self, n: usize) -> &mut Self {
        self.threads = n.max(1);
        self
    }

    /// Pins worker `i` to CPU `i % cpus`.
    pub fn pin_threads(&mut self, pin: bool) -> &mut Self {
        self.pin = pin;
        self
    }

    /// Chooses the backend. An explicit choice here wins over `RINGWAY_BACKEND`.
    pub fn backend(&mut self, backend: Backend) -> &mut Self {
        self.driver.backend = backend;
        self.backend_from_env = false;
        self
    }

    /// Submission queue entries per ring.
    pub fn ring_entries(&mut self, n: u32) -> &mut Self {
        self.driver.ring_entries = n.max(2);
        self
    }

    /// Provided-buffer pool per core: `count` buffers (a power of two) of `size` bytes
    /// (at most [`MAX_POOL_BUF_SIZE`](crate::buf::MAX_POOL_BUF_SIZE)). The default is
    /// 128 buffers of 64 KiB, a whole one per receive on io_uring (see
    /// [`incremental_pool`](Self::incremental_pool)), growing up to
    /// [`buffer_pool_max`](Self::buffer_pool_max) when receives find it dry.
    pub fn buffer_pool(&mut self, count: u16, size: usize) -> &mut Self {
        self.driver.pool_buffers = count;
        self.driver.pool_buf_size = size;
        self
    }

    /// The most buffers a core's pool grows to when its receives find it dry (1024 by
    /// default; at or below the pool's count, it never grows). See
    /// [`DriverConfig::pool_buffers_max`](crate::driver::DriverConfig::pool_buffers_max).
    pub fn buffer_pool_max(&mut self, max: u16) -> &mut Self {
        self.driver.pool_buffers_max = max;
        self
    }

    /// Whether receives fill each pool buffer piece after piece or take a whole buffer
    /// each (the default; io_uring only, epoll always fills piece after piece; see
    /// [`DriverConfig::pool_incremental`](crate::driver::DriverConfig::pool_incremental)).
    pub fn incremental_pool(&mut self, on: bool) -> &mut Self {
        self.driver.pool_incremental = on;
        self
    }

    /// What one multishot receive may pin of its core's pool before it is stopped (an
    /// eighth by default). See
    /// [`DriverConfig::pool_share`](crate::driver::DriverConfig::pool_share).
    pub fn pool_share(&mut self, share: crate::buf::PoolShare) -> &mut Self {
        self.driver.pool_share = share;
        self
    }

    /// Whether a dry pool is relieved by copying out what waits for readers (on by
    /// default). See
    /// [`DriverConfig::pool_pressure`](crate::driver::DriverConfig::pool_pressure).
    pub fn pool_pressure(&mut self, on: bool) -> &mut Self {
        self.driver.pool_pressure = on;
        self
    }

    /// Enables SQPOLL with the given idle time. It burns a CPU while busy.
    pub fn sqpoll(&mut self, idle: Duration) -> &mut Self {
        self.driver.sqpoll_idle = Some(idle);
        self
    }

    /// io_uring: use `SEND_ZC` for sends of at least `min` bytes (`None`: never, the
    /// default). See [`DriverConfig::send_zc_min`].
    pub fn send_zc(&mut self, min: Option<usize>) -> &mut Self {
        self.driver.send_zc_min = min;
        self
    }

    /// Name of worker threads.
    pub fn thread_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.name = name.into();
        self
    }

    /// Builds the runtime: probes the backend on the calling thread (core 0), then starts
    /// the other workers with the same backend.
    pub fn build(&self) -> io::Result<Runtime> {
        let mut cfg = self.driver.clone();
        if self.backend_from_env {
            if let Some(b) = Backend::from_env()? {
                cfg.backend = b;
            }
        }
        if self.pin {
            pin_current(0);
        }
        let driver0 = Driver::new(&cfg)?;
        let info = driver0.info().clone();
        tracing::info!(backend = %info, threads = self.threads, "ringway runtime started");
        // Every core uses the backend core 0 won with.
        cfg.backend = info.kind;
        let shared0 = CoreShared::new(0, driver0.waker());
        let core0 = Core::new(shared0.clone(), driver0);

        let mut shareds = vec![shared0];
        let mut threads = Vec::new();
        for i in 1..self.threads {
            let (tx, rx) = mpsc::channel();
            let cfg = cfg.clone();
            let pin = self.pin;
            let t = thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || {
                    if pin {
                        pin_current(i);
                    }
                    let driver = match Driver::new(&cfg) {
                        Ok(d) => d,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                    let shared = CoreShared::new(i, driver.waker());
                    let core = Core::new(shared.clone(), driver);
                    let _ = tx.send(Ok(shared));
                    if let Err(e) = core.run_until_shutdown() {
                        // The core cannot make progress: say so and end it, rather than
                        // spin. Its tasks are dropped (their I/O cancelled) below.
                        tracing::error!(core = i, error = %e, "ringway core stopped");
                    }
                    core.shutdown();
                })?;
            let shared = rx
                .recv()
                .map_err(|_| io::Error::other(format!("worker {i} exited while starting")))??;
            shareds.push(shared);
            threads.push(t);
        }
        let cores: Arc<[Arc<CoreShared>]> = shareds.into();
        for c in cores.iter() {
            let _ = c.runtime.set(Arc::downgrade(&cores));
        }
        Ok(Runtime {
            core0,
            handle: Handle { cores },
            info,
            threads,
        })
    }
}

fn pin_current(i: usize) {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it for the call only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(i % cpus, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            tracing::warn!(cpu = i % cpus, error = %io::Error::last_os_error(), "could not pin worker");
        }
    }
}

/// A running runtime. `!Send`: core 0 belongs to the thread that built it.
///
/// Dropping it shuts down in order: workers stop, every task is dropped on its own core
/// (which cancels its I/O), in-flight operations are reaped, threads are joined.
pub struct Runtime {
    core0: Rc<Core>,
    handle: Handle,
    info: BackendInfo,
    threads: Vec<thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cores", &self.cores())
            .field("backend", &self.info)
            .finish()
    }
}

impl Runtime {
    /// A builder with defaults.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A runtime with defaults.
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }

    /// Runs `fut` on core 0 (this thread) until it completes, driving every task and all
    /// I/O of core 0 meanwhile.
    pub fn block_on<F: Future>(&self, fut: F) -> F::Output {
        self.core0.block_on(fut)
    }

    /// The backend chosen, with its flags and any fallback reasons.
    pub fn backend(&self) -> &BackendInfo {
        &self.info
    }

    /// A `Send + Clone` handle to spawn onto any core.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.handle.cores.len()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        for c in self.handle.cores.iter().skip(1) {
            c.shutdown.store(true, Ordering::SeqCst);
            c.waker.wake();
        }
        self.core0.shutdown();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Spawns onto any core of a runtime, from any thread.
#[derive(Clone)]
pub struct Handle {
    cores: Arc<[Arc<CoreShared>]>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("cores", &self.cores())
            .finish()
    }
}

impl Handle {
    /// The handle of the runtime whose core this thread runs (inside `block_on`, a
    /// task, or `#[ringway::main]`).
    ///
    /// # Panics
    ///
    /// Outside a runtime, or while the runtime is being dropped; see
    /// [`try_current`](Self::try_current).
    ///
    /// # Examples
    ///
    /// ```
    /// #[ringway::main(threads = 2)]
    /// async fn main() {
    ///     let handle = ringway::Handle::current();
    ///     let core = handle.spawn_on(1, || async { ringway::runtime::current_core() });
    ///     assert_eq!(core.await.unwrap(), 1);
    /// }
    /// ```
    pub fn current() -> Handle {
        Handle::try_current()
            .expect("Handle::current: no ringway runtime on this thread (or it is being dropped)")
    }

    /// The handle of the current thread's runtime, if there is one.
    pub fn try_current() -> Option<Handle> {
        context::try_with_core(|c| c.shared.runtime.get().and_then(std::sync::Weak::upgrade))
            .flatten()
            .map(|cores| Handle { cores })
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// Runs `make()` on core `core` (modulo the number of cores) and spawns the future
    /// it returns there. The future itself need not be `Send`: it is created where it
    /// runs. Only `make` and the output cross threads.
    pub fn spawn_on<M, F>(&self, core: usize, make: M) -> JoinHandle<F::Output>
    where
        M: FnOnce() -> F + Send + 'static,
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        let shared = self.cores[core % self.cores.len()].clone();
        let header = TaskHeader::new(shared.clone());
        let state = JoinState::new();
        let (h, s) = (header.clone(), state.clone());
        // If the core is gone (or goes before it runs this), the guard reports the task
        // cancelled instead of leaving its handle waiting forever.
        let guard = CancelUnlessRun(Some(state.clone()));
        shared.inject(Remote::Spawn(Box::new(move || {
            guard.disarm();
            context::with_core(|c| c.spawn_with(make(), s, h));
        })));
        JoinHandle::new(state, Some(header))
    }

    /// Runs `make` on every core; one handle per core, in core order.
    pub fn spawn_on_each<M, F>(&self, make: M) -> Vec<JoinHandle<F::Output>>
    where
        M: Fn(usize) -> F + Send + Sync + 'static,
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        let make = Arc::new(make);
        (0..self.cores.len())
            .map(|i| {
                let make = make.clone();
                self.spawn_on(i, move || make(i))
            })
            .collect()
    }
}

/// Finishes a cross-core spawn as cancelled if its closure is dropped without running
/// (its core shut down first).
struct CancelUnlessRun<T>(Option<Arc<JoinState<T>>>);

impl<T> CancelUnlessRun<T> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl<T> Drop for CancelUnlessRun<T> {
    fn drop(&mut self) {
        if let Some(state) = self.0.take() {
            state.finish(Err(JoinError::Cancelled));
        }
    }
}

/// Spawns a `!Send` task on the current core.
///
/// Panics outside a runtime. Dropping the returned handle cancels the task; see
/// [`JoinHandle`].
#[inline(always)]
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    // Not through `with_core` nor `Core::spawn`: each would hold one more copy of the
    // future (see `Core::spawn_from`).
    let fut = std::mem::ManuallyDrop::new(fut);
    // SAFETY: `fut` is valid, moved out once by the call and never used again.
    unsafe { context::current_core().spawn_from(&*fut) }
}

/// Index of the current core (0 is the `block_on` thread).
pub fn current_core() -> usize {
    context::with_core(|c| c.shared.index)
}

/// The current core's driver counters.
pub fn driver_stats() -> DriverStats {
    context::with_core(|c| c.driver.borrow().stats())
}

/// The current core's buffer pool counters.
pub fn pool_stats() -> crate::buf::PoolStats {
    context::with_core(|c| c.driver.borrow().pool().stats())
}

/// Starts the current core's [`PoolStats::peak_pinned`](crate::buf::PoolStats::peak_pinned)
/// again from what is pinned now.
pub fn reset_pool_peak() {
    context::with_core(|c| c.driver.borrow().pool().reset_peak())
}

/// Tasks alive on the current core.
pub fn task_count() -> usize {
    context::with_core(|c| c.task_count())
}

/// Operations the current core's driver still tracks (see [`Driver::live_ops`]).
pub fn live_ops() -> usize {
    context::with_core(|c| c.driver.borrow().live_ops())
}

/// The backend of the current core.
pub fn current_backend() -> BackendInfo {
    context::with_core(|c| c.driver.borrow().info().clone())
}

/// Yields once to let other tasks run.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}
