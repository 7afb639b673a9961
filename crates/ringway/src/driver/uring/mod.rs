//! The io_uring backend.
//!
//! One ring per core, set up by [`probe`](super::probe) with the best flags the kernel
//! takes. Each turn is exactly one `io_uring_enter`: it submits every queued SQE and
//! waits in the same call. The executor's wait has no timeout (the core's next
//! deadline is a `TIMEOUT` op in the ring, see `Uring::wake_at`); the low-level face's
//! `turn` passes its own as an `EXT_ARG` timeout. The only other enters happen when the
//! submission queue is full (we flush it to make room) or the completion queue
//! overflowed (we drain the kernel's backlog).
//!
//! `user_data` is the slot's [`OpId`]; values with the slot index `u32::MAX` are the
//! driver's own: the wake-up read on the eventfd, the core's timer, cancels and linked
//! timeouts, whose completions need no routing; values with `u32::MAX - 1` are
//! background sends, which have no slot (see [`background`]).
//!
//! How each op becomes an SQE is the op's own business (`UringOp` in `driver::op`);
//! this file owns the ring, the order of submission, and what a CQE means for the
//! operation's life (final or not, re-armed, parked on an empty pool).

mod background;
mod scratch;

use super::op::UringEnv;
use background::BackgroundSends;

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::completion::{Completion, OpId};
use super::delivery::Delivery;
use super::held::{Held, HeldValue};
use super::op::{Op, OpKind, SendAll, UringOp};
use super::slot::{Flight, MultishotEnd, Owner};
use super::starved::Starved;
use super::table::OpTable;
use scratch::ScratchPages;

const INTERNAL: u64 = u32::MAX as u64;
const WAKE_UD: u64 = (1 << 32) | INTERNAL;
const CANCEL_UD: u64 = (2 << 32) | INTERNAL;
const TIMEOUT_UD: u64 = (3 << 32) | INTERNAL;
/// The core's timer (see [`Uring::wake_at`]).
const TIMER_UD: u64 = (4 << 32) | INTERNAL;
/// A move of the core's timer to an earlier time; its CQE needs no routing.
const TIMER_UPDATE_UD: u64 = (5 << 32) | INTERNAL;
/// A close that nobody awaits (see [`Uring::close_soon`]).
const CLOSE_UD: u64 = (6 << 32) | INTERNAL;

/// The buffer group id of the core's provided-buffer ring.
pub(crate) const BGID: u16 = 0;

/// `IORING_ENTER_GETEVENTS` from the kernel ABI (the io-uring crate keeps its constant
/// private).
const ENTER_GETEVENTS: u32 = 1;

pub(crate) struct Uring {
    // Dropped first: the ring, then what its operations point into.
    ring: IoUring,
    /// What the driver keeps of the operations in the ring.
    records: Records,
    wake_fd: RawFd,
    /// The eventfd counter is read into here. Leaked on purpose (8 bytes per ring): the
    /// read is always in flight, and a wake from another thread racing with the ring's
    /// teardown could still complete it after the driver is gone.
    wake_buf: &'static mut u64,
    /// Parked receives being re-armed this turn (kept for its capacity).
    rearm: Vec<OpId>,
    /// Counted here (push has no stats at hand) and folded into the stats each turn.
    sq_full_flushes: u64,
    /// The core's timer: the time it is armed for (see [`wake_at`](Self::wake_at)).
    timer_ts: types::Timespec,
    /// An `Instant` and the `CLOCK_MONOTONIC` time read just after it, to turn a
    /// deadline into the kernel's absolute time without reading the clock.
    clock_base: (Instant, Duration),
    /// Background sends start with a first try that never waits (not under SQPOLL,
    /// whose kernel thread submits on its own time; see `background.rs`).
    first_tries: bool,
    /// First tries submitted since the last reap: each posts its CQE during its enter,
    /// so the turn's wait asks for that many completions more than the one it waits for.
    first_tries_pending: u32,
    /// Half the completion queue's size: the most first tries a wait looks beyond.
    cq_half: usize,
}

