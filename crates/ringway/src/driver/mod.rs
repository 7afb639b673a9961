//! The driver: one per core, it submits operations to the kernel and reaps their
//! completions. Two backends sit behind one API: io_uring (the default, with
//! `SINGLE_ISSUER | DEFER_TASKRUN`, multishot accept and receive over a provided buffer
//! ring) and epoll (edge-triggered, each fd registered once), chosen by probing the real
//! configuration at start-up ([`probe`]).
//!
//! # Two faces
//!
//! The **low-level face** works without any executor, for event loops that have their
//! own scheduler (the Python loop drives it directly):
//!
//! - [`Driver::submit`] starts an [`Op`] and tags it with a `u64` token;
//! - [`Driver::turn`] submits what is queued, waits at most `timeout` (one
//!   `io_uring_enter` or one `epoll_wait`), and hands every [`Completion`] to a callback
//!   with its token and whether it was the operation's last;
//! - [`Driver::cancel`] asks for an operation to end early; its final completion still
//!   comes, and only then may the operation's memory be reused.
//!
//! The **executor face** (crate-private) is the same machinery with a `Waker` in place of
//! the token: completions queue in the operation's slot and the task is woken. The
//! runtime's I/O futures are built on it.
//!
//! # Ownership and cancellation
//!
//! An operation's memory must outlive its final completion, not its future. When a future
//! is dropped early the driver takes the buffers it owned (`Driver::detach`), submits
//! `ASYNC_CANCEL`, and frees them only at the final completion (a completion flagged
//! `IORING_CQE_F_MORE` is not final). If that operation had produced an fd meanwhile
//! (an accept that won the race with the cancel), the driver closes it; if it had taken
//! a pool buffer, the buffer goes back to the ring.

mod addr;
mod completion;
mod delivery;
mod epoll;
mod first_inline;
mod held;
pub mod op;
pub mod probe;
mod starved;
mod table;
mod uring;

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

pub use addr::RawAddr;
pub use completion::{Completion, OpId};
pub use op::Op;

use delivery::{Delivery, Sink};
pub(crate) use held::{Held, HeldValue, KeptUntilDone};
use op::OpKind;
pub(crate) use table::QueueWatch;
use table::{Notify, OpTable, SlotState, BACKLOG};

use crate::buf::BufferPool;

/// Which backend to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// io_uring if the kernel accepts the real configuration, otherwise epoll.
    #[default]
    Auto,
    /// io_uring or fail.
    Uring,
    /// epoll, even where io_uring works.
    Epoll,
}

impl Backend {
    /// Reads `RINGWAY_BACKEND` (`uring`, `epoll` or `auto`); `None` if unset.
    pub fn from_env() -> io::Result<Option<Backend>> {
        match std::env::var("RINGWAY_BACKEND") {
            Ok(v) => v.parse().map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(io::Error::new(io::ErrorKind::InvalidInput, e)),
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = io::Error;
    fn from_str(s: &str) -> io::Result<Backend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "uring" | "io_uring" | "io-uring" => Ok(Backend::Uring),
            "epoll" => Ok(Backend::Epoll),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unknown backend `{other}`: expected one of auto, uring, epoll"),
            )),
        }
    }
}

