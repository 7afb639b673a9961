//! The operations, one type per file, each saying in one place how io_uring submits it
//! and how the epoll backend performs it.
//!
//! An op is plain data (`Copy`): its arguments, with raw pointers into buffers that the
//! submitter keeps alive until the operation's *final* completion. Three traits describe
//! it:
//!
//! - `OpKind`: what it is whatever the backend (its fd, whether it yields an fd or
//!   many completions, what the end of a multishot op means);
//! - `UringOp`: the SQE that submits it, and what a completion carries beyond the
//!   result;
//! - `EpollOp`: which readiness it waits for, and one non-blocking try.
//!
//! The [`Op`] enum that the driver stores in its slots is generated from the list at
//! the bottom of this file, and every arm of its dispatch calls all three traits: an op
//! that lacks a backend does not compile. Adding an op is one file and one line here.

mod accept;
mod close;
mod connect;
mod epoll_state;
mod fsync;
mod mkdir;
mod nop;
mod open;
mod poll;
mod read_at;
mod read_fd;
mod recv;
mod recv_from;
mod recv_msg;
mod recv_multi;
mod rename;
mod send;
mod send_all;
mod send_to;
mod send_vectored;
mod shutdown;
mod splice;
mod statx;
mod supported;
mod unlink;
mod uring_env;
mod wait_id;
mod write_at;
mod write_fd;

pub use accept::{Accept, AcceptMulti};
pub use close::Close;
pub use connect::Connect;
pub(crate) use epoll_state::EpollOpState;
pub use fsync::Fsync;
pub use mkdir::MkDir;
pub use nop::Nop;
pub use open::Open;
pub use poll::Poll;
pub use read_at::ReadAt;
pub use read_fd::ReadFd;
pub use recv::Recv;
pub use recv_from::RecvFrom;
pub use recv_msg::RecvMsg;
pub(crate) use recv_multi::recv_bytes;
pub use recv_multi::RecvMulti;
pub use rename::Rename;
pub use send::Send;
pub use send_all::SendAll;
pub use send_to::SendTo;
pub use send_vectored::SendVectored;
pub use shutdown::Shutdown;
pub use splice::Splice;
pub use statx::Statx;
pub use supported::{supported, UringOpcode};
pub use unlink::Unlink;
pub(crate) use uring_env::{UringEnv, UringScratch};
pub use wait_id::WaitId;
pub use write_at::WriteAt;
pub use write_fd::WriteFd;

pub(crate) use send_vectored::empty_msghdr;

use std::os::fd::RawFd;

use io_uring::squeue;

use super::addr::RawAddr;
use super::completion::Completion;
use crate::buf::BufferPool;

/// What an op is, whatever the backend that runs it.
pub(crate) trait OpKind {
    /// The fd it works on: the one epoll waits for, and the one `forget_fd` ends its
    /// parked operations for. `None` for ops without one (a NOP, an open).
    fn fd(&self) -> Option<RawFd>;

    /// True if a successful result is a new fd: the driver closes it if the operation's
    /// owner is gone by the time it arrives.
    fn yields_fd(&self) -> bool {
        false
    }

    /// True if the operation produces many completions until it ends.
    fn is_multishot(&self) -> bool {
        false
    }

    /// For a multishot operation on a backend that runs it try by try (epoll): true if
    /// a completion with `result` ends it. Errors end every op; a receive also ends at
    /// end of stream.
    fn ends(&self, result: i32) -> bool {
        result < 0
    }

    /// An address the op reads at submission (`Connect`, `SendTo`): the backend copies
    /// it into the operation's own memory then, so the caller's copy need not outlive
    /// the call that submits.
    fn input_addr(&self) -> Option<*const RawAddr> {
        None
    }

    /// What the end of a multishot operation with `result` means to its owner. Only
    /// asked of multishot operations that nobody asked to cancel.
    fn after_end(&self, result: i32) -> AfterEnd {
        let _ = result;
        AfterEnd::Finish
    }
}

/// What the end of a multishot operation means (io_uring: a CQE without
/// `IORING_CQE_F_MORE`; epoll: a try that returned an error or end of stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterEnd {
    /// It is over: the completion is its last.
    Finish,
    /// The kernel stopped it but nothing is wrong (a full CQ, say): deliver the
    /// completion and start it again.
    Rearm,
    /// The buffer pool ran dry (`ENOBUFS`): nothing was lost, the bytes wait in the
    /// socket. Park it, deliver nothing, and re-arm it once a buffer comes back (see
    /// `driver::starved`).
    AwaitBuffer,
}