/// Everything the ring's completions are routed with, apart from the ring: a batch of
/// completions is read straight out of the completion queue (no copy) while each is
/// routed, which needs the queue and these borrowed at once.
struct Records {
    /// Background sends in flight: their buffers and their sockets' records.
    background: BackgroundSends,
    env: UringEnv,
    /// Kernel-visible memory of each operation, by slot index.
    scratch: ScratchPages,
    /// Multishot receives parked on an empty pool.
    starved: Starved,
    /// Operations started since the last enter. Their SQEs are built and pushed just
    /// before the enter, so that one cancelled in between never reaches the kernel:
    /// once in the SQ it would run in the same batch as (and ahead of) its
    /// `ASYNC_CANCEL`, and an accept or receive dropped right after its first poll would
    /// take a connection or bytes from the backlog that the next operation on the
    /// socket should get (the driver can only close or discard them).
    unsubmitted: Vec<OpId>,
    /// Fds to close with the next enter, after the operations started before
    /// (see [`Uring::close_soon`]).
    closes: Vec<RawFd>,
    /// The eventfd read completed during this reap: re-armed once the queue is let go.
    wake_read: bool,
    /// The core's timer is in the kernel, due at this time (or earlier: a move to an
    /// earlier time is on its way); `None` once its CQE has come.
    timer_armed: Option<Instant>,
    /// The core's timer's CQE came: its timers may be due.
    timer_fired: bool,
}

impl Uring {
    pub(crate) fn new(ring: IoUring, wake_fd: RawFd, env: UringEnv) -> Self {
        let mut u = Uring {
            ring,
            records: Records {
                background: BackgroundSends::default(),
                env,
                scratch: ScratchPages::default(),
                starved: Starved::default(),
                unsubmitted: Vec::new(),
                closes: Vec::new(),
                wake_read: false,
                timer_armed: None,
                timer_fired: false,
            },
            wake_fd,
            wake_buf: leaked_wake_buf(),
            rearm: Vec::new(),
            sq_full_flushes: 0,
            timer_ts: types::Timespec::new(),
            clock_base: clock_base(),
            first_tries: false,
            first_tries_pending: 0,
            cq_half: 0,
        };
        u.cq_half = u.ring.completion().capacity() / 2;
        u.first_tries = !u.ring.params().is_setup_sqpoll();
        u.arm_wake();
        u
    }

    fn arm_wake(&mut self) {
        let sqe = opcode::Read::new(
            types::Fd(self.wake_fd),
            (self.wake_buf as *mut u64).cast::<u8>(),
            8,
        )
        .build()
        .user_data(WAKE_UD);
        self.push(sqe);
    }

    /// Pushes one SQE, through a view of the submission queue alone (what `split` adds
    /// is only needed when the queue is full).
    #[inline]
    fn push(&mut self, sqe: squeue::Entry) {
        // SAFETY: every pointer in the SQE stays valid until its final CQE: buffers are
        // owned by the slot's future, `held` or the background table, scratch lives in
        // stable pages.
        if unsafe { self.ring.submission().push(&sqe) }.is_err() {
            self.push_full(sqe);
        }
    }

    /// `push` when the submission queue is full: hand it to the kernel first.
    #[cold]
    fn push_full(&mut self, sqe: squeue::Entry) {
        let (submitter, mut sq, _) = self.ring.split();
        push_into(&submitter, &mut sq, &sqe, &mut self.sq_full_flushes);
    }

    /// Starts a newly submitted operation: its input address is copied now (the
    /// caller's may not outlive the submit), its SQE goes with the next enter.
    #[inline]
    pub(crate) fn start(&mut self, table: &mut OpTable, id: OpId) {
        let Some(slot) = table.get_mut(id) else {
            return;
        };
        if matches!(slot.op, Op::Send(_)) {
            // What a previous op of this slot may have left in the flag only sends read.
            self.records.scratch.get(id.index).plain_send = false;
        }
        if let Some(addr) = slot.op.input_addr() {
            // SAFETY: the submitter guarantees `addr` is valid during submission.
            self.records.scratch.get(id.index).addr = unsafe { *addr };
        }
        self.records.unsubmitted.push(id);
    }

