//! The io_uring backend.
//!
//! One ring per core, set up by [`probe`](super::probe) with the best flags the kernel
//! takes. Each turn is exactly one `io_uring_enter`: it submits every queued SQE and
//! waits (with the next deadline as an `EXT_ARG` timeout) in the same call. The only
//! other enters happen when the submission queue is full (we flush it to make room) or
//! the completion queue overflowed (we drain the kernel's backlog).
//!
//! `user_data` is the slot's [`OpId`]; values with the slot index `u32::MAX` are the
//! driver's own: the wake-up read on the eventfd, cancels and linked timeouts, whose
//! completions need no routing.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::op::{Completion, Life, Op, OpId};
use super::Ctx;

const INTERNAL: u64 = u32::MAX as u64;
const WAKE_UD: u64 = (1 << 32) | INTERNAL;
const CANCEL_UD: u64 = (2 << 32) | INTERNAL;
const TIMEOUT_UD: u64 = (3 << 32) | INTERNAL;

/// The buffer group id of the core's provided-buffer ring.
pub(crate) const BGID: u16 = 0;

/// `IORING_ENTER_GETEVENTS` from the kernel ABI (the io-uring crate keeps its constant
/// private).
const ENTER_GETEVENTS: u32 = 1;

pub(crate) struct Uring {
    ring: IoUring,
    wake_fd: RawFd,
    /// The eventfd counter is read into here. Leaked on purpose (8 bytes per ring): the
    /// read is always in flight, and a wake from another thread racing with the ring's
    /// teardown could still complete it after the driver is gone.
    wake_buf: &'static mut u64,
    /// Multishot receives parked on an empty pool.
    starved: Vec<OpId>,
    /// Operations started since the last enter. Their SQEs are built and pushed just
    /// before the enter, so that one cancelled in between never reaches the kernel:
    /// once in the SQ it would run in the same batch as (and ahead of) its
    /// `ASYNC_CANCEL`, and an accept or receive dropped right after its first poll would
    /// take a connection or bytes from the backlog that the next operation on the
    /// socket should get (the driver can only close or discard them).
    unsubmitted: Vec<OpId>,
    /// Sends of at least this many bytes use SEND_ZC (see `DriverConfig::send_zc_min`).
    send_zc_min: usize,
    /// CQEs copied out of the completion queue, so dispatching them may submit.
    cqes: Vec<(u64, i32, u32)>,
    /// Counted here (push has no stats at hand) and folded into the stats each turn.
    sq_full_flushes: u64,
}

impl Uring {
    pub(crate) fn new(ring: IoUring, wake_fd: RawFd, send_zc_min: Option<usize>) -> Self {
        let mut u = Uring {
            ring,
            wake_fd,
            wake_buf: Box::leak(Box::new(0)),
            starved: Vec::new(),
            unsubmitted: Vec::new(),
            send_zc_min: send_zc_min.unwrap_or(usize::MAX),
            cqes: Vec::with_capacity(256),
            sq_full_flushes: 0,
        };
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

    fn push(&mut self, sqe: squeue::Entry) {
        // SAFETY: every pointer in the SQE stays valid until its final CQE: buffers are
        // owned by the slot's future or `keep`, scratch lives in the stable op table.
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            self.sq_full_flushes += 1;
            // The SQ is full: hand it to the kernel to make room.
            if let Err(e) = self.ring.submit() {
                if e.raw_os_error() != Some(libc::EBUSY) && e.raw_os_error() != Some(libc::EINTR) {
                    tracing::error!(error = %e, "io_uring submit failed while flushing a full SQ");
                }
            }
        }
    }

    /// Starts `id`: its SQE goes to the kernel with the next enter (see `unsubmitted`).
    pub(crate) fn start(&mut self, ctx: &mut Ctx<'_>, id: OpId) {
        if let Some(slot) = ctx.table.get_mut(id) {
            slot.starved = false;
            self.unsubmitted.push(id);
        }
    }

    /// Pushes the SQEs of the operations started since the last enter.
    fn push_unsubmitted(&mut self, ctx: &mut Ctx<'_>) {
        // By index: `push_op` never adds to the list, and the Vec keeps its capacity.
        for i in 0..self.unsubmitted.len() {
            let id = self.unsubmitted[i];
            if ctx.table.get_mut(id).is_some_and(|s| !s.done) {
                self.push_op(ctx, id);
            }
        }
        self.unsubmitted.clear();
    }