/// How io_uring submits an op.
pub(crate) trait UringOp: OpKind {
    /// Builds the SQE (without `user_data`). Memory the kernel reads or writes while the
    /// op is in flight (an address, a `msghdr`) goes in `scratch`, whose address is
    /// stable until the final completion.
    fn sqe(&self, scratch: &mut UringScratch, env: &UringEnv) -> squeue::Entry;

    /// True if [`fill`](Self::fill) adds anything (it is skipped otherwise).
    const FILLS: bool = false;

    /// Adds to a completion what the kernel left in `scratch` (an accepted peer's
    /// address). Called for successful results of ops whose `FILLS` is true.
    fn fill(&self, scratch: &UringScratch, c: &mut Completion) {
        let _ = (scratch, c);
    }
}

/// Which readiness the epoll backend waits for before trying an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Needs none: performed at once, at submission (files, open, close).
    None,
    /// Waits until the fd is readable.
    Read(RawFd),
    /// Waits until the fd is writable.
    Write(RawFd),
}

/// What one non-blocking try of an op gave.
pub(crate) enum Attempt {
    /// A completion. `drained` says the direction is no longer ready (a short transfer
    /// emptied the socket or filled it), which saves the `EAGAIN` of the next try.
    Done { c: Completion, drained: bool },
    /// Would block: park until the next edge.
    Blocked,
}

impl Attempt {
    /// A completion with `result` that says nothing about readiness.
    pub(crate) fn result(result: i32) -> Attempt {
        Attempt::Done {
            c: Completion::new(result),
            drained: false,
        }
    }

    /// `EAGAIN` parks; anything else completes, `drained` when `short` says so.
    pub(crate) fn from_syscall(result: i32, short: impl FnOnce(i32) -> bool) -> Attempt {
        if result == -libc::EAGAIN || result == -libc::EWOULDBLOCK {
            return Attempt::Blocked;
        }
        Attempt::Done {
            c: Completion::new(result),
            drained: short(result),
        }
    }
}

/// How the epoll backend performs an op.
pub(crate) trait EpollOp: OpKind {
    /// The readiness to wait for.
    fn readiness(&self) -> Readiness;

    /// True if a completion does not consume the readiness it reports (a poll): one
    /// completion per edge, then wait for the next.
    fn once_per_edge(&self) -> bool {
        false
    }

    /// One non-blocking try. `state` is this operation's epoll-only state; `pool` the
    /// core's buffer pool (for receives that pick their own buffer).
    ///
    /// # Safety
    ///
    /// The pointers in the op are valid for the lengths given (the submitter's promise,
    /// held until the final completion, which this try may be).
    unsafe fn attempt(&self, state: &mut EpollOpState, pool: &BufferPool) -> Attempt;
}

/// `ret` as a completion result: the value, or `-errno`.
pub(crate) fn syscall_result(ret: isize) -> i32 {
    if ret < 0 {
        -std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    } else {
        ret as i32
    }
}

