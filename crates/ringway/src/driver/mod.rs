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
mod config;
mod delivery;
mod epoll;
mod first_inline;
mod held;
pub mod op;
mod pressure;
pub mod probe;
mod slot;
mod starved;
mod stats;
mod stream_queue;
mod table;
mod uring;
mod waker;

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

pub use addr::RawAddr;
pub use completion::{Completion, OpId};
pub use config::{Backend, BackendInfo, DriverConfig};
pub use op::Op;
pub use stats::DriverStats;
pub use waker::DriverWaker;
use waker::OwnedWaker;

use delivery::{Delivery, Sink};
pub(crate) use held::{Held, HeldValue, KeptUntilDone};
use op::OpKind;
use slot::{Flight, Owner};
pub(crate) use stream_queue::QueueWatch;
use table::OpTable;

use crate::buf::BufferPool;

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
    /// Queues of ended receive streams, empty, for the next streams (see
    /// [`keep_queue`](Self::keep_queue)).
    spare_queues: Vec<stream_queue::QueueWatch>,
}

/// How many empty stream queues a driver keeps for the next streams: a churning
/// server's connections that end within a turn or so.
const SPARE_QUEUES: usize = 256;

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
                    pool.set_policy(cfg.pool_share, cfg.pool_pressure);
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
        let pool = BufferPool::new_list(cfg.pool_buffers, cfg.pool_buffers_max, cfg.pool_buf_size)?;
        pool.set_policy(cfg.pool_share, cfg.pool_pressure);
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
            spare_queues: Vec::new(),
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
        if matches!(slot.flight, Flight::Done | Flight::Cancelling) {
            return;
        }
        // (The backend reads where it stood before: it is told which.)
        let was = std::mem::replace(&mut slot.flight, Flight::Cancelling);
        let (backend, mut delivery) = self.split(None);
        match backend {
            ActiveBackend::Uring(u) => u.cancel(&mut delivery, id, was),
            ActiveBackend::Epoll(e) => e.cancel(&mut delivery, id, was),
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
        if slot.flight == Flight::Done {
            if let Owner::Single { completion, .. } = &mut slot.owner {
                let c = completion.take().expect("a done op has its completion");
                self.table.release(id);
                return Submitted::Done(c);
            }
        }
        slot.register_waker(waker);
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
    /// `quiet`: the end of the send wakes no task (nothing but the socket's record hears
    /// of it, and dropping the buffer wakes nobody: `IoBuf::drop_wakes_nobody`), so
    /// io_uring's wait may look beyond its completion (see `driver/uring/background.rs`).
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
        quiet: bool,
        held: impl FnOnce() -> H,
    ) -> Result<Option<OpId>, i32> {
        if let ActiveBackend::Uring(u) = &mut self.backend {
            self.stats.submitted += 1;
            self.stats.sends += 1;
            return Ok(Some(u.start_background(&send, quiet, held)));
        }
        // SAFETY: the caller's promise.
        unsafe { self.submit_detached_with(send.into(), held) }
    }

    /// A task waits for background send `id` to end (`flush`, or a second
    /// `send_all`): its completion is an event the core must wake for.
    pub(crate) fn awaiting_background(&mut self, id: OpId) {
        if let ActiveBackend::Uring(u) = &mut self.backend {
            u.awaiting_background(id);
        }
    }

    /// Closes `fd` once operation `after` (a detached send on it, say) has finished,
    /// without cutting it short; at once if it has. io_uring queues a close behind it in
    /// the ring (the kernel holds the file for an op it has taken, and the close is
    /// prepared after any op started before it); epoll keeps the fd, and its
    /// registration, until that op ends.
    pub(crate) fn close_after(&mut self, fd: OwnedFd, after: Option<OpId>) {
        let pending = after.filter(|id| match &self.backend {
            ActiveBackend::Uring(u) if u.background_live(*id) => true,
            _ => self
                .table
                .get_mut(*id)
                .is_some_and(|s| s.flight != Flight::Done),
        });
        match (&mut self.backend, pending) {
            // Kept until the send has ended: between its first try and its rest no
            // operation holds the file (see `driver/uring/background.rs`).
            (ActiveBackend::Uring(u), Some(id)) if u.background_live(id) => {
                u.close_after_background(id, fd)
            }
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
        if slot.flight == Flight::Done {
            // A zero-copy send posts its result first and its buffer notification last;
            // the result is what the caller wants.
            let Owner::Single { completion, .. } = &mut slot.owner else {
                unreachable!("poll_complete of an op no future awaits")
            };
            let c = completion.take().expect("a done op has its completion");
            self.table.release(id);
            return Poll::Ready(c);
        }
        slot.register_waker(cx.waker());
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
        if slot.flight == Flight::Done {
            self.table.release(id);
            return Poll::Ready(None);
        }
        slot.register_waker(cx.waker());
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
        let popped = match &slot.owner {
            Owner::Stream {
                shared: Some(w), ..
            } => w.items.borrow_mut().pop_front(),
            _ => slot.queue.pop_front().map(|c| (c.result, c.buf)),
        };
        if let Some(item) = popped {
            self.stream_took(id);
            return Poll::Ready(Some(item));
        }
        if slot.flight == Flight::Done {
            self.table.release(id);
            return Poll::Ready(None);
        }
        slot.register_waker(cx.waker());
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
        let left = match &slot.owner {
            Owner::Stream {
                backlogged: true,
                shared,
                ..
            } => match shared {
                Some(w) => w.items.borrow().len(),
                None => slot.queue.len(),
            },
            _ => return,
        };
        if left <= slot.resume_at as usize {
            self.caught_up(id);
        }
    }

    /// From now on, the completions of multishot receive `id` go to a queue its stream
    /// holds (see [`StreamQueue`](stream_queue::StreamQueue)), with those already queued;
    /// `None` if the slot is gone.
    pub(crate) fn watch_queue(&mut self, id: OpId) -> Option<stream_queue::QueueWatch> {
        let slot = self.table.get_mut(id)?;
        let done = slot.flight == Flight::Done;
        let Owner::Stream {
            shared, backlogged, ..
        } = &mut slot.owner
        else {
            return None;
        };
        if let Some(w) = shared {
            return Some(w.clone());
        }
        // An ended stream's queue if one is kept (an allocation and a free less per
        // connection), emptied and reset when it was kept.
        let queue = self.spare_queues.pop().unwrap_or_default();
        queue
            .items
            .borrow_mut()
            .extend(slot.queue.drain(..).map(|c| (c.result, c.buf)));
        queue.done.set(done);
        queue.backlogged.set(*backlogged);
        *shared = Some(queue.clone());
        Some(queue)
    }

    /// Keeps the queue of a receive stream that has ended (its operation detached, so
    /// the slot's share of it is gone) for the next stream, if nothing else holds it
    /// and nothing waits in it; otherwise it is given back, to be dropped by the
    /// caller.
    pub(crate) fn keep_queue(
        &mut self,
        queue: stream_queue::QueueWatch,
    ) -> Option<stream_queue::QueueWatch> {
        if self.spare_queues.len() >= SPARE_QUEUES
            || std::rc::Rc::strong_count(&queue) != 1
            || !queue.items.borrow().is_empty()
        {
            return Some(queue);
        }
        queue.done.set(false);
        queue.backlogged.set(false);
        self.spare_queues.push(queue);
        None
    }

    /// The consumer of a backlogged receive caught up: receive again.
    #[cold]
    fn caught_up(&mut self, id: OpId) {
        let Some(slot) = self.table.get_mut(id) else {
            return;
        };
        if let Owner::Stream {
            backlogged, shared, ..
        } = &mut slot.owner
        {
            *backlogged = false;
            if let Some(w) = shared {
                w.backlogged.set(false);
            }
            self.stats.recv_resumed += 1;
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
        // Its consumer is gone: it is an orphan from now on (a stream's shared queue
        // goes with the owner).
        let owner = std::mem::replace(&mut slot.owner, Owner::Orphaned(held));
        let single = match owner {
            Owner::Single { completion, .. } => completion,
            _ => None,
        };
        // (Mostly nothing waits: an ended receive's stream took all. The drain is not
        // built then, nor dropped: 60 instructions per connection.)
        if single.is_some() || !slot.queue.is_empty() {
            for c in slot.queue.drain(..).chain(single) {
                if yields_fd && c.result >= 0 {
                    // SAFETY: an fd produced for a future that will never see it.
                    unsafe { libc::close(c.result) };
                }
            }
        }
        // Not this task's to keep alive any more.
        slot.waker = None;
        if slot.flight == Flight::Done {
            self.table.release(id);
            return;
        }
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
                if matches!(slot.owner, Owner::Single { .. } | Owner::Stream { .. }) {
                    slot.owner = Owner::Orphaned(None);
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