    /// Starts a background send: its SQE goes into the submission queue now, and `held`
    /// (its buffer, its socket's record) is kept until its CQE, apart from the op table.
    /// Returns its id, for `close_after`.
    #[inline]
    pub(crate) fn start_background<H: Held>(
        &mut self,
        send: &SendAll,
        quiet: bool,
        held: impl FnOnce() -> H,
    ) -> OpId {
        let first_try = self.first_tries && quiet;
        self.first_tries_pending += first_try as u32;
        let id = self.records.background.insert(held, send, first_try);
        self.push(send.entry_with(first_try).user_data(id.to_user_data()));
        id
    }

    /// A task waits for background send `id`: if it is a first try counted for this
    /// turn's wait, it is counted no more (its CQE wakes that task).
    pub(crate) fn awaiting_background(&mut self, id: OpId) {
        if self.records.background.uncount(id) {
            self.first_tries_pending = self.first_tries_pending.saturating_sub(1);
        }
    }

    /// Closes `fd`, the socket of background send `id`, once that send has ended (its
    /// rest may still have to go out on it); at once if it has.
    pub(crate) fn close_after_background(&mut self, id: OpId, fd: std::os::fd::OwnedFd) {
        if let Err(fd) = self.records.background.close_when_done(id, fd) {
            self.close_soon(fd);
        }
    }

    /// Submits the rests of the first tries that did not all fit (after a reap: the
    /// completion queue is let go).
    #[cold]
    fn push_rests(&mut self, d: &mut Delivery<'_>) {
        let rests: Vec<(OpId, SendAll)> = self.records.background.take_rests().collect();
        for (id, rest) in rests {
            d.stats.send_rests += 1;
            d.stats.sends += 1;
            d.stats.submitted += 1;
            self.push(rest.entry().user_data(id.to_user_data()));
        }
    }

    /// Closes `fd` through the ring, with the core's next enter: no syscall of its own
    /// and no slot. Its SQE goes in after those of every operation started before
    /// (see `push_unsubmitted`), so none of them can meet the fd closed, or its number
    /// taken by a connection accepted in the same enter. Its completion needs no
    /// routing; a failure is only logged (the fd is gone either way).
    #[inline]
    pub(crate) fn close_soon(&mut self, fd: std::os::fd::OwnedFd) {
        use std::os::fd::IntoRawFd;
        self.records.closes.push(fd.into_raw_fd());
    }

    /// Whether background send `id` is still in flight.
    pub(crate) fn background_live(&self, id: OpId) -> bool {
        self.records.background.is_live(id)
    }

    /// Background sends in flight.
    pub(crate) fn background_count(&self) -> usize {
        self.records.background.live()
    }

    /// Asks the kernel to end every background send early (at shutdown).
    pub(crate) fn cancel_background(&mut self) {
        self.records.background.stop();
        for ud in self.records.background.live_user_data() {
            let sqe = opcode::AsyncCancel::new(ud).build().user_data(CANCEL_UD);
            self.push(sqe);
        }
    }

    /// Gives up on the background sends still in flight: their buffers are leaked, as
    /// the kernel may still read them (a driver dropped with operations in flight).
    pub(crate) fn leak_background(&mut self) {
        std::mem::forget(std::mem::take(&mut self.records.background));
    }

    /// Makes the core's timer fire at `at` at the latest: one `TIMEOUT` op with an
    /// absolute time, moved earlier in place (`TIMEOUT_UPDATE`) when a nearer deadline
    /// comes, left alone when `at` is later (it then fires early, once, which costs the
    /// core one look at its timers). Its CQE says the core's timers may be due
    /// ([`take_timer_fired`](Self::take_timer_fired)): the core reads the clock only
    /// then, not every turn, and the turn's wait needs no timeout of its own.
    #[inline]
    pub(crate) fn wake_at(&mut self, at: Instant) {
        let armed = self.records.timer_armed;
        if armed.is_some_and(|armed| armed <= at) {
            return;
        }
        self.arm_timer(at, armed.is_some());
    }

