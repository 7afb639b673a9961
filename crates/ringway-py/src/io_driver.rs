//! The only module that names `ringway::driver`: the loop's view of the driver's
//! low-level face (token-based `submit` / `turn` / `cancel`, the eventfd waker, the
//! provided-buffer pool). The rest of the crate speaks [`IoOp`] and [`IoEvent`], so a
//! change in how the driver spells its operations is a change here only.
//!
//! One `turn` is one `io_uring_enter` (submit everything queued and wait) or one
//! `epoll_wait`. Completions are collected into a vector during the turn and handed to
//! the loop afterwards: the loop calls Python for them, which may submit new operations,
//! and the driver is borrowed while it turns.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use ringway::driver::op::{AcceptMulti, Poll, RecvMulti, SendVectored};
use ringway::driver::{Backend, Driver, DriverConfig, DriverWaker, Op, OpId};

pub use ringway::buf::PoolBuf;

/// An operation the loop starts. Pointers follow the driver's rule: valid until the
/// operation's last completion.
#[derive(Debug, Clone, Copy)]
pub enum IoOp {
    /// Multishot receive into pool buffers until end of stream, an error or a cancel.
    RecvMulti {
        /// The connected socket.
        fd: RawFd,
    },
    /// Multishot accept until cancelled: one completion (the new fd) per connection.
    AcceptMulti {
        /// The listening socket.
        fd: RawFd,
    },
    /// One readiness report for `events` (`POLLIN` or `POLLOUT`).
    Poll {
        /// The watched file descriptor.
        fd: RawFd,
        /// The `poll(2)` events waited for.
        events: u32,
    },
    /// One `sendmsg` of `iovcnt` iovecs.
    SendVectored {
        /// The connected socket.
        fd: RawFd,
        /// The first iovec; the array stays valid until the last completion.
        iov: *const libc::iovec,
        /// How many iovecs `iov` points at.
        iovcnt: u32,
    },
}

/// One completion: the token given at submit, the result (a count or an fd, or
/// `-errno`), the pool buffer the bytes landed in for receives, and whether the kernel
/// will report nothing more for this operation.
#[derive(Debug)]
pub struct IoEvent {
    /// The token the operation was submitted with.
    pub token: u64,
    /// A byte count or an fd, or `-errno`.
    pub result: i32,
    /// The pool buffer a receive's bytes landed in.
    pub buf: Option<PoolBuf>,
    /// The kernel reports nothing more for this operation.
    pub last: bool,
}

/// Names an operation in flight, to cancel it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpKey(OpId);

/// Wakes the loop's wait from any thread (one eventfd write).
#[derive(Clone)]
pub struct LoopWaker(DriverWaker);

impl LoopWaker {
    /// Interrupts the current or next wait.
    pub fn notify(&self) {
        self.0.notify();
    }
}

impl std::fmt::Debug for LoopWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoopWaker")
    }
}

/// Counters for tests and diagnostics (none depends on the machine's speed).
#[derive(Debug, Clone, Copy, Default)]
pub struct IoStats {
    /// Driver turns (calls of `turn`).
    pub turns: u64,
    /// `io_uring_enter` (or `epoll_wait`) calls.
    pub enters: u64,
    /// Operations submitted.
    pub submitted: u64,
    /// Completions reaped (every CQE on io_uring).
    pub completions: u64,
    /// Operations started and not yet finished.
    pub live_ops: usize,
    /// Pool buffers currently held by the program (as `PoolBuf`s).
    pub pool_in_use: usize,
    /// Buffers in the provided-buffer pool.
    pub pool_total: usize,
}

/// Buffers in the loop's receive pool: see [`POOL_BUF_SIZE`].
pub const POOL_BUFFERS: u16 = 4;

