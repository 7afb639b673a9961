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
//! Operations without readiness (files, open, close) run at submit. Timeouts of
//! operations are driver deadlines folded into the `epoll_wait` timeout: no timerfd.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::op::{Completion, Life, Op, OpId, RawAddr};
use super::{Ctx, DriverWaker};

const WAKE_KEY: u64 = u64::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Read,
    Write,
    Now,
}

fn direction(op: &Op) -> Dir {
    match op {
        Op::Accept { .. }
        | Op::AcceptMulti { .. }
        | Op::Recv { .. }
        | Op::RecvPool { .. }
        | Op::RecvFrom { .. } => Dir::Read,
        Op::Connect { .. }
        | Op::Send { .. }
        | Op::SendVectored { .. }
        | Op::SendTo { .. }
        | Op::Splice { .. } => Dir::Write,
        Op::Poll { events, .. } if *events & libc::POLLIN as u32 != 0 => Dir::Read,
        Op::Poll { .. } => Dir::Write,
        _ => Dir::Now,
    }
}

/// What one try of an operation gave.
enum Attempt {
    /// A completion; `drained` says the direction is no longer ready (a short transfer).
    Done { c: Completion, drained: bool },
    /// Would block: park.
    Blocked,
    /// The buffer pool is empty: park until a buffer comes back.
    Starved,
}

struct FdState {
    registered: bool,
    readable: bool,
    writable: bool,
    /// The peer closed its side (RDHUP/HUP/ERR was reported). Sticky: the edge that told
    /// us is gone, so a short read must not clear `readable` once this is set, or the
    /// read that would return end of stream parks forever.
    read_closed: bool,
    /// HUP/ERR: writes fail at once from now on.
    write_closed: bool,
    readers: VecDeque<OpId>,
    writers: VecDeque<OpId>,
}

impl FdState {
    fn new() -> Self {
        FdState {
            registered: false,
            readable: true,
            writable: true,
            read_closed: false,
            write_closed: false,
            readers: VecDeque::new(),
            writers: VecDeque::new(),
        }
    }
}

pub(crate) struct Epoll {
    epfd: OwnedFd,
    wake_fd: RawFd,
    events: Vec<libc::epoll_event>,
    fds: Vec<Option<FdState>>,
    deadlines: BTreeMap<(Instant, u32), OpId>,
    starved_fds: Vec<RawFd>,
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `ret` as a completion result: the value, or `-errno`.
fn res(ret: isize) -> i32 {
    if ret < 0 {
        -errno()
    } else {
        ret as i32
    }
}

impl Epoll {
    pub(crate) fn new(waker: &DriverWaker) -> io::Result<Self> {
        // SAFETY: no pointers; result checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        let epfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: WAKE_KEY,
        };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call.
        if unsafe { libc::epoll_ctl(fd, libc::EPOLL_CTL_ADD, waker.raw_fd(), &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll {
            epfd,
            wake_fd: waker.raw_fd(),
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 1024],
            fds: Vec::new(),
            deadlines: BTreeMap::new(),
            starved_fds: Vec::new(),
        })
    }

    fn state(&mut self, fd: RawFd) -> &mut FdState {
        let i = fd as usize;
        if self.fds.len() <= i {
            self.fds.resize_with(i + 1, || None);
        }
        self.fds[i].get_or_insert_with(FdState::new)
    }