    #[cold]
    fn arm_timer(&mut self, at: Instant, update: bool) {
        // `CLOCK_MONOTONIC`, which is `Instant`'s clock on Linux: the base's kernel time
        // was read after its `Instant`, so the time armed is never before `at`.
        let (base, mono) = self.clock_base;
        let abs = mono + at.saturating_duration_since(base);
        self.timer_ts = types::Timespec::new()
            .sec(abs.as_secs())
            .nsec(abs.subsec_nanos());
        let ts: *const types::Timespec = &self.timer_ts;
        // The kernel copies the timespec when it prepares the SQE, during this turn's
        // enter; `timer_ts` stays where it is (the backend is boxed, and outlives the
        // ring) until then. It is only written again by a later arm, after that enter;
        // under SQPOLL the kernel's thread may prepare this SQE after that, and then
        // reads the later arm's time, which is earlier (an arm only ever moves it
        // earlier): the timer fires early once, which is harmless.
        let sqe = if update {
            opcode::TimeoutUpdate::new(TIMER_UD, ts)
                .flags(types::TimeoutFlags::ABS)
                .build()
                .user_data(TIMER_UPDATE_UD)
        } else {
            opcode::Timeout::new(ts)
                .flags(types::TimeoutFlags::ABS)
                .build()
                .user_data(TIMER_UD)
        };
        self.records.timer_armed = Some(at);
        self.push(sqe);
    }

    /// Whether the core's timer fired since the last call.
    #[inline]
    pub(crate) fn take_timer_fired(&mut self) -> bool {
        std::mem::take(&mut self.records.timer_fired)
    }

    /// Starts an operation again (see [`Records::restart`]).
    fn restart(&mut self, d: &mut Delivery<'_>, id: OpId) {
        self.records.restart(d, id);
    }

    /// Pushes the SQEs of the operations started since the last enter, through one view
    /// of the submission queue (each view reads the kernel's head; one per batch).
    fn push_unsubmitted(&mut self, d: &mut Delivery<'_>) {
        if self.records.unsubmitted.is_empty() {
            if !self.records.closes.is_empty() {
                self.push_closes();
            }
            return;
        }
        let env = self.records.env;
        let (submitter, mut sq, _) = self.ring.split();
        for &id in &self.records.unsubmitted {
            let Some(slot) = d.table.get_mut(id) else {
                continue;
            };
            if slot.flight == Flight::Done {
                continue;
            }
            let scratch = self.records.scratch.get(id.index);
            let entry = slot.op.sqe(scratch, &env).user_data(id.to_user_data());
            let Some(t) = slot.timeout else {
                push_into(&submitter, &mut sq, &entry, &mut self.sq_full_flushes);
                continue;
            };
            scratch.timeout = types::Timespec::new()
                .sec(t.as_secs())
                .nsec(t.subsec_nanos());
            let ts: *const types::Timespec = &scratch.timeout;
            // SAFETY: the timespec lives in the op's scratch, in stable pages, until the
            // final CQE.
            let link = opcode::LinkTimeout::new(unsafe { &*ts })
                .build()
                .user_data(TIMEOUT_UD);
            // Both must sit in the SQ together, in order.
            if sq.capacity() - sq.len() < 2 {
                flush_full(&submitter, &mut sq, &mut self.sq_full_flushes);
            }
            push_into(
                &submitter,
                &mut sq,
                &entry.flags(squeue::Flags::IO_LINK),
                &mut self.sq_full_flushes,
            );
            push_into(&submitter, &mut sq, &link, &mut self.sq_full_flushes);
        }
        self.records.unsubmitted.clear();
        drop(sq);
        if !self.records.closes.is_empty() {
            self.push_closes();
        }
    }

    /// Pushes the closes asked for since the last enter (after the operations).
    fn push_closes(&mut self) {
        let mut closes = std::mem::take(&mut self.records.closes);
        for fd in closes.drain(..) {
            let sqe = opcode::Close::new(types::Fd(fd))
                .build()
                .user_data(CLOSE_UD);
            self.push(sqe);
        }
        self.records.closes = closes;
    }

