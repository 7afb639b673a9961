//! One operation's life in the driver, whatever the backend: who hears of its
//! completions and what waits for them ([`Owner`]), and where the operation stands with
//! the backend ([`Flight`]).
//!
//! Two small enums rather than one: they change apart. A task's receive stream can fall
//! behind (its owner says so) while the kernel still has the receive armed, parked on an
//! empty pool, or being stopped; and a low-level face's operation, a task's and an
//! orphaned one all go through the same flights. Each variant carries what that state
//! owns: a task's completion, a stream's queue, an orphan's buffers.
//!
//! ```text
//!  Owner:   Free ──insert──> Token | Single | Stream ──future dropped──> Orphaned
//!             ^                  │ final completion taken, or              │ final
//!             └──────────────────┴─ (Token) delivered ───────────────────┘ completion
//!
//!  Flight:  Running ──ENOBUFS──> Starved ──buffer back──> Running
//!           Running ──consumer behind (or a dry pool)──> Stopping (io_uring) ──end──> Stopped
//!           Stopped ──consumer caught up──> Running
//!           any ──cancel──> Cancelling ──final completion──> Done
//!           Running ──final completion──> Done
//! ```
//!
//! The rule for the end of a multishot operation is here once, for both backends
//! ([`Slot::multishot_end`]).

use std::collections::VecDeque;
use std::task::Waker;
use std::time::Duration;

use super::completion::Completion;
use super::held::HeldValue;
use super::op::{AfterEnd, Nop, Op, OpKind};
use super::stream_queue::QueueWatch;

/// Who hears of an operation's completions, and what waits for them.
///
/// `repr(u8)`: a plain tag byte, so that telling the variants apart on the hot path is
/// one load and compare (with the niche layout the compiler picks otherwise, it is a
/// computation on `Single`'s completion; measured: +20 instructions per 64-byte echo
/// message).
#[repr(u8)]
pub(crate) enum Owner {
    /// Nobody: the slot is on the free list.
    Free,
    /// The low-level face: completions go to the turn's sink with this token; the slot
    /// frees itself at the final one.
    Token(u64),
    /// A task awaits the one completion of a single-shot operation, kept here until its
    /// future takes it. `armed`: the slot's waker is that task's (it may be a previous
    /// user's until the future registers, after the op started).
    Single {
        armed: bool,
        completion: Option<Completion>,
    },
    /// A task reads a multishot operation's completions as a stream: from the slot's
    /// `queue`, or from `shared` once its stream took the queue over.
    Stream {
        armed: bool,
        shared: Option<QueueWatch>,
        /// The consumer is too far behind ([`BACKLOG`] completions, or pieces that pin
        /// the receive's share of the pool: see `delivery::falls_behind`; or pieces
        /// waiting when the pool ran dry: `driver::pressure`): the backend receives no
        /// more until it has caught up (down to [`Slot::resume_at`]).
        backlogged: bool,
    },
    /// Nobody awaits any more (the future was dropped, or the op was submitted
    /// detached): what the op uses is held until its final completion, which frees the
    /// slot (and closes an fd, returns a buffer, that it brings).
    Orphaned(Option<HeldValue>),
}

/// Where an operation stands with the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flight {
    /// With the kernel (io_uring), or waiting for its fd's readiness (epoll).
    Running,
    /// A multishot receive parked on an empty buffer pool: no backend has it until a
    /// buffer comes back (see `driver::starved`).
    Starved,
    /// A multishot receive whose consumer fell behind: the `ASYNC_CANCEL` that stops it
    /// is on its way (io_uring).
    Stopping,
    /// Stopped for its consumer's backlog: in no backend's hands until the consumer
    /// catches up.
    Stopped,
    /// A cancel was asked for; the final completion is on its way.
    Cancelling,
    /// The final completion came: no CQE or readiness will name it again.
    Done,
}