    fn register(&mut self, fd: RawFd) {
        let epfd = self.epfd.as_raw_fd();
        let st = self.state(fd);
        if st.registered {
            return;
        }
        st.registered = true;
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: fd as u64,
        };
        // SAFETY: `ev` is valid for the call.
        let r = unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r < 0 && errno() == libc::EEXIST {
            // SAFETY: as above.
            unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, &mut ev) };
        }
    }

    pub(crate) fn start(&mut self, ctx: &mut Ctx<'_>, id: OpId) {
        let slot = ctx.table.get_mut(id).expect("start of a live op");
        let op = slot.op;
        if let Some(t) = slot.timeout {
            let at = Instant::now() + t;
            slot.deadline = Some(at);
            self.deadlines.insert((at, id.index), id);
        }
        match direction(&op) {
            Dir::Now => {
                let c = run_now(&op, ctx);
                self.finish(ctx, id, c);
            }
            dir => {
                let fd = op.fd().expect("readiness ops have an fd");
                self.register(fd);
                let st = self.state(fd);
                let (queue, ready) = match dir {
                    Dir::Read => (&mut st.readers, st.readable),
                    _ => (&mut st.writers, st.writable),
                };
                queue.push_back(id);
                if ready && queue.len() == 1 {
                    self.run_queue(ctx, fd, dir);
                }
            }
        }
    }

    /// Delivers a final completion and forgets the operation's deadline.
    fn finish(&mut self, ctx: &mut Ctx<'_>, id: OpId, c: Completion) {
        if let Some(slot) = ctx.table.get_mut(id) {
            if let Some(at) = slot.deadline.take() {
                self.deadlines.remove(&(at, id.index));
            }
        }
        ctx.deliver(id, c, true);
    }

    /// Retries the parked operations of one direction of `fd`, in order, until one
    /// would block.
    fn run_queue(&mut self, ctx: &mut Ctx<'_>, fd: RawFd, dir: Dir) {
        loop {
            let st = self.state(fd);
            let queue = if dir == Dir::Read {
                &mut st.readers
            } else {
                &mut st.writers
            };
            let Some(&id) = queue.front() else { return };
            let Some(slot) = ctx.table.get_mut(id) else {
                queue.pop_front();
                continue;
            };
            if slot.life == Life::Detached || slot.done {
                queue.pop_front();
                continue;
            }
            let multishot = slot.op.is_multishot();
            let ends_at_zero = matches!(slot.op, Op::RecvPool { .. });
            // A poll reports readiness, it does not consume it: one completion per
            // edge, or a multishot poll on a ready (or closed) fd would never stop.
            let once_per_edge = matches!(slot.op, Op::Poll { .. });
            match attempt(slot, ctx.pool) {
                Attempt::Blocked => {
                    self.set_ready(fd, dir, false);
                    return;
                }
                Attempt::Starved => {
                    if let Some(slot) = ctx.table.get_mut(id) {
                        slot.starved = true;
                    }
                    ctx.stats.rearmed += 1;
                    if !self.starved_fds.contains(&fd) {
                        self.starved_fds.push(fd);
                    }
                    return;
                }
                Attempt::Done { c, drained } => {
                    // A multishot op ends at an error, or a receive at end of stream.
                    let last = !multishot || c.result < 0 || (ends_at_zero && c.result == 0);
                    if last {
                        let st = self.state(fd);
                        let q = if dir == Dir::Read {
                            &mut st.readers
                        } else {
                            &mut st.writers
                        };
                        q.pop_front();
                        self.finish(ctx, id, c);
                    } else {
                        ctx.deliver(id, c, false);
                    }
                    if once_per_edge {
                        self.set_ready(fd, dir, false);
                        return;
                    }
                    if drained {
                        self.set_ready(fd, dir, false);
                        // A closed direction stays ready (`read_closed`): go on, so that
                        // a multishot receive still parked here reads the end of stream
                        // now. No edge will come for it: the one that said RDHUP is gone.
                        let st = self.state(fd);
                        let still_ready = if dir == Dir::Read {
                            st.readable
                        } else {
                            st.writable
                        };
                        if !still_ready {
                            return;
                        }
                    }
                }
            }
        }
    }

    fn set_ready(&mut self, fd: RawFd, dir: Dir, ready: bool) {
        let st = self.state(fd);
        match dir {
            Dir::Read => st.readable = ready || st.read_closed,
            _ => st.writable = ready || st.write_closed,
        }
    }

    pub(crate) fn cancel(&mut self, ctx: &mut Ctx<'_>, id: OpId) {
        self.end_with(ctx, id, -libc::ECANCELED);
    }

    /// Takes a parked operation out of its queue and completes it with `result`.
    fn end_with(&mut self, ctx: &mut Ctx<'_>, id: OpId, result: i32) {
        let Some(slot) = ctx.table.get_mut(id) else {
            return;
        };
        if slot.done {
            return;
        }
        let Some(fd) = slot.op.fd() else { return };
        slot.starved = false;
        if let Some(Some(st)) = self.fds.get_mut(fd as usize) {
            st.readers.retain(|x| *x != id);
            st.writers.retain(|x| *x != id);
        }
        self.finish(ctx, id, Completion::new(result));
    }

    pub(crate) fn forget_fd(&mut self, ctx: &mut Ctx<'_>, fd: RawFd) {
        let Some(Some(st)) = self.fds.get_mut(fd as usize).map(Option::take) else {
            return;
        };
        if st.registered {
            // SAFETY: removing a registration; no pointers involved beyond a null event.
            unsafe {
                libc::epoll_ctl(
                    self.epfd.as_raw_fd(),
                    libc::EPOLL_CTL_DEL,
                    fd,
                    std::ptr::null_mut(),
                )
            };
        }
        self.starved_fds.retain(|f| *f != fd);
        for id in st.readers.into_iter().chain(st.writers) {
            if ctx.table.get_mut(id).is_some_and(|s| !s.done) {
                self.finish(ctx, id, Completion::new(-libc::ECANCELED));
            }
        }
    }

    pub(crate) fn turn(&mut self, ctx: &mut Ctx<'_>, timeout: Option<Duration>) -> io::Result<()> {
        let mut timeout = timeout;
        if !self.starved_fds.is_empty() && ctx.pool.take_returned() {
            // Oldest first, while buffers last: a receive retried on an empty pool would
            // only park again. Those left wait for the next returned buffer.
            let starved = std::mem::take(&mut self.starved_fds);
            let mut rest = starved.into_iter();
            for fd in rest.by_ref() {
                if ctx.pool.free_count() == 0 {
                    self.starved_fds.push(fd);
                    break;
                }
                self.run_queue(ctx, fd, Dir::Read);
            }
            for fd in rest {
                if !self.starved_fds.contains(&fd) {
                    self.starved_fds.push(fd);
                }
            }
            // The receives that got a buffer have just woken their tasks, after the
            // executor chose to sleep: do not block in this wait, or those tasks (and
            // the buffers they would return) sit in the run queue until an unrelated
            // event comes, possibly never.
            timeout = Some(Duration::ZERO);
        }
        if !ctx.deferred.is_empty() {
            timeout = Some(Duration::ZERO);
        }
        if let Some((&(at, _), _)) = self.deadlines.first_key_value() {
            let until = at.saturating_duration_since(Instant::now());
            timeout = Some(timeout.map_or(until, |t| t.min(until)));
        }
        let ms = match timeout {
            None => -1,
            // Round up: waking early would only spin.
            Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32,
        };
        ctx.stats.enters += 1;
        // SAFETY: the events buffer is valid for `len` entries.
        let n = unsafe {
            libc::epoll_wait(
                self.epfd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
        for i in 0..n.max(0) as usize {
            let ev = self.events[i];
            let key = ev.u64;
            ctx.stats.completions += 1;
            if key == WAKE_KEY {
                let mut buf = 0u64;
                // SAFETY: reads 8 bytes into a live u64; resets the eventfd counter.
                unsafe { libc::read(self.wake_fd, &mut buf as *mut u64 as *mut _, 8) };
                continue;
            }
            let fd = key as RawFd;
            let bits = ev.events as i32;
            let readable =
                bits & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR | libc::EPOLLRDHUP) != 0;
            let writable = bits & (libc::EPOLLOUT | libc::EPOLLHUP | libc::EPOLLERR) != 0;
            {
                let st = self.state(fd);
                if bits & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) != 0 {
                    st.read_closed = true;
                }
                if bits & (libc::EPOLLHUP | libc::EPOLLERR) != 0 {
                    st.write_closed = true;
                }
            }
            if readable {
                self.set_ready(fd, Dir::Read, true);
                self.run_queue(ctx, fd, Dir::Read);
            }
            if writable {
                self.set_ready(fd, Dir::Write, true);
                self.run_queue(ctx, fd, Dir::Write);
            }
        }
        if n as usize == self.events.len() {
            self.events.resize(
                self.events.len() * 2,
                libc::epoll_event { events: 0, u64: 0 },
            );
        }
        let now = Instant::now();
        while let Some((&(at, idx), &id)) = self.deadlines.first_key_value() {
            if at > now {
                break;
            }
            self.deadlines.remove(&(at, idx));
            if let Some(slot) = ctx.table.get_mut(id) {
                slot.deadline = None;
            }
            self.end_with(ctx, id, -libc::ETIMEDOUT);
        }
        Ok(())
    }
}