    /// Ends operation `id` early, which stood at `was` (its slot now says
    /// `Cancelling`): at once if the kernel does not have it, else with an
    /// `ASYNC_CANCEL` (its final CQE still comes).
    pub(crate) fn cancel(&mut self, d: &mut Delivery<'_>, id: OpId, was: Flight) {
        if let Some(pos) = self.records.unsubmitted.iter().position(|s| *s == id) {
            // Never handed to the kernel, and now it never will be: it ends here, with
            // nothing done (see `unsubmitted`).
            self.records.unsubmitted.remove(pos);
            d.deliver(id, Completion::new(-libc::ECANCELED), true);
            return;
        }
        if was == Flight::Starved {
            self.records.starved.forget(id);
        }
        if matches!(was, Flight::Starved | Flight::Stopped) {
            // Not in the kernel (parked on an empty pool, or stopped for backlog):
            // nothing to cancel there.
            d.deliver(id, Completion::new(-libc::ECANCELED), true);
            return;
        }
        let sqe = opcode::AsyncCancel::new(id.to_user_data())
            .build()
            .user_data(CANCEL_UD);
        self.push(sqe);
    }

    pub(crate) fn turn(
        &mut self,
        d: &mut Delivery<'_>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        if self.records.starved.any() {
            self.rearm_starved(d);
        }
        self.push_unsubmitted(d);
        d.stats.enters += 1;
        // The counted first tries' CQEs come during this enter (they never wait), and
        // no task waits for them: a wait waits for one completion beyond them. Not
        // while a receive is parked on a dry pool (a first try's buffer going back may
        // be what lets it go on), nor for more than the completion queue holds.
        let beyond = match self.first_tries_pending as usize {
            0 => 0,
            _ if self.records.starved.any() => 0,
            n if n >= self.cq_half => 0,
            n => n,
        };
        let res = match timeout {
            Some(t) if t.is_zero() => {
                let to_submit = self.ring.submission().len() as u32;
                // SAFETY: no argument pointer; GETEVENTS runs deferred task work so the
                // completions that are ready get posted, without waiting for any.
                unsafe {
                    self.ring.submitter().enter::<libc::sigset_t>(
                        to_submit,
                        0,
                        ENTER_GETEVENTS,
                        None,
                    )
                }
            }
            Some(t) => {
                let ts = types::Timespec::new()
                    .sec(t.as_secs())
                    .nsec(t.subsec_nanos());
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1 + beyond, &args)
            }
            None => self.ring.submit_and_wait(1 + beyond),
        };
        // Their CQEs are reaped below (or were posted by this enter, if it failed
        // before waiting: the next enter does not count them again).
        self.first_tries_pending = 0;
        if let Err(e) = res {
            match e.raw_os_error() {
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN) => {}
                _ => return Err(e),
            }
        }
        self.reap(d);
        if !d.backlogged.is_empty() {
            self.stop_backlogged(d);
        }
        if self.sq_full_flushes != 0 {
            d.stats.sq_full_flushes += std::mem::take(&mut self.sq_full_flushes);
        }
        // The kernel kept CQEs that did not fit: flush and reap them too.
        while self.ring.submission().cq_overflow() {
            d.stats.cq_overflow_flushes += 1;
            // SAFETY: as above.
            let _ = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(0, 0, ENTER_GETEVENTS, None)
            };
            if self.reap(d) == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Re-arms the receives parked on an empty pool for which buffers came back; if none
    /// did, the pool-pressure rule first takes back what waits for readers (and the
    /// receives it stops are stopped here, before this turn's enter).
    #[cold]
    fn rearm_starved(&mut self, d: &mut Delivery<'_>) {
        let relieved = self.records.starved.relieve(d);
        let mut rearm = std::mem::take(&mut self.rearm);
        self.records.starved.take_rearmable(d.pool, &mut rearm);
        for id in rearm.drain(..) {
            d.stats.pool_resumed += 1;
            let Some(slot) = d.table.get_mut(id) else {
                continue;
            };
            if slot.backlogged() {
                // Its reader is behind: it stays stopped until it catches up (`resume`).
                slot.flight = Flight::Stopped;
                continue;
            }
            self.restart(d, id);
        }
        self.rearm = rearm;
        if relieved {
            self.stop_backlogged(d);
        }
    }

    /// Stops the receives whose consumers fell behind (`BACKLOG` completions, the share,
    /// or the pool-pressure rule): an `ASYNC_CANCEL` each; their end CQE parks them (see
    /// `dispatch`).
    fn stop_backlogged(&mut self, d: &mut Delivery<'_>) {
        for i in 0..d.backlogged.len() {
            let id = d.backlogged[i];
            // Only one the kernel has: a receive parked on an empty pool is stopped where
            // it is re-armed (`rearm_starved`).
            let Some(slot) = d.table.get_mut(id) else {
                continue;
            };
            if slot.backlogged() && slot.flight == Flight::Running {
                if let Some(at) = self.records.unsubmitted.iter().position(|u| *u == id) {
                    // Started again since the last enter (the pool-pressure rule stops
                    // receives at the start of a turn): the kernel never had it.
                    self.records.unsubmitted.remove(at);
                    slot.flight = Flight::Stopped;
                    continue;
                }
                slot.flight = Flight::Stopping;
                let sqe = opcode::AsyncCancel::new(id.to_user_data())
                    .build()
                    .user_data(CANCEL_UD);
                self.push(sqe);
            }
        }
        d.backlogged.clear();
    }

    /// The consumer of a stopped receive caught up: arm it again (at once if the kernel
    /// has let go of it; else its end CQE will).
    pub(crate) fn resume(&mut self, d: &mut Delivery<'_>, id: OpId) {
        if d.table
            .get_mut(id)
            .is_some_and(|s| s.flight == Flight::Stopped)
        {
            self.restart(d, id);
        }
    }

    fn reap(&mut self, d: &mut Delivery<'_>) -> usize {
        let mut n = 0;
        {
            // Each completion is read where the kernel wrote it and routed at once (no
            // copy); the slots go back to the kernel as each batch ends.
            let mut cq = self.ring.completion();
            loop {
                let batch = cq.len();
                if batch == 0 {
                    break;
                }
                n += batch;
                for c in &mut cq {
                    self.records
                        .dispatch(d, c.user_data(), c.result(), c.flags());
                }
                cq.sync();
            }
        }
        d.stats.completions += n as u64;
        if std::mem::take(&mut self.records.wake_read) {
            self.arm_wake();
        }
        if self.records.background.has_rests() {
            self.push_rests(d);
        }
        n
    }
}