/// The size of each buffer of the loop's receive pool: four of 256 KiB (1 MiB), filled
/// piece after piece, where the runtime's default is 128 whole buffers of 64 KiB.
///
/// Why: the loop copies every piece out of the pool in the turn it arrives (into the
/// `bytes` object `data_received` gets, or the protocol's own buffer), so a piece pins
/// its buffer for one turn only and a small pool suffices; and a provided-buffer ring
/// hands its buffers out in ring order, so the kernel writes each message into memory
/// last touched a whole pool ago. At 4 MiB that memory has left the core's 2 MiB L2
/// cache: on S14's 100 KiB echo (10 connections) the kernel's receive copy, the copy
/// out to `bytes` and the send copy that follows each cost 1.3-1.7× uvloop's (which
/// reads into one 256 KiB buffer that stays hot). At 1 MiB they are within 1.1× of it.
/// Smaller pools starve: 512 KiB (4 × 128 KiB or 2 × 256 KiB) made 0.5-0.6 re-armed
/// receives per message at that load (`bench/counts.py`), 1 MiB 0.1.
///
/// `RINGWAY_PY_POOL=COUNTxSIZE[,whole]` (e.g. `128x65536,whole`, the runtime's default) overrides it,
/// for measuring.
pub const POOL_BUF_SIZE: usize = 256 * 1024;

/// `COUNTxSIZE` (a power of two, and bytes) from `RINGWAY_PY_POOL`.
fn parse_pool_shape(v: &str) -> io::Result<(u16, usize, bool)> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "RINGWAY_PY_POOL={v:?}: expected COUNTxSIZE[,whole], a power-of-two count \
                 of buffers and their size in bytes (e.g. 4x262144), filled piece after \
                 piece unless `,whole`"
            ),
        )
    };
    let (shape, whole) = match v.split_once(',') {
        Some((shape, "whole")) => (shape, true),
        Some(_) => return Err(bad()),
        None => (v, false),
    };
    let (n, size) = shape.split_once('x').ok_or_else(bad)?;
    let n: u16 = n.trim().parse().map_err(|_| bad())?;
    let size: usize = size.trim().parse().map_err(|_| bad())?;
    if !n.is_power_of_two() || size == 0 {
        return Err(bad());
    }
    Ok((n, size, !whole))
}

/// The loop's driver.
pub struct IoDriver {
    driver: Driver,
    events: Vec<IoEvent>,
    /// Submits and cancels since the last turn: work the next turn must hand over.
    unsent: usize,
}

impl std::fmt::Debug for IoDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoDriver")
            .field("backend", &self.describe())
            .finish()
    }
}

impl IoDriver {
    /// Builds a driver. `backend` is `"auto"`, `"uring"` or `"epoll"`; `None` reads
    /// `RINGWAY_BACKEND` (default auto). A refused io_uring falls back to epoll under
    /// auto, and [`describe`](Self::describe) says why.
    pub fn new(backend: Option<&str>) -> io::Result<IoDriver> {
        let backend = match backend {
            Some(b) => b.parse::<Backend>()?,
            None => Backend::from_env()?.unwrap_or_default(),
        };
        let (pool_buffers, pool_buf_size, pool_incremental) = match std::env::var("RINGWAY_PY_POOL")
        {
            Ok(v) => parse_pool_shape(&v)?,
            Err(_) => (POOL_BUFFERS, POOL_BUF_SIZE, true),
        };
        let cfg = DriverConfig {
            backend,
            pool_buffers,
            pool_buf_size,
            // Four large buffers shared piece after piece by every connection; whole
            // buffers would let four receives take the pool (see POOL_BUF_SIZE).
            pool_incremental,
            // Fixed: four incremental buffers hold many receives each, and one of
            // 256 KiB doubling to the runtime's default cap would be 256 MiB.
            pool_buffers_max: pool_buffers,
            ..DriverConfig::default()
        };
        Ok(IoDriver {
            driver: Driver::new(&cfg)?,
            events: Vec::with_capacity(256),
            unsent: 0,
        })
    }