/// Runs an operation that needs no readiness.
fn run_now(op: &Op, ctx: &mut Ctx<'_>) -> Completion {
    // SAFETY (for every call below): the submitter guarantees the pointers in `op` are
    // valid for the lengths given until the final completion, which is this one.
    let r = unsafe {
        match *op {
            Op::Nop => 0,
            Op::ReadAt {
                fd,
                buf,
                len,
                offset,
            } => res(libc::pread(fd, buf.cast(), len as usize, offset as i64)),
            Op::WriteAt {
                fd,
                buf,
                len,
                offset,
            } => res(libc::pwrite(fd, buf.cast(), len as usize, offset as i64)),
            Op::Open { path, flags, mode } => {
                res(libc::open(path, flags | libc::O_CLOEXEC, mode) as isize)
            }
            Op::Fsync { fd, data_only } => res(if data_only {
                libc::fdatasync(fd)
            } else {
                libc::fsync(fd)
            } as isize),
            Op::Shutdown { fd, how } => res(libc::shutdown(fd, how) as isize),
            Op::Close { fd } => res(libc::close(fd) as isize),
            _ => -libc::EINVAL,
        }
    };
    let _ = ctx;
    Completion::new(r)
}

/// One non-blocking try of a readiness operation.
fn attempt(slot: &mut super::op::Slot, pool: &crate::buf::BufferPool) -> Attempt {
    let blocked = |r: i32| r == -libc::EAGAIN || r == -libc::EWOULDBLOCK;
    // SAFETY (for every call below): the pointers in the op are valid for the lengths
    // given until the op's final completion; addresses point into the slot's scratch.
    unsafe {
        match slot.op {
            Op::Accept { fd } => {
                let mut addr = RawAddr::empty();
                let r = res(libc::accept4(
                    fd,
                    &mut addr.storage as *mut _ as *mut libc::sockaddr,
                    &mut addr.len,
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                ) as isize);
                if blocked(r) {
                    return Attempt::Blocked;
                }
                let mut c = Completion::new(r);
                if r >= 0 {
                    c.addr = addr.to_socket_addr();
                }
                Attempt::Done { c, drained: false }
            }
            Op::AcceptMulti { fd } => {
                let r = res(libc::accept4(
                    fd,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                ) as isize);
                if blocked(r) {
                    return Attempt::Blocked;
                }
                Attempt::Done {
                    c: Completion::new(r),
                    drained: false,
                }
            }
            Op::Connect { fd, .. } => {
                if !slot.connecting {
                    let (p, l) = slot.scratch.addr.as_ptr();
                    let r = res(libc::connect(fd, p, l) as isize);
                    if r == -libc::EINPROGRESS || blocked(r) {
                        slot.connecting = true;
                        return Attempt::Blocked;
                    }
                    return Attempt::Done {
                        c: Completion::new(r),
                        drained: false,
                    };
                }
                let mut err: libc::c_int = 0;
                let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
                libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_ERROR,
                    &mut err as *mut _ as *mut libc::c_void,
                    &mut len,
                );
                Attempt::Done {
                    c: Completion::new(-err),
                    drained: false,
                }
            }
            Op::Recv { fd, buf, len } => {
                let r = res(libc::recv(fd, buf.cast(), len as usize, 0));
                if blocked(r) {
                    return Attempt::Blocked;
                }
                Attempt::Done {
                    c: Completion::new(r),
                    drained: r > 0 && (r as u32) < len,
                }
            }
            Op::RecvPool { fd, .. } => {
                let Some((bid, ptr)) = pool.take_free() else {
                    return Attempt::Starved;
                };
                slot.starved = false;
                let size = pool.buf_size();
                let r = res(libc::recv(fd, ptr.cast(), size, 0));
                if r <= 0 {
                    pool.recycle(bid);
                    if blocked(r) {
                        return Attempt::Blocked;
                    }
                    return Attempt::Done {
                        c: Completion::new(r),
                        drained: false,
                    };
                }
                let mut c = Completion::new(r);
                c.buf = Some(pool.provided(bid, r as usize));
                Attempt::Done {
                    c,
                    drained: (r as usize) < size,
                }
            }
            Op::RecvFrom { fd, buf, len } => {
                let mut addr = RawAddr::empty();
                let r = res(libc::recvfrom(
                    fd,
                    buf.cast(),
                    len as usize,
                    0,
                    &mut addr.storage as *mut _ as *mut libc::sockaddr,
                    &mut addr.len,
                ));
                if blocked(r) {
                    return Attempt::Blocked;
                }
                let mut c = Completion::new(r);
                if r >= 0 {
                    c.addr = addr.to_socket_addr();
                }
                Attempt::Done { c, drained: false }
            }
            Op::Send { fd, buf, len } => {
                let r = res(libc::send(fd, buf.cast(), len as usize, libc::MSG_NOSIGNAL));
                if blocked(r) {
                    return Attempt::Blocked;
                }
                Attempt::Done {
                    c: Completion::new(r),
                    drained: r >= 0 && (r as u32) < len,
                }
            }
            Op::SendVectored { fd, iov, iovcnt } => {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = iov as *mut libc::iovec;
                msg.msg_iovlen = iovcnt as usize;
                let r = res(libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL));
                if blocked(r) {
                    return Attempt::Blocked;
                }
                let total: usize = (0..iovcnt as usize).map(|i| (*iov.add(i)).iov_len).sum();
                Attempt::Done {
                    c: Completion::new(r),
                    drained: r >= 0 && (r as usize) < total,
                }
            }
            Op::SendTo { fd, buf, len, .. } => {
                let (p, l) = slot.scratch.addr.as_ptr();
                let r = res(libc::sendto(
                    fd,
                    buf.cast(),
                    len as usize,
                    libc::MSG_NOSIGNAL,
                    p,
                    l,
                ));
                if blocked(r) {
                    return Attempt::Blocked;
                }
                Attempt::Done {
                    c: Completion::new(r),
                    drained: false,
                }
            }
            Op::Splice {
                fd_in,
                off_in,
                fd_out,
                len,
            } => {
                // Parked on `fd_out` (a full pipe or socket). The input is a file or a
                // pipe the caller filled, so it does not make us wait.
                let mut off = off_in.map_or(0, |o| o as libc::loff_t);
                let off_ptr = if off_in.is_some() {
                    &mut off as *mut libc::loff_t
                } else {
                    std::ptr::null_mut()
                };
                let r = res(libc::splice(
                    fd_in,
                    off_ptr,
                    fd_out,
                    std::ptr::null_mut(),
                    len as usize,
                    libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
                ));
                if blocked(r) {
                    return Attempt::Blocked;
                }
                // A short splice may be the end of the file, not a full output: never
                // count it as drained (that would wait for an edge that may not come).
                Attempt::Done {
                    c: Completion::new(r),
                    drained: false,
                }
            }
            Op::Poll { fd, events, .. } => {
                let mut p = libc::pollfd {
                    fd,
                    events: events as i16,
                    revents: 0,
                };
                let r = libc::poll(&mut p, 1, 0);
                if r == 0 {
                    return Attempt::Blocked;
                }
                let r = if r < 0 { -errno() } else { p.revents as i32 };
                Attempt::Done {
                    c: Completion::new(r),
                    drained: false,
                }
            }
            _ => Attempt::Done {
                c: Completion::new(-libc::EINVAL),
                drained: false,
            },
        }
    }
}