impl Drop for Uring {
    /// Hands the kernel what is still queued, closes through the ring above all (they
    /// carry no pointers): the driver checked before that no operation that does is in
    /// flight (`Driver::drop`).
    fn drop(&mut self) {
        if !self.records.closes.is_empty() {
            self.push_closes();
        }
        let _ = self.ring.submit();
    }
}

/// The eight bytes the eventfd counter is read into, leaked on purpose (see
/// `Uring::wake_buf`). Its own function, never inlined, so that `scripts/sanitize` can
/// tell LeakSanitizer this one leak is meant (`scripts/lsan.supp`) and still report any
/// other.
#[inline(never)]
fn leaked_wake_buf() -> &'static mut u64 {
    Box::leak(Box::new(0))
}

impl Records {
    /// Starts an operation again (a multishot op the kernel ended, a send that must
    /// retry without zero-copy); its SQE goes with the next enter.
    fn restart(&mut self, d: &mut Delivery<'_>, id: OpId) {
        if let Some(slot) = d.table.get_mut(id) {
            slot.flight = Flight::Running;
            self.unsubmitted.push(id);
        }
    }

    fn dispatch(&mut self, d: &mut Delivery<'_>, ud: u64, result: i32, flags: u32) {
        if ud as u32 == background::TAG {
            self.background
                .complete((ud >> 32) as u32, result, &mut self.closes);
            return;
        }
        if ud as u32 == INTERNAL as u32 {
            self.internal(ud, result);
            return;
        }
        let id = OpId::from_user_data(ud);
        let more = cqueue::more(flags);
        if !self.dispatch_common(d, id, result, flags, more) {
            self.dispatch_rest(d, id, result, flags, more);
        }
    }