/// How a driver is set up.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Requested backend.
    pub backend: Backend,
    /// Submission queue entries (the completion queue gets four times as many).
    pub ring_entries: u32,
    /// Buffers in the provided-buffer pool (a power of two).
    pub pool_buffers: u16,
    /// Size of each pool buffer (at most [`MAX_POOL_BUF_SIZE`](crate::buf::MAX_POOL_BUF_SIZE)).
    pub pool_buf_size: usize,
    /// Receives fill each pool buffer piece after piece (io_uring: `IOU_PBUF_RING_INC`,
    /// Linux 6.12; epoll always does), so a few large buffers serve small and large
    /// messages alike. Where the kernel refuses it, the pool becomes whole 4 KiB
    /// buffers, as many as fit in the same memory (noted in
    /// [`BackendInfo::fallbacks`]). `false` makes every receive take a whole buffer
    /// (io_uring only; for measuring the difference).
    pub pool_incremental: bool,
    /// Use a kernel submission thread polling the ring, idling after this long. Burns a
    /// core; off by default.
    pub sqpoll_idle: Option<Duration>,
    /// io_uring: sends of at least this many bytes use `SEND_ZC`; `None` never does.
    /// Off by default: on loopback (the only network this project can measure on) the
    /// receiver copies the pages anyway: zero-copy was slower at 16 KiB, 256 KiB and 1 MiB,
    /// and at 64 KiB ahead by less than the noise (14.4 vs 14.7 ms; see the `send_zc`
    /// group of `benches/overheads.rs` and the README). Turn it on for real NICs with a
    /// threshold you have measured there.
    pub send_zc_min: Option<usize>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            backend: Backend::Auto,
            ring_entries: 256,
            pool_buffers: 64,
            pool_buf_size: 64 * 1024,
            pool_incremental: true,
            sqpoll_idle: None,
            send_zc_min: None,
        }
    }
}

/// The backend that won, with its settings: what `Runtime::backend()` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// `Uring` or `Epoll` (never `Auto`).
    pub kind: Backend,
    /// io_uring setup flags that the kernel accepted, e.g. `["SINGLE_ISSUER",
    /// "DEFER_TASKRUN"]`; empty for epoll.
    pub flags: Vec<&'static str>,
    /// Ring size (submission queue entries); 0 for epoll.
    pub ring_entries: u32,
    /// Why a better rung was refused on the way down, e.g. `io_uring_setup: EPERM`.
    pub fallbacks: Vec<String>,
}

impl BackendInfo {
    /// True for io_uring.
    pub fn is_uring(&self) -> bool {
        self.kind == Backend::Uring
    }
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Backend::Uring => {
                let flags = if self.flags.is_empty() {
                    "no setup flags".to_string()
                } else {
                    self.flags.join("|")
                };
                write!(
                    f,
                    "io_uring ({flags}; {} entries; multishot accept+recv, provided buffer ring)",
                    self.ring_entries
                )?;
            }
            _ => write!(f, "epoll (edge-triggered)")?,
        }
        if !self.fallbacks.is_empty() {
            write!(f, " [after: {}]", self.fallbacks.join("; "))?;
        }
        Ok(())
    }
}

/// Counters a test can read without timing anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Calls to `turn`.
    pub turns: u64,
    /// The one syscall of each turn that submits and waits: `io_uring_enter` or
    /// `epoll_wait`. The rare extra enters are counted apart (`sq_full_flushes`,
    /// `cq_overflow_flushes`).
    pub enters: u64,
    /// Operations submitted.
    pub submitted: u64,
    /// Completions reaped (all CQEs for io_uring).
    pub completions: u64,
    /// Multishot operations started again after the kernel ended them with nothing
    /// wrong (a multishot accept or receive stopped by a full completion queue).
    pub rearmed: u64,
    /// Multishot receives parked because the buffer pool was empty (`ENOBUFS`).
    pub pool_starved: u64,
    /// Parked receives re-armed when a buffer came back.
    pub pool_resumed: u64,
    /// Multishot receives stopped because their consumer was `BACKLOG` completions
    /// behind (resumed when it catches up).
    pub recv_backlogged: u64,
    /// io_uring: extra submits because the submission queue was full.
    pub sq_full_flushes: u64,
    /// io_uring: extra enters to flush completions the kernel kept after a CQ overflow.
    pub cq_overflow_flushes: u64,
    /// Send operations submitted (`Send`, `SendAll`, `SendVectored`, `SendTo`): each is
    /// one send on the wire. (Received pieces are counted by the pool:
    /// [`PoolStats::pieces`](crate::buf::PoolStats::pieces).)
    pub sends: u64,
}