/// How many completions a multishot receive may have waiting for its consumer before
/// it stops receiving. Each holds a piece of a pool buffer: without a bound, one
/// connection whose reader stops (an application that no longer polls its stream) would
/// take every buffer of the core's pool and stall every other connection. Past the
/// bound the bytes wait in the socket, where TCP's flow control slows the peer.
///
/// The tighter bound is mostly the other one: the buffers those pieces pin, at most the
/// pool's [share](crate::buf::BufferPool::share) (an eighth), however few completions
/// that takes (see `delivery::falls_behind`).
pub(crate) const BACKLOG: usize = 16;

/// What a backend does when a multishot operation ends (io_uring: a CQE without
/// `IORING_CQE_F_MORE`; epoll: a try that ended it), by [`Slot::multishot_end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MultishotEnd {
    /// It is over: deliver the completion as its last.
    Finish,
    /// Start it again: the kernel stopped it with nothing wrong (a full CQ, say), or a
    /// stop for backlog ended after its consumer caught up. `deliver`: the completion
    /// carries something (bytes, a connection) and goes to its owner first.
    Rearm { deliver: bool },
    /// The pool ran dry: deliver nothing, park it until a buffer comes back.
    Park,
    /// Stopped for its consumer's backlog, as asked: keep it stopped until the
    /// consumer catches up. `deliver`: it still carried bytes, which go to the owner.
    Stop { deliver: bool },
}

/// One operation's backend-neutral state.
pub(crate) struct Slot {
    /// Bumped at each reuse, so a stale `OpId` cannot reach the next operation.
    pub gen: u32,
    pub flight: Flight,
    pub op: Op,
    /// Fails with `ETIMEDOUT` if not complete by then (relative to submission).
    pub timeout: Option<Duration>,
    pub owner: Owner,
    /// The waker of the task that last awaited an operation in this slot. Kept while
    /// the slot is free: the same task usually takes the same slot again (the free list
    /// is last-in first-out), and then nothing is cloned. Woken only while `owner` is a
    /// task's and armed.
    pub waker: Option<Waker>,
    /// A stream's completions until its stream takes them over (`Owner::Stream`'s
    /// `shared`). Kept, empty, with its allocation while the slot is free.
    pub queue: VecDeque<Completion>,
    /// A stream stopped for its consumer's backlog is resumed once no more than this
    /// many completions wait (half of those that waited when it stopped).
    pub resume_at: u16,
}

impl Slot {
    pub(crate) fn vacant() -> Slot {
        Slot {
            gen: 0,
            flight: Flight::Done,
            op: Op::Nop(Nop),
            timeout: None,
            owner: Owner::Free,
            waker: None,
            queue: VecDeque::new(),
            resume_at: 0,
        }
    }

    /// True unless the slot is free.
    #[inline]
    pub(crate) fn is_live(&self) -> bool {
        !matches!(self.owner, Owner::Free)
    }

    /// Someone awaits the operation (a token or a task), so its completions matter.
    #[inline]
    pub(crate) fn is_awaited(&self) -> bool {
        matches!(
            self.owner,
            Owner::Token(_) | Owner::Single { .. } | Owner::Stream { .. }
        )
    }

    /// A cancel was asked for (a real one, not a stop for backlog).
    #[inline]
    pub(crate) fn cancel_requested(&self) -> bool {
        self.flight == Flight::Cancelling
    }

    /// A task's stream whose consumer is behind.
    #[inline]
    pub(crate) fn backlogged(&self) -> bool {
        matches!(
            self.owner,
            Owner::Stream {
                backlogged: true,
                ..
            }
        )
    }

    /// Wakes the task that awaits this operation, if its waker is registered.
    #[inline]
    pub(crate) fn wake(&self) {
        let armed = match self.owner {
            Owner::Single { armed, .. } | Owner::Stream { armed, .. } => armed,
            _ => false,
        };
        if let (true, Some(w)) = (armed, &self.waker) {
            w.wake_by_ref();
        }
    }

    /// Makes `waker` the one this task's slot wakes (nothing is cloned if it is the
    /// same as the one kept).
    #[inline]
    pub(crate) fn register_waker(&mut self, waker: &Waker) {
        match &mut self.owner {
            Owner::Single { armed, .. } | Owner::Stream { armed, .. } => *armed = true,
            _ => return,
        }
        match &self.waker {
            Some(w) if w.will_wake(waker) => {}
            _ => self.waker = Some(waker.clone()),
        }
    }