    /// The CQE of one of the driver's own SQEs: the wake-up read, the core's timer,
    /// cancels, linked timeouts and closes, which need no routing.
    fn internal(&mut self, ud: u64, result: i32) {
        if ud == WAKE_UD {
            self.wake_read = true;
        } else if ud == TIMER_UD {
            // Fired (or cancelled with the ring): out of the kernel either way.
            self.timer_armed = None;
            self.timer_fired = true;
        } else if ud == CLOSE_UD && result < 0 {
            tracing::debug!(errno = -result, "a close through the ring failed");
        }
    }

    /// What [`dispatch_common`](Self::dispatch_common) leaves: a completion with its
    /// buffer and what the op adds to it, a zero-copy send's two CQEs, the end of a
    /// multishot op (re-armed, parked or stopped by the one rule, `Slot::multishot_end`),
    /// a linked timeout's, and then the owner's delivery.
    fn dispatch_rest(
        &mut self,
        d: &mut Delivery<'_>,
        id: OpId,
        result: i32,
        flags: u32,
        more: bool,
    ) {
        let mut c = Completion::new(result);
        if let Some(bid) = cqueue::buffer_select(flags) {
            c.buf = d.pool.provided(bid, result, flags);
        }
        let Some(slot) = d.table.get_mut(id) else {
            return; // stale; a buffer in `c` goes back on drop
        };
        if let Op::Send(send) = slot.op {
            if send.len as usize >= self.env.send_zc_min {
                match self.zero_copy_cqe(d, id, c, flags) {
                    Some(back) => c = back,
                    None => return,
                }
            }
        }
        let Some(slot) = d.table.get_mut(id) else {
            return;
        };
        if result >= 0 && slot.op.fills() {
            slot.op.fill(self.scratch.get(id.index), &mut c);
        }
        if !more && slot.op.is_multishot() && self.multishot_ended(d, id, &mut c) {
            return;
        }
        let Some(slot) = d.table.get_mut(id) else {
            return;
        };
        if slot.timeout.is_some() && result == -libc::ECANCELED && !slot.cancel_requested() {
            // The linked timeout fired, not a cancel of ours.
            c.result = -libc::ETIMEDOUT;
        }
        d.deliver(id, c, !more);
    }

    /// The kernel ended multishot op `id` with completion `c`: re-armed, parked or
    /// stopped by the one rule (`Slot::multishot_end`), true if that was done here;
    /// false if it is over, and `c` goes to its owner as the last.
    fn multishot_ended(&mut self, d: &mut Delivery<'_>, id: OpId, c: &mut Completion) -> bool {
        let Some(slot) = d.table.get_mut(id) else {
            return true;
        };
        let was = slot.flight;
        match slot.multishot_end(c.result) {
            MultishotEnd::Finish => false,
            MultishotEnd::Park => {
                slot.flight = Flight::Starved;
                self.starved.park(id);
                d.stats.pool_starved += 1;
                true
            }
            MultishotEnd::Rearm { deliver } => {
                if was == Flight::Running {
                    d.stats.rearmed += 1;
                }
                if deliver {
                    d.deliver(id, std::mem::replace(c, Completion::new(0)), false);
                }
                self.restart(d, id);
                true
            }
            MultishotEnd::Stop { deliver } => {
                slot.flight = Flight::Stopped;
                if deliver {
                    d.deliver(id, std::mem::replace(c, Completion::new(0)), false);
                }
                true
            }
        }
    }

    /// The two completions a busy server is mostly made of, handled with one slot
    /// lookup: bytes of a multishot receive that a task awaits, and the end of an
    /// operation nobody awaits (a background send). Returns false, having done nothing,
    /// for anything else (an end of a multishot op, a cancel, a timeout, zero-copy, a
    /// parked receive, the low-level face): `dispatch` sees to those.
    #[inline]
    fn dispatch_common(
        &mut self,
        d: &mut Delivery<'_>,
        id: OpId,
        result: i32,
        flags: u32,
        more: bool,
    ) -> bool {
        let Some(slot) = d.table.get_mut(id) else {
            return false;
        };
        if slot.flight != Flight::Running || slot.timeout.is_some() {
            return false;
        }
        match &mut slot.owner {
            Owner::Stream { .. } if more && result > 0 => {
                let Op::RecvMulti(_) = slot.op else {
                    return false;
                };
                let Some(bid) = cqueue::buffer_select(flags) else {
                    return false;
                };
                let pool = d.pool;
                super::delivery::received_to_task(
                    slot,
                    id,
                    result,
                    || pool.provided_bytes(bid, result as u32, flags),
                    d.stats,
                    d.backlogged,
                );
                true
            }
            Owner::Orphaned(held) if !more => {
                if slot.op.is_multishot()
                    || slot.op.yields_fd()
                    || matches!(slot.op, Op::Send(_))
                    || cqueue::buffer_select(flags).is_some()
                {
                    return false;
                }
                HeldValue::finish_in_place(held, result);
                d.table.release_emptied(id);
                true
            }
            _ => false,
        }
    }