impl DriverStats {
    /// Counts an operation submitted.
    #[inline]
    fn count(&mut self, op: &Op) {
        self.submitted += 1;
        if op.is_send() {
            self.sends += 1;
        }
    }
}

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
    fn new() -> io::Result<Self> {
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
    fn close(&self) {
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
struct OwnedWaker(DriverWaker);

impl Drop for OwnedWaker {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The backend in use.
enum ActiveBackend {
    Uring(Box<uring::Uring>),
    Epoll(Box<epoll::Epoll>),
}

/// What an executor-face submit produced.
pub(crate) enum Submitted {
    /// Finished at once (epoll did the syscall eagerly); the slot is already free.
    Done(Completion),
    /// In flight.
    Pending(OpId),
}

/// One core's I/O driver. See the [module docs](self).
pub struct Driver {
    // Field order is drop order: the ring goes first, then the slots (and the buffers
    // of detached operations), then the pool the ring was reading from.
    backend: ActiveBackend,
    table: OpTable,
    pool: BufferPool,
    info: BackendInfo,
    /// After `backend`: the ring's read of the eventfd (epoll's registration) goes first.
    waker: OwnedWaker,
    deferred: Vec<(u64, Completion, bool)>,
    stats: DriverStats,
    /// Receives that became backlogged during a delivery (see `Delivery::backlogged`).
    backlogged: Vec<OpId>,
}

impl Driver {
    /// Builds a driver, probing the configuration unless the backend is forced. With
    /// `Backend::Auto` a refused io_uring (EPERM, ENOMEM, EINVAL at every rung) falls back
    /// to epoll and the reason is kept in [`BackendInfo::fallbacks`] and logged.
    pub fn new(cfg: &DriverConfig) -> io::Result<Driver> {
        let waker = DriverWaker::new()?;
        let mut fallbacks = Vec::new();
        if cfg.backend != Backend::Epoll {
            match probe::build_uring(cfg, &waker, &mut fallbacks) {
                Ok((ring, pool, flags)) => {
                    let info = BackendInfo {
                        kind: Backend::Uring,
                        flags,
                        ring_entries: cfg.ring_entries,
                        fallbacks,
                    };
                    return Ok(Driver::assemble(
                        ActiveBackend::Uring(ring),
                        pool,
                        info,
                        waker,
                    ));
                }
                Err(e) if cfg.backend == Backend::Uring => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "io_uring was requested but refused: {}",
                            fallbacks.join("; ")
                        ),
                    ));
                }
                Err(_) => {
                    tracing::warn!(reasons = %fallbacks.join("; "), "io_uring refused; falling back to epoll");
                }
            }
        }
        let pool = BufferPool::new_list(cfg.pool_buffers, cfg.pool_buf_size)?;
        let ep = epoll::Epoll::new(&waker)?;
        let info = BackendInfo {
            kind: Backend::Epoll,
            flags: Vec::new(),
            ring_entries: 0,
            fallbacks,
        };
        Ok(Driver::assemble(
            ActiveBackend::Epoll(Box::new(ep)),
            pool,
            info,
            waker,
        ))
    }

    fn assemble(
        backend: ActiveBackend,
        pool: BufferPool,
        info: BackendInfo,
        waker: DriverWaker,
    ) -> Driver {
        Driver {
            table: OpTable::new(),
            backend,
            pool,
            info,
            waker: OwnedWaker(waker),
            deferred: Vec::new(),
            stats: DriverStats::default(),
            backlogged: Vec::new(),
        }
    }

    /// The backend and a delivery context over the rest, borrowed apart.
    fn split<'a>(&'a mut self, sink: Option<Sink<'a>>) -> (&'a mut ActiveBackend, Delivery<'a>) {
        (
            &mut self.backend,
            Delivery {
                table: &mut self.table,
                pool: &self.pool,
                sink,
                deferred: &mut self.deferred,
                stats: &mut self.stats,
                backlogged: &mut self.backlogged,
            },
        )
    }

    /// The backend in use and its flags.
    pub fn info(&self) -> &BackendInfo {
        &self.info
    }

    /// This core's provided-buffer pool.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// A handle to interrupt `turn` from another thread.
    pub fn waker(&self) -> DriverWaker {
        self.waker.0.clone()
    }

    /// Counters since creation.
    pub fn stats(&self) -> DriverStats {
        self.stats
    }

    /// Operations the driver still tracks: slots taken (in flight, or waiting to be
    /// reaped) and, on io_uring, background sends in flight (which have no slot).
    pub fn live_ops(&self) -> usize {
        let background = match &self.backend {
            ActiveBackend::Uring(u) => u.background_count(),
            ActiveBackend::Epoll(_) => 0,
        };
        self.table.live() + background
    }

    /// Starts `op`; its completions reach `turn`'s callback with `token`.
    ///
    /// With `timeout`, the operation fails with `ETIMEDOUT` (or `ECANCELED`) if it has not
    /// completed in time (an io_uring linked timeout; a driver deadline on epoll).
    ///
    /// # Safety
    ///
    /// Every pointer in `op` must stay valid (buffers the kernel writes: also unaliased)
    /// until `turn` reports this operation's last completion.
    pub unsafe fn submit(
        &mut self,
        op: impl Into<Op>,
        token: u64,
        timeout: Option<Duration>,
    ) -> OpId {
        let op = op.into();
        self.stats.count(&op);
        let id = self.table.insert_token(op, token, timeout);
        self.start(id);
        id
    }

    /// Asks the kernel to end `id` early. Its last completion still arrives (often with
    /// `-ECANCELED`, sometimes with a real result that won the race).
    pub fn cancel(&mut self, id: OpId) {
        let Some(slot) = self.table.get_mut(id) else {
            return;
        };
        if slot.done || slot.cancel_requested {
            return;
        }
        slot.cancel_requested = true;
        let (backend, mut delivery) = self.split(None);
        match backend {
            ActiveBackend::Uring(u) => u.cancel(&mut delivery, id),
            ActiveBackend::Epoll(e) => e.cancel(&mut delivery, id),
        }
    }

    /// Submits what is queued and waits up to `timeout` (`None`: until something
    /// completes or [`DriverWaker::wake`] is called) for completions, which go to `sink`
    /// as `(token, completion, last)`. One `io_uring_enter` or `epoll_wait` per call.
    ///
    /// Wakers of executor-face operations are woken here, while the driver is borrowed:
    /// a waker must only schedule its task, never call back into this driver.
    pub fn turn(
        &mut self,
        timeout: Option<Duration>,
        sink: &mut dyn FnMut(u64, Completion, bool),
    ) -> io::Result<()> {
        self.turn_inner(timeout, Some(sink), None).map(|_| ())
    }

    /// The executor's turn: [`turn`](Self::turn) without a sink, waiting (unbounded)
    /// or not. `wake_at` is the core's next timer deadline: on io_uring it is armed in
    /// the ring (see `Uring::wake_at`), so the wait needs no timeout and the core no
    /// clock; returns whether that timer fired (the core's timers may be due). Only
    /// for drivers with [`kernel_timer`](Self::kernel_timer).
    #[inline]
    pub(crate) fn turn_with_timer(
        &mut self,
        wait: bool,
        wake_at: Option<Instant>,
    ) -> io::Result<bool> {
        let timeout = if wait { None } else { Some(Duration::ZERO) };
        // No sink: token completions (nobody's, on a core) are dropped, and one of
        // this turn waits in `deferred` for the next.
        self.turn_inner(timeout, None, wake_at)
    }

    /// Both turns: token completions produced outside a turn first (then the wait is
    /// zero), `wake_at` armed in the ring (io_uring), one enter or `epoll_wait`;
    /// whether the ring's timer fired. (Inlined into both: each passes constants.)
    #[inline(always)]
    fn turn_inner<'s>(
        &'s mut self,
        timeout: Option<Duration>,
        mut sink: Option<Sink<'s>>,
        wake_at: Option<Instant>,
    ) -> io::Result<bool> {
        self.stats.turns += 1;
        let mut timeout = timeout;
        if !self.deferred.is_empty() {
            timeout = Some(Duration::ZERO);
            match sink.as_mut() {
                Some(sink) => self.hand_deferred(&mut **sink),
                None => self.deferred.clear(),
            }
        }
        let (backend, mut delivery) = self.split(sink);
        match backend {
            ActiveBackend::Uring(u) => {
                if let Some(at) = wake_at {
                    u.wake_at(at);
                }
                u.turn(&mut delivery, timeout)?;
                Ok(u.take_timer_fired())
            }
            ActiveBackend::Epoll(e) => e.turn(&mut delivery, timeout).map(|()| false),
        }
    }

    /// Hands the token completions produced outside a turn to this turn's sink (out of
    /// line: the executor's turns never have any).
    #[cold]
    fn hand_deferred(&mut self, sink: &mut dyn FnMut(u64, Completion, bool)) {
        for (t, c, last) in std::mem::take(&mut self.deferred) {
            sink(t, c, last);
        }
    }

    /// Whether [`turn_with_timer`](Self::turn_with_timer) keeps the core's timer in the
    /// kernel (io_uring); otherwise the core bounds each wait by its next deadline.
    pub(crate) fn kernel_timer(&self) -> bool {
        matches!(self.backend, ActiveBackend::Uring(_))
    }

    /// Call before closing `fd` yourself: the epoll backend forgets its registration (a
    /// later fd with the same number must start clean). Operations still parked on it
    /// fail with `ECANCELED`. An error is epoll refusing to remove the registration
    /// (the fd was closed already, say): the registration is forgotten anyway.
    pub fn forget_fd(&mut self, fd: RawFd) -> io::Result<()> {
        match self.split(None) {
            (ActiveBackend::Epoll(e), mut delivery) => e.forget_fd(&mut delivery, fd),
            _ => Ok(()),
        }
    }

    /// Flags to create sockets with: non-blocking for epoll (readiness I/O), blocking
    /// for io_uring (the kernel arms its own poll; `O_NONBLOCK` would make it fail
    /// with `EAGAIN` instead).
    pub fn socket_flags(&self) -> i32 {
        match self.backend {
            ActiveBackend::Uring(_) => libc::SOCK_CLOEXEC,
            ActiveBackend::Epoll(_) => libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
        }
    }

    // ---- executor face -------------------------------------------------------------

    /// Starts `op` for a future whose task `waker` wakes at each completion. On epoll
    /// a single-shot operation that can finish at once does so here.
    ///
    /// # Safety
    ///
    /// As for [`submit`](Self::submit): pointers live until the final completion; the
    /// future passes its buffers to [`detach`](Self::detach) if dropped before that.
    pub(crate) unsafe fn submit_waker(
        &mut self,
        op: Op,
        timeout: Option<Duration>,
        waker: &Waker,
    ) -> Submitted {
        if let (ActiveBackend::Epoll(e), None) = (&mut self.backend, timeout) {
            // The common case on epoll: the socket is ready and nothing waits before
            // this op. Its one syscall runs now, without a slot.
            // SAFETY: the caller's promise for the op's pointers, for this call.
            if let Some(c) = unsafe { e.try_at_once(&op, &self.pool) } {
                self.stats.count(&op);
                return Submitted::Done(c);
            }
        }
        self.stats.count(&op);
        let id = self.table.insert_for_waker(op, timeout);
        self.start(id);
        let slot = self.table.get_mut(id).expect("just inserted");
        if slot.done && !slot.multishot {
            let c = slot.single.take().expect("a done op has its completion");
            self.table.release(id);
            return Submitted::Done(c);
        }
        OpTable::register_waker(slot, waker);
        Submitted::Pending(id)
    }

    /// Starts `op` with nobody awaiting it: `held` keeps its buffers and is told its
    /// final result. On epoll an op that can finish at once does so here (and `held`
    /// hears it before this returns). Returns the op's id while it is in flight.
    ///
    /// # Safety
    ///
    /// The op's pointers point into `held` (or outlive the final completion otherwise).
    #[inline]
    pub(crate) unsafe fn submit_detached(&mut self, op: Op, held: impl Held) -> Option<OpId> {
        let mut held = Some(held);
        // SAFETY: the caller's promise.
        let started =
            unsafe { self.submit_detached_with(op, || held.take().expect("called once")) };
        match started {
            Ok(id) => id,
            Err(result) => {
                if let Some(held) = held {
                    held.finished(result);
                }
                None
            }
        }
    }

    /// [`submit_detached`](Self::submit_detached) that builds what it keeps only if the
    /// op does not finish at once: `Err(result)` if it did (epoll, a ready socket), and
    /// then `held` was never called and the caller still owns the op's buffers (a
    /// background send on epoll costs no record of itself). `Ok(None)`: it finished
    /// while starting, and the value `held` built has heard how.
    ///
    /// # Safety
    ///
    /// The op's pointers point into what `held` returns (or outlive the final
    /// completion otherwise), and stay valid during this call.
    #[inline]
    pub(crate) unsafe fn submit_detached_with<H: Held>(
        &mut self,
        op: Op,
        held: impl FnOnce() -> H,
    ) -> Result<Option<OpId>, i32> {
        if let ActiveBackend::Epoll(e) = &mut self.backend {
            // SAFETY: the caller's promise, for this call.
            let at_once = unsafe {
                match &op {
                    Op::SendAll(send) => e.try_send_all_at_once(send),
                    _ => e.try_at_once(&op, &self.pool).map(|c| c.result),
                }
            };
            if let Some(result) = at_once {
                self.stats.count(&op);
                return Err(result);
            }
        }
        self.stats.count(&op);
        let id = self.table.insert_detached(op, HeldValue::new(held()));
        self.start(id);
        match self.backend {
            // io_uring starts an op without completing it.
            ActiveBackend::Uring(_) => Ok(Some(id)),
            ActiveBackend::Epoll(_) => Ok(self.table.get_mut(id).map(|_| id)),
        }
    }

    /// Starts a background send (`send_all`): [`submit_detached_with`] for a
    /// `SendAll`, which on io_uring takes no slot (its SQE goes into the submission
    /// queue at once, `held` waits for its CQE in the backend's table of background
    /// sends). The returned id is for [`close_after`](Self::close_after) only.
    ///
    /// # Safety
    ///
    /// As for [`submit_detached_with`](Self::submit_detached_with).
    ///
    /// [`submit_detached_with`]: Self::submit_detached_with
    #[inline]
    pub(crate) unsafe fn send_all_detached<H: Held>(
        &mut self,
        send: op::SendAll,
        held: impl FnOnce() -> H,
    ) -> Result<Option<OpId>, i32> {
        if let ActiveBackend::Uring(u) = &mut self.backend {
            self.stats.submitted += 1;
            self.stats.sends += 1;
            return Ok(Some(u.start_background(&send, held)));
        }
        // SAFETY: the caller's promise.
        unsafe { self.submit_detached_with(send.into(), held) }
    }

    /// Closes `fd` once operation `after` (a detached send on it, say) has finished,
    /// without cutting it short; at once if it has. io_uring queues a close behind it in
    /// the ring (the kernel holds the file for an op it has taken, and the close is
    /// prepared after any op started before it); epoll keeps the fd, and its
    /// registration, until that op ends.
    pub(crate) fn close_after(&mut self, fd: OwnedFd, after: Option<OpId>) {
        let pending = after.filter(|id| match &self.backend {
            ActiveBackend::Uring(u) if u.background_live(*id) => true,
            _ => self.table.get_mut(*id).is_some_and(|s| !s.done),
        });
        match (&mut self.backend, pending) {
            (ActiveBackend::Uring(_), Some(_)) => {
                let raw = fd.as_raw_fd();
                let close = op::Close { fd: raw };
                // The close op owns the fd from now on.
                std::mem::forget(fd);
                // SAFETY: a close carries no pointers.
                let _ = unsafe { self.submit_detached(close.into(), KeptUntilDone(())) };
            }
            (ActiveBackend::Epoll(e), Some(id)) => e.close_after(fd, id),
            (ActiveBackend::Uring(u), None) => u.close_soon(fd),
            (ActiveBackend::Epoll(_), None) => {
                if let Err(e) = self.forget_fd(fd.as_raw_fd()) {
                    tracing::warn!(fd = fd.as_raw_fd(), error = %e, "epoll refused to remove a registration");
                }
                drop(fd);
            }
        }
    }

    /// Starts the op in slot `id` (counted by the caller).
    #[inline]
    fn start(&mut self, id: OpId) {
        if let ActiveBackend::Uring(u) = &mut self.backend {
            // io_uring starts an op without completing anything: no delivery needed.
            u.start(&mut self.table, id);
            return;
        }
        if let (ActiveBackend::Epoll(e), mut delivery) = self.split(None) {
            e.start(&mut delivery, id);
        }
    }

    /// Polls a single-shot operation: ready with its completion once the final CQE is in
    /// (the slot is then free).
    #[inline]
    pub(crate) fn poll_complete(&mut self, id: OpId, cx: &mut Context<'_>) -> Poll<Completion> {
        let slot = self
            .table
            .get_mut(id)
            .expect("polled an operation that was released");
        if slot.done {
            // A zero-copy send posts its result first and its buffer notification last;
            // the result is what the caller wants.
            let c = slot.single.take().expect("a done op has its completion");
            self.table.release(id);
            return Poll::Ready(c);
        }
        OpTable::register_waker(slot, cx.waker());
        Poll::Pending
    }

    /// Polls a multishot operation: the next completion, or `None` once it has ended (the
    /// slot is then free).
    #[inline]
    pub(crate) fn poll_next(&mut self, id: OpId, cx: &mut Context<'_>) -> Poll<Option<Completion>> {
        let Some(slot) = self.table.get_mut(id) else {
            return Poll::Ready(None);
        };
        if let Some(c) = slot.queue.pop_front() {
            self.stream_took(id);
            return Poll::Ready(Some(c));
        }
        if slot.done {
            self.table.release(id);
            return Poll::Ready(None);
        }
        OpTable::register_waker(slot, cx.waker());
        Poll::Pending
    }

    /// [`poll_next`](Self::poll_next) for a multishot receive, as `RecvStream` takes it:
    /// the next completion's result and buffer only (a completion is large; its
    /// address is never set for a receive).
    #[inline]
    pub(crate) fn poll_recv(
        &mut self,
        id: OpId,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(i32, Option<crate::buf::PoolBuf>)>> {
        let Some(slot) = self.table.get_mut(id) else {
            return Poll::Ready(None);
        };
        let popped = match &slot.watch {
            Some(w) => w.items.borrow_mut().pop_front(),
            None => slot.queue.pop_front().map(|c| (c.result, c.buf)),
        };
        if let Some(item) = popped {
            self.stream_took(id);
            return Poll::Ready(Some(item));
        }
        if slot.done {
            self.table.release(id);
            return Poll::Ready(None);
        }
        OpTable::register_waker(slot, cx.waker());
        Poll::Pending
    }

    /// The consumer of multishot op `id` (a `RecvStream`, or any `poll_next` caller) took
    /// a completion: if the op is stopped for backlog and its consumer has caught up,
    /// resume it.
    #[inline]
    pub(crate) fn stream_took(&mut self, id: OpId) {
        let Some(slot) = self.table.get_mut(id) else {
            return;
        };
        if !slot.backlogged {
            return;
        }
        let left = match &slot.watch {
            Some(w) => w.items.borrow().len(),
            None => slot.queue.len(),
        };
        if left <= BACKLOG / 2 {
            self.caught_up(id);
        }
    }

    /// From now on, the completions of multishot receive `id` go to a queue its stream
    /// holds (see [`StreamQueue`](table::StreamQueue)), with those already queued;
    /// `None` if the slot is gone.
    pub(crate) fn watch_queue(&mut self, id: OpId) -> Option<table::QueueWatch> {
        let slot = self.table.get_mut(id)?;
        if let Some(w) = &slot.watch {
            return Some(w.clone());
        }
        let shared = table::StreamQueue::default();
        shared
            .items
            .borrow_mut()
            .extend(slot.queue.drain(..).map(|c| (c.result, c.buf)));
        shared.done.set(slot.done);
        shared.backlogged.set(slot.backlogged);
        let shared = std::rc::Rc::new(shared);
        slot.watch = Some(shared.clone());
        Some(shared)
    }

    /// The consumer of a backlogged receive caught up: receive again.
    #[cold]
    fn caught_up(&mut self, id: OpId) {
        let Some(slot) = self.table.get_mut(id) else {
            return;
        };
        slot.backlogged = false;
        if let Some(w) = &slot.watch {
            w.backlogged.set(false);
        }
        let (backend, mut delivery) = self.split(None);
        match backend {
            ActiveBackend::Uring(u) => u.resume(&mut delivery, id),
            ActiveBackend::Epoll(e) => e.resume(&mut delivery, id),
        }
    }

    /// The future of `id` is gone. If the operation is finished its slot is freed;
    /// otherwise it is cancelled and `held` (the buffers the kernel may still touch) is
    /// held until the final completion. Completions already queued are dropped: pool
    /// buffers go back, accepted fds are closed.
    pub(crate) fn detach(&mut self, id: OpId, held: Option<HeldValue>) {
        let Some(slot) = self.table.get_mut(id) else {
            return;
        };
        let yields_fd = slot.op.yields_fd();
        for c in slot.queue.drain(..).chain(slot.single.take()) {
            if yields_fd && c.result >= 0 {
                // SAFETY: an fd produced for a future that will never see it.
                unsafe { libc::close(c.result) };
            }
        }
        if slot.done {
            self.table.release(id);
            return;
        }
        slot.state = SlotState::Orphaned;
        slot.held = held;
        // Its consumer is gone.
        slot.watch = None;
        slot.notify = Notify::Waker(None);
        self.cancel(id);
    }

    /// Asks to cancel an executor-face operation whose future stays to collect the
    /// final completion (the cancel that hands the buffer back).
    pub(crate) fn request_cancel(&mut self, id: OpId) {
        self.cancel(id);
    }

    /// Cancels every operation and reaps until none is left or `deadline` passes.
    /// Called when a core shuts down.
    pub fn shutdown(&mut self, deadline: Duration) {
        let start = std::time::Instant::now();
        for id in self.table.live_ids() {
            if let Some(slot) = self.table.get_mut(id) {
                if slot.state == SlotState::Owned && matches!(slot.notify, Notify::Waker(_)) {
                    slot.state = SlotState::Orphaned;
                }
            }
            self.cancel(id);
        }
        if let ActiveBackend::Uring(u) = &mut self.backend {
            u.cancel_background();
        }
        while self.live_ops() > 0 && start.elapsed() < deadline {
            let left = deadline.saturating_sub(start.elapsed());
            if self
                .turn(Some(left.min(Duration::from_millis(10))), &mut |_, _, _| {})
                .is_err()
            {
                break;
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if self.live_ops() > 0 {
            self.shutdown(Duration::from_secs(1));
        }
        if self.live_ops() > 0 {
            tracing::error!(
                ops = self.live_ops(),
                "driver dropped while the kernel still owns operations; leaking their buffers"
            );
            // The kernel may still write into these: they must never be freed.
            std::mem::forget(std::mem::replace(&mut self.table, OpTable::new()));
            std::mem::forget(self.pool.clone());
            if let ActiveBackend::Uring(u) = &mut self.backend {
                u.leak_background();
            }
        }
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("backend", &self.info)
            .field("live_ops", &self.live_ops())
            .finish()
    }
}