    /// The one rule for the end of a multishot operation with `result`, for both
    /// backends. Only an operation that someone awaits and nobody cancelled is started
    /// again or parked; everything else ends.
    #[inline]
    pub(crate) fn multishot_end(&self, result: i32) -> MultishotEnd {
        if !self.is_awaited() {
            return MultishotEnd::Finish;
        }
        match self.flight {
            Flight::Running => match self.op.after_end(result) {
                AfterEnd::AwaitBuffer => MultishotEnd::Park,
                AfterEnd::Rearm => MultishotEnd::Rearm { deliver: true },
                AfterEnd::Finish => MultishotEnd::Finish,
            },
            // The end of a stop for backlog. Bytes it still carried are delivered; an
            // empty pool is no news (it is stopped anyway); an error or the end of the
            // stream ends it as usual.
            Flight::Stopping
                if result > 0 || result == -libc::ECANCELED || result == -libc::ENOBUFS =>
            {
                let deliver = result > 0;
                if self.backlogged() {
                    MultishotEnd::Stop { deliver }
                } else {
                    // Caught up meanwhile.
                    MultishotEnd::Rearm { deliver }
                }
            }
            _ => MultishotEnd::Finish,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::op::{AcceptMulti, RecvMulti};

    fn slot(op: Op, owner: Owner, flight: Flight) -> Slot {
        Slot {
            op,
            owner,
            flight,
            ..Slot::vacant()
        }
    }

    fn stream(backlogged: bool) -> Owner {
        Owner::Stream {
            armed: true,
            shared: None,
            backlogged,
        }
    }

    #[test]
    fn the_multishot_end_rule() {
        let recv = Op::from(RecvMulti { fd: 3 });
        let running = slot(recv, stream(false), Flight::Running);
        assert_eq!(running.multishot_end(-libc::ENOBUFS), MultishotEnd::Park);
        let rearm = MultishotEnd::Rearm { deliver: true };
        assert_eq!(running.multishot_end(100), rearm);
        assert_eq!(running.multishot_end(0), MultishotEnd::Finish);
        assert_eq!(
            running.multishot_end(-libc::ECONNRESET),
            MultishotEnd::Finish
        );
        // A token's receive follows the same rule.
        let token = slot(recv, Owner::Token(7), Flight::Running);
        assert_eq!(token.multishot_end(-libc::ENOBUFS), MultishotEnd::Park);
        // Cancelled, or nobody left: it ends.
        let cancelled = slot(recv, stream(false), Flight::Cancelling);
        assert_eq!(
            cancelled.multishot_end(-libc::ENOBUFS),
            MultishotEnd::Finish
        );
        let orphan = slot(recv, Owner::Orphaned(None), Flight::Running);
        assert_eq!(orphan.multishot_end(100), MultishotEnd::Finish);
        // The end of a stop for backlog: stays stopped, or goes on if caught up.
        let stopping = slot(recv, stream(true), Flight::Stopping);
        let (stop, stop_with_bytes) = (
            MultishotEnd::Stop { deliver: false },
            MultishotEnd::Stop { deliver: true },
        );
        assert_eq!(stopping.multishot_end(-libc::ECANCELED), stop);
        assert_eq!(stopping.multishot_end(50), stop_with_bytes);
        assert_eq!(stopping.multishot_end(0), MultishotEnd::Finish);
        let caught_up = slot(recv, stream(false), Flight::Stopping);
        let go_on = MultishotEnd::Rearm { deliver: false };
        assert_eq!(caught_up.multishot_end(-libc::ENOBUFS), go_on);
        // An accept stream re-arms after a connection, ends on an error.
        let accept = slot(
            Op::from(AcceptMulti { fd: 3 }),
            stream(false),
            Flight::Running,
        );
        assert_eq!(accept.multishot_end(5), rearm);
        assert_eq!(accept.multishot_end(-libc::EMFILE), MultishotEnd::Finish);
    }
}
