//! The epoll backend: completion semantics on top of readiness.
//!
//! Each fd is registered once, edge-triggered, for reading and writing (mio's model), the
//! first time an operation names it, and deregistered when the runtime closes it. Per fd
//! we keep two readiness bits and two queues of parked operations. An operation is tried
//! at once if its direction is believed ready; `EAGAIN` clears the bit and parks it; an
//! edge from `epoll_wait` sets the bit again and retries the parked operations in order.
//! A short read clears the bit too (the socket was drained), which saves the `EAGAIN`
//! syscall on the next read: the same trick tokio uses, so the two make the same number
//! of syscalls per message.
//!
//! How each op is tried is the op's own business (`EpollOp` in `driver::op`); this file
//! owns the readiness bookkeeping and what a try means for the operation's life.
//! Operations without readiness (files, open, close) run at submit. Timeouts of
//! operations are driver deadlines folded into the `epoll_wait` timeout: no timerfd.

mod fd_state;
mod sys;

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::completion::{Completion, OpId};
use super::delivery::received_to_task;
use super::delivery::Delivery;
use super::op::{recv_bytes, Attempt, EpollOp, EpollOpState, Op, OpKind, Readiness, SendAll};
use super::slot::{Flight, MultishotEnd, Owner};
use super::starved::Starved;
use super::waker::DriverWaker;
use crate::buf::BufferPool;
use fd_state::{Direction, FdState};

const WAKE_KEY: u64 = u64::MAX;

pub(crate) struct Epoll {
    epfd: OwnedFd,
    wake_fd: RawFd,
    events: Vec<libc::epoll_event>,
    fds: Vec<Option<FdState>>,
    ops: Vec<EpollOpState>,
    deadlines: BTreeMap<(Instant, u32), OpId>,
    starved: Starved,
    rearm: Vec<OpId>,
    /// The state handed to ops run by `try_at_once`.
    spare: EpollOpState,
    /// Progress of a `try_at_once` that sent part of a `SendAll`: the op's next `start`
    /// (which the driver does at once) takes it over.
    carry: Option<usize>,
}