/// Generates the [`Op`] enum, `From` for each op type, and its dispatch. Every arm calls
/// all three traits, so an op type that lacks one does not compile.
macro_rules! ops {
    ($($(#[$doc:meta])* $variant:ident,)*) => {
        /// One operation for the driver: the enum of every op type, stored in the
        /// driver's slots (no allocation per op). Build it from an op type with `into()`.
        /// Pointers inside must stay valid (and, for buffers the kernel writes,
        /// unaliased) until the operation's final completion has been reaped.
        #[derive(Debug, Clone, Copy)]
        pub enum Op {
            $($(#[$doc])* $variant($variant),)*
        }

        $(impl From<$variant> for Op {
            fn from(op: $variant) -> Op {
                Op::$variant(op)
            }
        })*

        impl OpKind for Op {
            #[inline]
            fn fd(&self) -> Option<RawFd> {
                match self { $(Op::$variant(op) => OpKind::fd(op),)* }
            }
            #[inline]
            fn yields_fd(&self) -> bool {
                match self { $(Op::$variant(op) => OpKind::yields_fd(op),)* }
            }
            #[inline]
            fn is_multishot(&self) -> bool {
                match self { $(Op::$variant(op) => OpKind::is_multishot(op),)* }
            }
            #[inline]
            fn after_end(&self, result: i32) -> AfterEnd {
                match self { $(Op::$variant(op) => OpKind::after_end(op, result),)* }
            }
            #[inline]
            fn ends(&self, result: i32) -> bool {
                match self { $(Op::$variant(op) => OpKind::ends(op, result),)* }
            }
            #[inline]
            fn input_addr(&self) -> Option<*const RawAddr> {
                match self { $(Op::$variant(op) => OpKind::input_addr(op),)* }
            }
        }

        impl Op {
            /// `UringOp::FILLS` of the op inside.
            #[inline]
            pub(crate) fn fills(&self) -> bool {
                match self { $(Op::$variant(_) => <$variant as UringOp>::FILLS,)* }
            }
        }

        impl UringOp for Op {
            #[inline]
            fn sqe(&self, scratch: &mut UringScratch, env: &UringEnv) -> squeue::Entry {
                match self { $(Op::$variant(op) => UringOp::sqe(op, scratch, env),)* }
            }
            #[inline]
            fn fill(&self, scratch: &UringScratch, c: &mut Completion) {
                match self { $(Op::$variant(op) => UringOp::fill(op, scratch, c),)* }
            }
        }

        impl EpollOp for Op {
            #[inline]
            fn readiness(&self) -> Readiness {
                match self { $(Op::$variant(op) => EpollOp::readiness(op),)* }
            }
            #[inline]
            fn once_per_edge(&self) -> bool {
                match self { $(Op::$variant(op) => EpollOp::once_per_edge(op),)* }
            }
            #[inline]
            unsafe fn attempt(&self, state: &mut EpollOpState, pool: &BufferPool) -> Attempt {
                // SAFETY: the caller's promise, passed on.
                match self { $(Op::$variant(op) => unsafe { EpollOp::attempt(op, state, pool) },)* }
            }
        }
    };
}

ops! {
    /// Does nothing; completes with 0.
    Nop,
    /// Accepts one connection.
    Accept,
    /// Accepts connections until cancelled.
    AcceptMulti,
    /// Connects a socket.
    Connect,
    /// Receives into a caller buffer.
    Recv,
    /// Receives into pool buffers until cancelled, end of stream or an error.
    RecvMulti,
    /// Sends a caller buffer.
    Send,
    /// Sends a whole caller buffer, completing once.
    SendAll,
    /// Sends several buffers in one call.
    SendVectored,
    /// Receives one datagram and its source address.
    RecvFrom,
    /// Sends one datagram to an address.
    SendTo,
    /// Reads a file at an offset.
    ReadAt,
    /// Writes a file at an offset.
    WriteAt,
    /// Opens a file.
    Open,
    /// Flushes a file to storage.
    Fsync,
    /// Shuts down one or both directions of a socket.
    Shutdown,
    /// Closes an fd.
    Close,
    /// Moves bytes between two fds inside the kernel.
    Splice,
    /// Waits for readiness.
    Poll,
    /// Reads a pipe or another pollable fd that is not a socket.
    ReadFd,
    /// Writes a pipe or another pollable fd that is not a socket.
    WriteFd,
    /// Receives one message into the caller's `msghdr`.
    RecvMsg,
    /// Waits for a child process through its pidfd, and reaps it.
    WaitId,
    /// A file's metadata by path.
    Statx,
    /// Makes a directory.
    MkDir,
    /// Renames a path.
    Rename,
    /// Removes a file or an empty directory.
    Unlink,
}

impl Op {
    /// The fd the operation works on, if any.
    pub fn fd(&self) -> Option<RawFd> {
        OpKind::fd(self)
    }

    /// True if the operation produces many completions.
    pub fn is_multishot(&self) -> bool {
        OpKind::is_multishot(self)
    }

    /// True for the ops that send bytes on a socket (each is one send on the wire).
    #[inline]
    pub fn is_send(&self) -> bool {
        matches!(
            self,
            Op::Send(_) | Op::SendAll(_) | Op::SendVectored(_) | Op::SendTo(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ops are copied into a slot on every submission: keep them small.
    #[test]
    fn ops_stay_small() {
        assert!(
            std::mem::size_of::<Op>() <= 32,
            "Op is {} bytes",
            std::mem::size_of::<Op>()
        );
    }

    #[test]
    fn multishot_ends_follow_one_rule() {
        let recv = Op::from(RecvMulti { fd: 3 });
        assert_eq!(recv.after_end(-libc::ENOBUFS), AfterEnd::AwaitBuffer);
        assert_eq!(recv.after_end(17), AfterEnd::Rearm);
        assert_eq!(recv.after_end(0), AfterEnd::Finish, "end of stream");
        assert_eq!(recv.after_end(-libc::ECONNRESET), AfterEnd::Finish);
        let accept = Op::from(AcceptMulti { fd: 3 });
        assert_eq!(accept.after_end(5), AfterEnd::Rearm);
        assert_eq!(accept.after_end(-libc::EMFILE), AfterEnd::Finish);
        assert!(accept.yields_fd() && accept.is_multishot());
        assert!(!Op::from(Nop).is_multishot());
    }
}