    /// The CQEs of a send that may have gone as `SEND_ZC`: the result comes first (with
    /// `MORE`), then a notification (`NOTIF`, without `MORE`) that the kernel let go of
    /// the buffer, which is what ends the operation. A socket that refuses zero-copy
    /// answers `EOPNOTSUPP` having sent nothing: send the same bytes the ordinary way,
    /// once the refused attempt is over. Returns the completion to deliver as usual, or
    /// `None` if this CQE was handled here.
    fn zero_copy_cqe(
        &mut self,
        d: &mut Delivery<'_>,
        id: OpId,
        c: Completion,
        flags: u32,
    ) -> Option<Completion> {
        let scratch = self.scratch.get(id.index);
        let slot = d.table.get_mut(id)?;
        let awaited = slot.is_awaited();
        if cqueue::notif(flags) {
            // Nothing went to the owner yet: the result of a refused attempt is not
            // delivered (below).
            let untold = match &slot.owner {
                Owner::Single { completion, .. } => completion.is_none(),
                other => matches!(other, Owner::Token(_)),
            };
            if scratch.plain_send && awaited && slot.flight != Flight::Done && untold {
                // The refused attempt is over: now the plain send.
                self.restart(d, id);
                return None;
            }
            match &slot.owner {
                Owner::Orphaned(_) => d.table.release(id),
                Owner::Token(_) => d.deliver(id, Completion::new(0), true),
                Owner::Single { .. } | Owner::Stream { .. } => {
                    slot.flight = Flight::Done;
                    slot.wake();
                }
                Owner::Free => {}
            }
            return None;
        }
        let refused = c.result == -libc::EOPNOTSUPP
            && !scratch.plain_send
            && awaited
            && !slot.cancel_requested();
        if refused {
            scratch.plain_send = true;
            if !cqueue::more(flags) {
                self.restart(d, id);
            }
            // With MORE, the notification restarts it.
            return None;
        }
        if cqueue::more(flags) {
            // The result of a zero-copy send; its notification ends the operation.
            d.deliver(id, c, false);
            return None;
        }
        Some(c)
    }
}

/// An `Instant` and the `CLOCK_MONOTONIC` time read after it (see `Uring::clock_base`).
fn clock_base() -> (Instant, Duration) {
    let base = Instant::now();
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec into `ts`, which lives across the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (base, Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Pushes one SQE, handing the queue to the kernel first if it is full.
fn push_into(
    submitter: &io_uring::Submitter<'_>,
    sq: &mut io_uring::SubmissionQueue<'_>,
    sqe: &squeue::Entry,
    flushes: &mut u64,
) {
    // SAFETY: every pointer in the SQE stays valid until its final CQE: buffers are
    // owned by the slot's future or `held`, scratch lives in stable pages.
    while unsafe { sq.push(sqe) }.is_err() {
        flush_full(submitter, sq, flushes);
    }
}

/// The SQ is full: hand it to the kernel to make room.
fn flush_full(
    submitter: &io_uring::Submitter<'_>,
    sq: &mut io_uring::SubmissionQueue<'_>,
    flushes: &mut u64,
) {
    *flushes += 1;
    sq.sync();
    if let Err(e) = submitter.submit() {
        if e.raw_os_error() != Some(libc::EBUSY) && e.raw_os_error() != Some(libc::EINTR) {
            tracing::error!(error = %e, "io_uring submit failed while flushing a full SQ");
        }
    }
    sq.sync();
}