    fn push_op(&mut self, ctx: &mut Ctx<'_>, id: OpId) {
        let bgid = BGID;
        let send_zc_min = self.send_zc_min;
        let buf_size = ctx.pool.buf_size() as u32;
        let slot = ctx.table.get_mut(id).expect("start of a live op");
        slot.starved = false;
        let sc = &mut slot.scratch;
        let entry = match slot.op {
            Op::Nop => opcode::Nop::new().build(),
            Op::Accept { fd } => {
                sc.addr = super::RawAddr::empty();
                opcode::Accept::new(
                    types::Fd(fd),
                    &mut sc.addr.storage as *mut _ as *mut libc::sockaddr,
                    &mut sc.addr.len,
                )
                .flags(libc::SOCK_CLOEXEC)
                .build()
            }
            Op::AcceptMulti { fd } => opcode::AcceptMulti::new(types::Fd(fd))
                .flags(libc::SOCK_CLOEXEC)
                .build(),
            Op::Connect { fd, .. } => {
                let (p, l) = sc.addr.as_ptr();
                opcode::Connect::new(types::Fd(fd), p, l).build()
            }
            Op::Recv { fd, buf, len } => opcode::Recv::new(types::Fd(fd), buf, len).build(),
            Op::RecvPool {
                fd,
                multishot: true,
            } => opcode::RecvMulti::new(types::Fd(fd), bgid).build(),
            Op::RecvPool {
                fd,
                multishot: false,
            } => opcode::Recv::new(types::Fd(fd), std::ptr::null_mut(), buf_size)
                .buf_group(bgid)
                .build()
                .flags(squeue::Flags::BUFFER_SELECT),
            Op::Send { fd, buf, len } if len as usize >= send_zc_min && !slot.plain_send => {
                opcode::SendZc::new(types::Fd(fd), buf, len)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
            }
            Op::Send { fd, buf, len } => opcode::Send::new(types::Fd(fd), buf, len)
                .flags(libc::MSG_NOSIGNAL)
                .build(),
            Op::SendVectored { fd, iov, iovcnt } => {
                // SAFETY: msghdr is plain old data.
                sc.msg = unsafe { std::mem::zeroed() };
                sc.msg.msg_iov = iov as *mut libc::iovec;
                sc.msg.msg_iovlen = iovcnt as usize;
                opcode::SendMsg::new(types::Fd(fd), &sc.msg)
                    .flags(libc::MSG_NOSIGNAL as u32)
                    .build()
            }
            Op::RecvFrom { fd, buf, len } => {
                sc.addr = super::RawAddr::empty();
                sc.iov = libc::iovec {
                    iov_base: buf.cast(),
                    iov_len: len as usize,
                };
                // SAFETY: msghdr is plain old data.
                sc.msg = unsafe { std::mem::zeroed() };
                sc.msg.msg_name = &mut sc.addr.storage as *mut _ as *mut libc::c_void;
                sc.msg.msg_namelen = sc.addr.len;
                sc.msg.msg_iov = &mut sc.iov;
                sc.msg.msg_iovlen = 1;
                opcode::RecvMsg::new(types::Fd(fd), &mut sc.msg).build()
            }
            Op::SendTo { fd, buf, len, .. } => {
                sc.iov = libc::iovec {
                    iov_base: buf as *mut libc::c_void,
                    iov_len: len as usize,
                };
                // SAFETY: msghdr is plain old data.
                sc.msg = unsafe { std::mem::zeroed() };
                sc.msg.msg_name = &mut sc.addr.storage as *mut _ as *mut libc::c_void;
                sc.msg.msg_namelen = sc.addr.len;
                sc.msg.msg_iov = &mut sc.iov;
                sc.msg.msg_iovlen = 1;
                opcode::SendMsg::new(types::Fd(fd), &sc.msg)
                    .flags(libc::MSG_NOSIGNAL as u32)
                    .build()
            }
            Op::ReadAt {
                fd,
                buf,
                len,
                offset,
            } => opcode::Read::new(types::Fd(fd), buf, len)
                .offset(offset)
                .build(),
            Op::WriteAt {
                fd,
                buf,
                len,
                offset,
            } => opcode::Write::new(types::Fd(fd), buf, len)
                .offset(offset)
                .build(),
            Op::Open { path, flags, mode } => opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), path)
                .flags(flags | libc::O_CLOEXEC)
                .mode(mode)
                .build(),
            Op::Fsync { fd, data_only } => {
                let mut f = opcode::Fsync::new(types::Fd(fd));
                if data_only {
                    f = f.flags(types::FsyncFlags::DATASYNC);
                }
                f.build()
            }
            Op::Shutdown { fd, how } => opcode::Shutdown::new(types::Fd(fd), how).build(),
            Op::Close { fd } => opcode::Close::new(types::Fd(fd)).build(),
            Op::Splice {
                fd_in,
                off_in,
                fd_out,
                len,
            } => {
                // -1: no offset (the fd's position); the pipe side must have none.
                let off = off_in.map_or(-1, |o| o as i64);
                opcode::Splice::new(types::Fd(fd_in), off, types::Fd(fd_out), -1, len)
                    .flags(libc::SPLICE_F_MOVE)
                    .build()
            }
            Op::Poll {
                fd,
                events,
                multishot,
            } => opcode::PollAdd::new(types::Fd(fd), events)
                .multi(multishot)
                .build(),
        };
        let mut entry = entry.user_data(id.to_user_data());
        match slot.timeout {
            Some(t) => {
                sc.timeout = types::Timespec::new()
                    .sec(t.as_secs())
                    .nsec(t.subsec_nanos());
                let ts: *const types::Timespec = &sc.timeout;
                entry = entry.flags(squeue::Flags::IO_LINK);
                // SAFETY: the timespec lives in the slot's scratch until the final CQE.
                let link = opcode::LinkTimeout::new(unsafe { &*ts })
                    .build()
                    .user_data(TIMEOUT_UD);
                // Both must sit in the SQ together, in order.
                let free = {
                    let sq = self.ring.submission();
                    sq.capacity() - sq.len()
                };
                if free < 2 {
                    let _ = self.ring.submit();
                }
                self.push(entry);
                self.push(link);
            }
            None => self.push(entry),
        }
    }

    pub(crate) fn cancel(&mut self, ctx: &mut Ctx<'_>, id: OpId) {
        if let Some(pos) = self.unsubmitted.iter().position(|s| *s == id) {
            // Never handed to the kernel, and now it never will be: it ends here, with
            // nothing done (see `unsubmitted`).
            self.unsubmitted.remove(pos);
            ctx.deliver(id, Completion::new(-libc::ECANCELED), true);
            return;
        }
        if let Some(pos) = self.starved.iter().position(|s| *s == id) {
            // Not in the kernel at all: nothing to cancel there. The op ends here.
            self.starved.swap_remove(pos);
            // Delivered on the next turn, via a NOP carrying the op's own user_data.
            let sqe = opcode::Nop::new().build().user_data(id.to_user_data());
            self.push(sqe);
            return;
        }
        let sqe = opcode::AsyncCancel::new(id.to_user_data())
            .build()
            .user_data(CANCEL_UD);
        self.push(sqe);
    }

    pub(crate) fn turn(&mut self, ctx: &mut Ctx<'_>, timeout: Option<Duration>) -> io::Result<()> {
        if !self.starved.is_empty() && ctx.pool.take_returned() {
            // Oldest first, and only as many as there are buffers to receive into:
            // re-arming every parked receive for one returned buffer would send all but
            // one straight back to ENOBUFS. The rest wait for the next turn, which the
            // re-armed ones' completions bring.
            let n = ctx.pool.free_count().clamp(1, self.starved.len());
            let rearm: Vec<OpId> = self.starved.drain(..n).collect();
            for id in rearm {
                if ctx.table.get_mut(id).is_some() {
                    ctx.stats.rearmed += 1;
                    self.start(ctx, id);
                }
            }
            if !self.starved.is_empty() {
                ctx.pool.mark_returned();
            }
        }
        self.push_unsubmitted(ctx);
        ctx.stats.enters += 1;
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
                self.ring.submitter().submit_with_args(1, &args)
            }
            None => self.ring.submit_and_wait(1),
        };
        match res {
            Ok(_) => {}
            Err(e) => match e.raw_os_error() {
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN) => {}
                _ => return Err(e),
            },
        }
        self.reap(ctx);
        ctx.stats.sq_full_flushes += std::mem::take(&mut self.sq_full_flushes);
        // The kernel kept CQEs that did not fit: flush and reap them too.
        while self.ring.submission().cq_overflow() {
            ctx.stats.cq_overflow_flushes += 1;
            // SAFETY: as above.
            let _ = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(0, 0, ENTER_GETEVENTS, None)
            };
            if self.reap(ctx) == 0 {
                break;
            }
        }
        Ok(())
    }

    fn reap(&mut self, ctx: &mut Ctx<'_>) -> usize {
        let mut n = 0;
        loop {
            // Copy a batch out so the completion queue's borrow ends before dispatching
            // (which may re-arm, i.e. submit).
            let mut cqes = std::mem::take(&mut self.cqes);
            cqes.extend(
                self.ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            if cqes.is_empty() {
                self.cqes = cqes;
                break;
            }
            n += cqes.len();
            ctx.stats.completions += cqes.len() as u64;
            for &(ud, res, flags) in &cqes {
                self.dispatch(ctx, ud, res, flags);
            }
            cqes.clear();
            self.cqes = cqes;
        }
        n
    }

    fn dispatch(&mut self, ctx: &mut Ctx<'_>, ud: u64, result: i32, flags: u32) {
        match ud {
            WAKE_UD => {
                self.arm_wake();
                return;
            }
            CANCEL_UD | TIMEOUT_UD => return,
            _ => {}
        }
        let id = OpId::from_user_data(ud);
        let more = cqueue::more(flags);
        let mut c = Completion::new(result);
        if let Some(bid) = cqueue::buffer_select(flags) {
            c.buf = Some(ctx.pool.provided(bid, result.max(0) as usize));
        }
        let Some(slot) = ctx.table.get_mut(id) else {
            return; // stale; a buffer in `c` goes back on drop
        };
        if slot.starved {
            // The NOP that ends a cancelled receive parked on an empty pool.
            slot.starved = false;
            c.result = -libc::ECANCELED;
        }
        // A zero-copy send: the first CQE carries the result (with MORE), the notification
        // (NOTIF, without MORE) says the kernel let go of the buffer.
        if cqueue::notif(flags) {
            if slot.plain_send && slot.life == Life::Active && !slot.done && slot.queue.is_empty() {
                // The zero-copy attempt was refused (below); the kernel is done with it,
                // so send the bytes the ordinary way.
                self.start(ctx, id);
                return;
            }
            match (slot.life, &mut slot.notify) {
                (Life::Detached, _) => ctx.table.release(id),
                (_, super::Notify::Token(_)) => ctx.deliver(id, Completion::new(0), true),
                (_, super::Notify::Waker(w)) => {
                    slot.done = true;
                    if let Some(w) = w {
                        w.wake_by_ref();
                    }
                }
            }
            return;
        }
        if let Op::Send { len, .. } = slot.op {
            let zc_refused = result == -libc::EOPNOTSUPP
                && len as usize >= self.send_zc_min
                && !slot.plain_send
                && slot.life == Life::Active
                && !slot.cancel_requested;
            if more {
                if zc_refused {
                    // Retried as a plain send once the notification says it is over.
                    slot.plain_send = true;
                } else {
                    ctx.deliver(id, c, false);
                }
                return;
            }
            // SEND_ZC is refused by sockets without zero-copy support (Unix sockets):
            // send the same bytes the ordinary way. Nothing was sent by the refused op.
            if zc_refused {
                slot.plain_send = true;
                self.start(ctx, id);
                return;
            }
        }
        if result >= 0 {
            match slot.op {
                Op::Accept { .. } | Op::RecvFrom { .. } => {
                    c.addr = slot.scratch.addr.to_socket_addr();
                }
                _ => {}
            }
        }
        if slot.op.is_multishot() && !more && slot.life == Life::Active && !slot.cancel_requested {
            let rearm = match slot.op {
                // The pool ran dry: nothing was lost, the bytes wait in the socket. Park
                // until a buffer comes back.
                Op::RecvPool { .. } if result == -libc::ENOBUFS => {
                    slot.starved = true;
                    self.starved.push(id);
                    ctx.stats.rearmed += 1;
                    return;
                }
                Op::RecvPool { .. } => result > 0,
                Op::AcceptMulti { .. } => result >= 0,
                Op::Poll { .. } => result >= 0,
                _ => false,
            };
            if rearm {
                ctx.stats.rearmed += 1;
                ctx.deliver(id, c, false);
                self.start(ctx, id);
                return;
            }
        }
        if slot.timeout.is_some() && result == -libc::ECANCELED && !slot.cancel_requested {
            c.result = -libc::ETIMEDOUT;
        }
        let last = !more;
        ctx.deliver(id, c, last);
    }
}