    /// `"uring"` or `"epoll"`.
    pub fn backend_name(&self) -> &'static str {
        if self.driver.info().is_uring() {
            "uring"
        } else {
            "epoll"
        }
    }

    /// The backend, its flags, and why better rungs were refused.
    pub fn describe(&self) -> String {
        self.driver.info().to_string()
    }

    /// Why io_uring (or a better configuration of it) was refused, if it was.
    pub fn fallbacks(&self) -> Vec<String> {
        self.driver.info().fallbacks.clone()
    }

    /// True when completions can arrive without a readiness retry (io_uring): sends are
    /// best submitted as operations. On epoll the loop sends directly.
    pub fn is_uring(&self) -> bool {
        self.driver.info().is_uring()
    }

    /// Starts `op`; its completions come back from [`turn`](Self::turn) with `token`.
    ///
    /// # Safety
    ///
    /// Pointers in `op` must stay valid until the operation's last completion.
    pub unsafe fn submit(&mut self, op: IoOp, token: u64) -> OpKey {
        let op: Op = match op {
            IoOp::RecvMulti { fd } => RecvMulti { fd }.into(),
            IoOp::AcceptMulti { fd } => AcceptMulti { fd }.into(),
            IoOp::Poll { fd, events } => Poll {
                fd,
                events,
                multishot: false,
            }
            .into(),
            IoOp::SendVectored { fd, iov, iovcnt } => SendVectored { fd, iov, iovcnt }.into(),
        };
        self.unsent += 1;
        // SAFETY: forwarded from the caller.
        OpKey(unsafe { self.driver.submit(op, token, None) })
    }

    /// Asks for `key` to end early; its last completion still comes.
    pub fn cancel(&mut self, key: OpKey) {
        self.unsent += 1;
        self.driver.cancel(key.0);
    }

    /// True if operations or cancels were started since the last turn (on io_uring they
    /// wait in the submission queue; on epoll their completions wait for a turn).
    pub fn has_unsent(&self) -> bool {
        self.unsent > 0
    }

    /// Submits what is queued and waits up to `timeout` (`None`: until woken) for
    /// completions, which are appended to the event list.
    pub fn turn(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.unsent = 0;
        let events = &mut self.events;
        self.driver.turn(timeout, &mut |token, c, last| {
            events.push(IoEvent {
                token,
                result: c.result,
                buf: c.buf,
                last,
            });
        })
    }

    /// Moves the collected events into `into` (which must be empty), keeping both
    /// vectors' allocations.
    pub fn take_events(&mut self, into: &mut Vec<IoEvent>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut self.events, into);
    }

    /// A waker for other threads.
    pub fn waker(&self) -> LoopWaker {
        LoopWaker(self.driver.waker())
    }

    /// Call before closing an fd the driver has seen (the epoll backend forgets it).
    /// A failure to deregister is harmless here: the fd is closed right after, which
    /// removes it from the epoll set anyway.
    pub fn forget_fd(&mut self, fd: RawFd) {
        let _ = self.driver.forget_fd(fd);
    }

    /// Counters.
    pub fn stats(&self) -> IoStats {
        let s = self.driver.stats();
        let p = self.driver.pool().stats();
        IoStats {
            turns: s.turns,
            enters: s.enters,
            submitted: s.submitted,
            completions: s.completions,
            live_ops: self.driver.live_ops(),
            pool_in_use: p.in_use,
            pool_total: p.total,
        }
    }

    /// Cancels everything in flight and reaps it (bounded), for closing the loop.
    pub fn shutdown(&mut self) {
        self.driver.shutdown(Duration::from_secs(1));
        self.events.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::parse_pool_shape;

    #[test]
    fn pool_shape_is_count_x_size() {
        assert_eq!(parse_pool_shape("64x65536").unwrap(), (64, 65536, true));
        assert_eq!(parse_pool_shape("4x262144").unwrap(), (4, 262_144, true));
        assert_eq!(
            parse_pool_shape("128x65536,whole").unwrap(),
            (128, 65536, false)
        );
        for bad in [
            "",
            "64",
            "x65536",
            "3x4096",
            "64x0",
            "64xbig",
            "0x4096",
            "64x4096,",
            "64x4096,all",
        ] {
            let e = parse_pool_shape(bad).unwrap_err();
            assert!(e.to_string().contains("expected COUNTxSIZE"), "{bad}: {e}");
        }
    }
}