impl Epoll {
    pub(crate) fn new(waker: &DriverWaker) -> io::Result<Self> {
        let epfd = sys::create()?;
        sys::add(
            &epfd,
            waker.raw_fd(),
            libc::EPOLLIN | libc::EPOLLET,
            WAKE_KEY,
        )?;
        Ok(Epoll {
            epfd,
            wake_fd: waker.raw_fd(),
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 1024],
            fds: Vec::new(),
            ops: Vec::new(),
            deadlines: BTreeMap::new(),
            starved: Starved::default(),
            rearm: Vec::new(),
            spare: EpollOpState::new(),
            carry: None,
        })
    }

    /// The state of `fd`, made on first use. Called several times per operation: the
    /// known-fd case is one bounds check, inlined; making a new state is out of line.
    #[inline]
    fn fd_state(&mut self, fd: RawFd) -> &mut FdState {
        let i = fd as usize;
        if matches!(self.fds.get(i), Some(Some(_))) {
            return self.fds[i].as_mut().expect("checked just above");
        }
        self.new_fd_state(i)
    }

    #[cold]
    #[inline(never)]
    fn new_fd_state(&mut self, i: usize) -> &mut FdState {
        if self.fds.len() <= i {
            self.fds.resize_with(i + 1, || None);
        }
        self.fds[i].get_or_insert_with(FdState::new)
    }

    fn op_state(&mut self, index: u32) -> &mut EpollOpState {
        let i = index as usize;
        if self.ops.len() <= i {
            self.ops.resize_with(i + 1, EpollOpState::new);
        }
        &mut self.ops[i]
    }

    /// Registers `fd` the first time an operation names it.
    fn register(&mut self, fd: RawFd) -> io::Result<()> {
        if self.fd_state(fd).registered {
            return Ok(());
        }
        let interest = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET;
        match sys::add(&self.epfd, fd, interest, fd as u64) {
            // Registered by an earlier life of this fd number that nobody forgot.
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                sys::modify(&self.epfd, fd, interest, fd as u64)?
            }
            r => r?,
        }
        self.fd_state(fd).registered = true;
        Ok(())
    }

    /// Runs a single-shot op at once, without a slot, if its fd is known to be ready in
    /// its direction and nothing is parked there before it: the one syscall it needs,
    /// as readiness I/O would do. `None` if it must take the ordinary way (not ready,
    /// would block, or an op with state of its own: an address, a timeout, many
    /// completions).
    ///
    /// # Safety
    ///
    /// The op's pointers are valid for the call.
    pub(crate) unsafe fn try_at_once(&mut self, op: &Op, pool: &BufferPool) -> Option<Completion> {
        let (fd, dir) = match op.readiness() {
            Readiness::Read(fd) => (fd, Direction::Read),
            Readiness::Write(fd) => (fd, Direction::Write),
            Readiness::None => return None,
        };
        if op.is_multishot() || op.input_addr().is_some() {
            return None;
        }
        let st = self.fds.get_mut(fd as usize)?.as_mut()?;
        if !st.registered || !st.ready(dir) || !st.queue(dir).is_empty() {
            return None;
        }
        // `spare` holds no address (none of these ops reads one) and counts the
        // progress of an op that keeps some from zero.
        self.spare.progress = 0;
        // SAFETY: the caller's promise for the op's pointers.
        match unsafe { op.attempt(&mut self.spare, pool) } {
            Attempt::Blocked => {
                st.set_ready(dir, false);
                // A SendAll that sent part: the slot it gets next goes on from there.
                if self.spare.progress > 0 {
                    self.carry = Some(self.spare.progress);
                }
                None
            }
            Attempt::Done { c, drained } => {
                if drained {
                    st.set_ready(dir, false);
                }
                Some(c)
            }
        }
    }

    /// `try_at_once` for a `SendAll` (a background send), with no completion built:
    /// its result if it ended at once. A part sent before the socket filled is carried
    /// to the op's `start`, as there.
    ///
    /// # Safety
    ///
    /// As for `try_at_once`.
    #[inline]
    pub(crate) unsafe fn try_send_all_at_once(&mut self, op: &SendAll) -> Option<i32> {
        let st = self.fds.get_mut(op.fd as usize)?.as_mut()?;
        if !st.registered || !st.ready(Direction::Write) || !st.queue(Direction::Write).is_empty() {
            return None;
        }
        let mut progress = 0;
        // SAFETY: the caller's promise for the op's pointers.
        let r = unsafe { op.send_rest(&mut progress) };
        if r.is_none() {
            st.set_ready(Direction::Write, false);
            if progress > 0 {
                self.carry = Some(progress);
            }
        }
        r
    }

    pub(crate) fn start(&mut self, d: &mut Delivery<'_>, id: OpId) {
        let slot = d.table.get_mut(id).expect("start of a live op");
        let (op, timeout) = (slot.op, slot.timeout);
        let carried = self.carry.take().unwrap_or(0);
        let state = self.op_state(id.index);
        state.connecting = false;
        state.progress = carried;
        debug_assert!(state.close_after.is_none());
        if let Some(addr) = op.input_addr() {
            // SAFETY: the submitter guarantees `addr` is valid during submission.
            let copied = unsafe { *addr };
            match &mut state.addr {
                Some(kept) => **kept = copied,
                None => state.addr = Some(Box::new(copied)),
            }
        }
        if let Some(t) = timeout {
            let at = Instant::now() + t;
            state.deadline = Some(at);
            self.deadlines.insert((at, id.index), id);
        }
        let (fd, dir) = match op.readiness() {
            Readiness::None => {
                // SAFETY: the submitter's promise for the op's pointers, held until the
                // final completion, which this is.
                let attempt = unsafe { op.attempt(self.op_state(id.index), d.pool) };
                let c = match attempt {
                    Attempt::Done { c, .. } => c,
                    Attempt::Blocked => Completion::new(-libc::EAGAIN),
                };
                self.finish(d, id, c);
                return;
            }
            Readiness::Read(fd) => (fd, Direction::Read),
            Readiness::Write(fd) => (fd, Direction::Write),
        };
        if let Err(e) = self.register(fd) {
            // epoll refuses this fd (a regular file, say): the op cannot wait for it.
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            self.finish(d, id, Completion::new(-errno));
            return;
        }
        let st = self.fd_state(fd);
        let queue = st.queue(dir);
        queue.push_back(id);
        if st.ready(dir) && st.queue(dir).len() == 1 {
            self.run_queue(d, fd, dir);
        }
    }

    /// Delivers a final completion and forgets the operation's deadline; closes the fd
    /// that waited for it to end, if any.
    fn finish(&mut self, d: &mut Delivery<'_>, id: OpId, c: Completion) {
        let state = self.op_state(id.index);
        let close = state.close_after.take();
        if let Some(at) = state.deadline.take() {
            self.deadlines.remove(&(at, id.index));
        }
        d.deliver(id, c, true);
        if let Some(fd) = close {
            self.forget_closing(d, fd);
        }
    }

    /// Closes `fd` once operation `id` (in flight) has ended.
    pub(crate) fn close_after(&mut self, fd: OwnedFd, id: OpId) {
        let old = self.op_state(id.index).close_after.replace(fd);
        debug_assert!(old.is_none(), "one close per operation");
    }

    /// Forgets `fd` (failing what is still parked on it) and closes it.
    fn forget_closing(&mut self, d: &mut Delivery<'_>, fd: OwnedFd) {
        use std::os::fd::AsRawFd;
        if let Err(e) = self.forget_fd(d, fd.as_raw_fd()) {
            tracing::warn!(fd = fd.as_raw_fd(), error = %e, "epoll refused to remove a registration");
        }
        drop(fd);
    }

    /// Retries the parked operations of one direction of `fd`, in order, until one
    /// would block.
    fn run_queue(&mut self, d: &mut Delivery<'_>, fd: RawFd, dir: Direction) {
        loop {
            let Some(&id) = self.fd_state(fd).queue(dir).front() else {
                return;
            };
            let Some(slot) = d.table.get_mut(id) else {
                self.fd_state(fd).queue(dir).pop_front();
                continue;
            };
            if slot.flight == Flight::Running && slot.backlogged() {
                // Its consumer fell behind: no more reads until it catches up (`resume`).
                slot.flight = Flight::Stopped;
            }
            match slot.flight {
                Flight::Running => {}
                // Over, or being cancelled (a dropped future's op is taken out of its
                // queue when cancelled; this is the safety net). An orphaned op that
                // nobody cancelled is a detached one: it runs.
                Flight::Done | Flight::Cancelling => {
                    self.fd_state(fd).queue(dir).pop_front();
                    continue;
                }
                // Parked on an empty pool (`turn` retries it when a buffer comes back), or
                // its consumer is behind (`resume` retries it when it catches up): an edge
                // changes nothing, and nothing behind it may go first.
                Flight::Starved | Flight::Stopping | Flight::Stopped => return,
            }
            if !self.try_front(d, id, fd, dir) {
                return;
            }
        }
    }

    /// One try of operation `id`, first in `fd`'s `dir` queue; true to go on with the
    /// next one.
    fn try_front(&mut self, d: &mut Delivery<'_>, id: OpId, fd: RawFd, dir: Direction) -> bool {
        let slot = d.table.get_mut(id).expect("a live op first in its queue");
        let op = slot.op;
        let attempt = match (op, &slot.owner) {
            (Op::RecvMulti(recv), Owner::Stream { .. }) => {
                // Bytes for a stream a task awaits, the common case: straight to its
                // queue. What else a try comes to goes the general way.
                match recv_bytes(recv.fd, d.pool) {
                    Ok((buf, drained)) => {
                        let result = buf.len() as i32;
                        received_to_task(slot, id, result, || buf, d.stats, d.backlogged);
                        return !drained || self.drained(fd, dir);
                    }
                    Err(other) => other,
                }
            }
            // SAFETY: the submitter's promise for the op's pointers, held until the
            // final completion, which has not come yet (it is `Running`).
            _ => unsafe { op.attempt(self.op_state(id.index), d.pool) },
        };
        self.tried(d, id, fd, dir, attempt)
    }

    /// What a try of `id` came to; true to go on with the next op of the queue.
    fn tried(
        &mut self,
        d: &mut Delivery<'_>,
        id: OpId,
        fd: RawFd,
        dir: Direction,
        attempt: Attempt,
    ) -> bool {
        let (c, drained) = match attempt {
            Attempt::Blocked => {
                self.fd_state(fd).set_ready(dir, false);
                return false;
            }
            Attempt::Done { c, drained } => (c, drained),
        };
        let slot = d.table.get_mut(id).expect("a live op first in its queue");
        let op = slot.op;
        let mut last = !op.is_multishot() || op.ends(c.result);
        if op.is_multishot() && last {
            // The one rule for the end of a multishot op (`Slot::multishot_end`).
            match slot.multishot_end(c.result) {
                MultishotEnd::Park => {
                    // Stays first in the queue: it is retried from there once a buffer
                    // comes back.
                    slot.flight = Flight::Starved;
                    self.starved.park(id);
                    d.stats.pool_starved += 1;
                    return false;
                }
                MultishotEnd::Rearm { .. } => last = false,
                // (epoll stops a backlogged receive before trying it: no stop ends here.)
                MultishotEnd::Stop { .. } | MultishotEnd::Finish => {}
            }
        }
        if last {
            self.fd_state(fd).queue(dir).pop_front();
            self.finish(d, id, c);
        } else {
            d.deliver(id, c, false);
        }
        if op.once_per_edge() {
            self.fd_state(fd).set_ready(dir, false);
            return false;
        }
        !drained || self.drained(fd, dir)
    }

    /// A transfer drained `fd` in `dir`: no longer ready, unless that direction is
    /// closed (a closed direction stays ready: a multishot receive still parked there
    /// then reads the end of stream now; no edge will come for it, the one that said
    /// RDHUP is gone). True if it is still ready.
    #[inline]
    fn drained(&mut self, fd: RawFd, dir: Direction) -> bool {
        let st = self.fd_state(fd);
        st.set_ready(dir, false);
        st.ready(dir)
    }

    /// The consumer of a receive stopped for backlog caught up: read on.
    pub(crate) fn resume(&mut self, d: &mut Delivery<'_>, id: OpId) {
        let Some(slot) = d.table.get_mut(id) else {
            return;
        };
        if slot.flight == Flight::Stopped {
            slot.flight = Flight::Running;
        }
        if let Some(fd) = slot.op.fd() {
            self.run_queue(d, fd, Direction::Read);
        }
    }

    /// Ends operation `id` at once (it stood at `was`; epoll has nothing in the
    /// kernel to take back).
    pub(crate) fn cancel(&mut self, d: &mut Delivery<'_>, id: OpId, _was: Flight) {
        self.end_with(d, id, -libc::ECANCELED);
    }

    /// Takes a parked operation out of its queue and completes it with `result`.
    fn end_with(&mut self, d: &mut Delivery<'_>, id: OpId, result: i32) {
        let Some(slot) = d.table.get_mut(id) else {
            return;
        };
        if slot.flight == Flight::Done {
            return;
        }
        let Some(fd) = slot.op.fd() else { return };
        self.starved.forget(id);
        if let Some(Some(st)) = self.fds.get_mut(fd as usize) {
            st.forget(id);
        }
        self.finish(d, id, Completion::new(result));
    }

    pub(crate) fn forget_fd(&mut self, d: &mut Delivery<'_>, fd: RawFd) -> io::Result<()> {
        let Some(Some(st)) = self.fds.get_mut(fd as usize).map(Option::take) else {
            return Ok(());
        };
        let removed = if st.registered {
            sys::delete(&self.epfd, fd)
        } else {
            Ok(())
        };
        for id in st.into_parked() {
            if d.table
                .get_mut(id)
                .is_some_and(|s| s.flight != Flight::Done)
            {
                self.starved.forget(id);
                self.finish(d, id, Completion::new(-libc::ECANCELED));
            }
        }
        removed
    }

    /// Re-arms the receives parked on an empty pool for which buffers came back; if none
    /// did, the pool-pressure rule first takes back what waits for readers (the receives
    /// it stops are not tried again until their readers catch up: `run_queue`).
    #[cold]
    fn rearm_starved(&mut self, d: &mut Delivery<'_>, timeout: &mut Option<Duration>) {
        self.starved.relieve(d);
        let mut rearm = std::mem::take(&mut self.rearm);
        self.starved.take_rearmable(d.pool, &mut rearm);
        if !rearm.is_empty() {
            // The receives that get a buffer wake their tasks, after the executor chose
            // to sleep: do not block in this wait, or those tasks (and the buffers they
            // would return) sit in the run queue until an unrelated event comes.
            *timeout = Some(Duration::ZERO);
        }
        for id in rearm.drain(..) {
            let Some(slot) = d.table.get_mut(id) else {
                continue;
            };
            // Its reader may have fallen behind meanwhile: `run_queue` stops it then.
            slot.flight = Flight::Running;
            d.stats.pool_resumed += 1;
            if let Some(fd) = slot.op.fd() {
                self.run_queue(d, fd, Direction::Read);
            }
        }
        self.rearm = rearm;
    }

    pub(crate) fn turn(
        &mut self,
        d: &mut Delivery<'_>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        let mut timeout = timeout;
        if self.starved.any() {
            self.rearm_starved(d, &mut timeout);
        }
        if !d.deferred.is_empty() {
            timeout = Some(Duration::ZERO);
        }
        if let Some((&(at, _), _)) = self.deadlines.first_key_value() {
            let until = at.saturating_duration_since(Instant::now());
            timeout = Some(timeout.map_or(until, |t| t.min(until)));
        }
        d.stats.enters += 1;
        // Backlogged receives stop by themselves here (`run_queue` skips them).
        d.backlogged.clear();
        let n = sys::wait(&self.epfd, &mut self.events, timeout)?;
        for i in 0..n {
            let ev = self.events[i];
            d.stats.completions += 1;
            if ev.u64 == WAKE_KEY {
                sys::drain_eventfd(self.wake_fd);
                continue;
            }
            let fd = ev.u64 as RawFd;
            let (readable, writable) = self.fd_state(fd).on_event(ev.events as i32);
            // Most edges find nothing parked in one direction (an echoed message's send
            // goes at once, yet its socket reports writable too): no call for those.
            if readable && !self.fd_state(fd).queue(Direction::Read).is_empty() {
                self.run_queue(d, fd, Direction::Read);
            }
            if writable && !self.fd_state(fd).queue(Direction::Write).is_empty() {
                self.run_queue(d, fd, Direction::Write);
            }
        }
        if n == self.events.len() {
            let grown = self.events.len() * 2;
            self.events
                .resize(grown, libc::epoll_event { events: 0, u64: 0 });
        }
        let now = Instant::now();
        while let Some((&(at, index), &id)) = self.deadlines.first_key_value() {
            if at > now {
                break;
            }
            self.deadlines.remove(&(at, index));
            self.op_state(index).deadline = None;
            self.end_with(d, id, -libc::ETIMEDOUT);
        }
        Ok(())
    }
}
