//! What an operation is, and where its state lives while the kernel works on it.
//!
//! An [`Op`] is plain data: the opcode and its arguments, with raw pointers into buffers
//! that the submitter keeps alive until the operation's *final* completion. Everything
//! else an operation needs while in flight (the socket address the kernel writes an
//! accepted peer into, a `msghdr`, the timespec of a linked timeout, the completions not
//! yet taken) lives in its [`Slot`] in the [`OpTable`].
//!
//! The table is made of fixed-size pages that never move, so a pointer into a slot's
//! scratch space stays valid for as long as the operation is in flight, and slots are
//! reused: after warm-up an operation costs no heap allocation.

use std::any::Any;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::task::Waker;
use std::time::Duration;

use crate::buf::PoolBuf;

/// One operation for the driver. Pointers must stay valid (and, for buffers the kernel
/// writes, unaliased) until the operation's final completion has been reaped.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// Does nothing; completes with 0. Used to probe a ring.
    Nop,
    /// Accepts one connection; the completion carries the new fd and the peer address.
    Accept { fd: RawFd },
    /// Accepts connections until cancelled: one completion per connection.
    AcceptMulti { fd: RawFd },
    /// Connects a socket. `addr` is read only while the op is submitted (it is copied
    /// into the operation's slot), so it need not outlive the call.
    Connect { fd: RawFd, addr: *const RawAddr },
    /// Receives into a caller buffer.
    Recv { fd: RawFd, buf: *mut u8, len: u32 },
    /// Receives into a buffer the driver picks from the core's pool; `multishot` keeps
    /// receiving until cancelled, end of stream or an error.
    RecvPool { fd: RawFd, multishot: bool },
    /// Sends a caller buffer (`MSG_NOSIGNAL`).
    Send { fd: RawFd, buf: *const u8, len: u32 },
    /// Sends several buffers in one call (`sendmsg` with an iovec array).
    SendVectored {
        fd: RawFd,
        iov: *const libc::iovec,
        iovcnt: u32,
    },
    /// Receives one datagram and its source address.
    RecvFrom { fd: RawFd, buf: *mut u8, len: u32 },
    /// Sends one datagram to `addr` (read only at submission, like `Connect`'s).
    SendTo {
        fd: RawFd,
        buf: *const u8,
        len: u32,
        addr: *const RawAddr,
    },
    /// Reads from a file at an offset.
    ReadAt {
        fd: RawFd,
        buf: *mut u8,
        len: u32,
        offset: u64,
    },
    /// Writes to a file at an offset.
    WriteAt {
        fd: RawFd,
        buf: *const u8,
        len: u32,
        offset: u64,
    },
    /// Opens a file (`openat(AT_FDCWD, ...)`, always `O_CLOEXEC`); completes with the fd.
    Open {
        path: *const libc::c_char,
        flags: i32,
        mode: u32,
    },
    /// Flushes a file to storage.
    Fsync { fd: RawFd, data_only: bool },
    /// Shuts down one or both directions of a socket.
    Shutdown { fd: RawFd, how: i32 },
    /// Closes an fd.
    Close { fd: RawFd },
    /// Moves up to `len` bytes from `fd_in` to `fd_out` inside the kernel (`splice`);
    /// one of the two must be a pipe. `off_in` is the offset to read a file at (`None`:
    /// the fd's own position, as pipes and sockets need). Completes with the count moved,
    /// 0 at the end of the input. On epoll it waits for `fd_out` to be writable. On
    /// io_uring the kernel runs it in a worker which, while it waits for room in a
    /// socket, holds the pipe's lock: closing the pipe then blocks until it is done, so
    /// keep the pipe open until the final completion (`io::Pipe` does).
    Splice {
        fd_in: RawFd,
        off_in: Option<u64>,
        fd_out: RawFd,
        len: u32,
    },
    /// Waits for readiness (`POLLIN`/`POLLOUT` bits); completes with the ready mask.
    /// For loops (like asyncio's) that do their own I/O.
    Poll {
        fd: RawFd,
        events: u32,
        multishot: bool,
    },
}

impl Op {
    /// The fd the operation works on, if any.
    pub fn fd(&self) -> Option<RawFd> {
        match *self {
            Op::Accept { fd }
            | Op::AcceptMulti { fd }
            | Op::Connect { fd, .. }
            | Op::Recv { fd, .. }
            | Op::RecvPool { fd, .. }
            | Op::Send { fd, .. }
            | Op::SendVectored { fd, .. }
            | Op::RecvFrom { fd, .. }
            | Op::SendTo { fd, .. }
            | Op::ReadAt { fd, .. }
            | Op::WriteAt { fd, .. }
            | Op::Fsync { fd, .. }
            | Op::Shutdown { fd, .. }
            | Op::Close { fd }
            | Op::Poll { fd, .. } => Some(fd),
            // The side that may have to wait for room (see the epoll backend).
            Op::Splice { fd_out, .. } => Some(fd_out),
            Op::Nop | Op::Open { .. } => None,
        }
    }

    /// True if a successful result is a new fd that someone must close.
    pub(crate) fn yields_fd(&self) -> bool {
        matches!(
            self,
            Op::Accept { .. } | Op::AcceptMulti { .. } | Op::Open { .. }
        )
    }

    /// True if the operation produces many completions.
    pub fn is_multishot(&self) -> bool {
        matches!(
            self,
            Op::AcceptMulti { .. }
                | Op::RecvPool {
                    multishot: true,
                    ..
                }
                | Op::Poll {
                    multishot: true,
                    ..
                }
        )
    }
}

/// A socket address in the kernel's layout, copyable into a slot.
#[derive(Clone, Copy)]
pub struct RawAddr {
    pub(crate) storage: libc::sockaddr_storage,
    pub(crate) len: libc::socklen_t,
}

impl std::fmt::Debug for RawAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_socket_addr() {
            Some(a) => write!(f, "{a}"),
            None => write!(f, "RawAddr(family {})", self.storage.ss_family),
        }
    }
}

impl RawAddr {
    /// An empty address for the kernel to fill in.
    pub fn empty() -> Self {
        // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
        let storage = unsafe { std::mem::zeroed() };
        RawAddr {
            storage,
            len: std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    /// The kernel layout of an IP socket address.
    pub fn from_socket_addr(addr: &SocketAddr) -> Self {
        let mut raw = RawAddr::empty();
        match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
                unsafe {
                    std::ptr::write(&mut raw.storage as *mut _ as *mut libc::sockaddr_in, sin)
                };
                raw.len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
                unsafe {
                    std::ptr::write(&mut raw.storage as *mut _ as *mut libc::sockaddr_in6, sin6)
                };
                raw.len = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        raw
    }

    /// A Unix socket path address. Fails if the path is too long.
    pub fn from_unix_path(path: &std::path::Path) -> std::io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let mut raw = RawAddr::empty();
        // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_un.
        let sun = unsafe { &mut *(&mut raw.storage as *mut _ as *mut libc::sockaddr_un) };
        if bytes.len() >= sun.sun_path.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "unix socket path is {} bytes; at most {} fit",
                    bytes.len(),
                    sun.sun_path.len() - 1
                ),
            ));
        }
        sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (dst, src) in sun.sun_path.iter_mut().zip(bytes) {
            *dst = *src as libc::c_char;
        }
        raw.len = (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
        Ok(raw)
    }

    /// The IP address this holds, if it is one.
    pub fn to_socket_addr(&self) -> Option<SocketAddr> {
        match self.storage.ss_family as i32 {
            libc::AF_INET => {
                // SAFETY: the family says this is a sockaddr_in.
                let sin = unsafe { &*(&self.storage as *const _ as *const libc::sockaddr_in) };
                let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::new(ip.into(), u16::from_be(sin.sin_port)))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says this is a sockaddr_in6.
                let sin6 = unsafe { &*(&self.storage as *const _ as *const libc::sockaddr_in6) };
                let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                    ip,
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }

    /// Pointer and length for the kernel.
    pub(crate) fn as_ptr(&self) -> (*const libc::sockaddr, libc::socklen_t) {
        (&self.storage as *const _ as *const libc::sockaddr, self.len)
    }
}

/// Identifies an operation in flight: a slot index and that slot's generation, so a
/// completion or a cancel for an operation that has ended cannot touch its successor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpId {
    pub(crate) index: u32,
    pub(crate) gen: u32,
}

impl OpId {
    /// The 64-bit form carried in an SQE's `user_data`.
    pub(crate) fn to_user_data(self) -> u64 {
        ((self.gen as u64) << 32) | self.index as u64
    }

    pub(crate) fn from_user_data(ud: u64) -> Self {
        OpId {
            index: ud as u32,
            gen: (ud >> 32) as u32,
        }
    }
}

/// One completion of an operation.
#[derive(Debug)]
pub struct Completion {
    /// The result: a count or an fd when `>= 0`, `-errno` otherwise.
    pub result: i32,
    /// For `RecvPool`: the buffer the bytes landed in.
    pub buf: Option<PoolBuf>,
    /// For `Accept` and `RecvFrom`: the peer's IP address. (Kept small on purpose: a
    /// completion is moved several times on its way to the task.)
    pub addr: Option<SocketAddr>,
}

impl Completion {
    pub(crate) fn new(result: i32) -> Self {
        Completion {
            result,
            buf: None,
            addr: None,
        }
    }

    /// The result as an `io::Result`.
    pub fn io_result(&self) -> std::io::Result<u32> {
        if self.result >= 0 {
            Ok(self.result as u32)
        } else {
            Err(std::io::Error::from_raw_os_error(-self.result))
        }
    }
}

/// Who hears about completions.
pub(crate) enum Notify {
    /// Completions queue in the slot and this waker is woken (the executor's face).
    Waker(Option<Waker>),
    /// Completions go straight to the caller of `turn` with this token (the low-level
    /// face); the slot frees itself at the final completion.
    Token(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Life {
    Free,
    /// Someone awaits it.
    Active,
    /// Its future was dropped: the driver owns its resources until the final CQE.
    Detached,
}

/// Memory the kernel may read or write while the operation is in flight.
pub(crate) struct Scratch {
    pub addr: RawAddr,
    pub msg: libc::msghdr,
    pub iov: libc::iovec,
    pub timeout: io_uring::types::Timespec,
}

pub(crate) struct Slot {
    pub gen: u32,
    pub life: Life,
    pub op: Op,
    pub notify: Notify,
    /// The final completion has been seen; no CQE will name this slot again.
    pub done: bool,
    /// Completions not yet taken by the awaiting future.
    pub queue: VecDeque<Completion>,
    /// Resources (buffers) of a detached operation, dropped at the final completion.
    pub keep: Option<Box<dyn Any>>,
    pub cancel_requested: bool,
    pub timeout: Option<Duration>,
    /// A multishot receive parked on an empty buffer pool.
    pub starved: bool,
    /// epoll: a non-blocking connect is under way.
    pub connecting: bool,
    /// io_uring: the socket refused SEND_ZC; use a plain send.
    pub plain_send: bool,
    /// epoll: when the operation's timeout fires.
    pub deadline: Option<std::time::Instant>,
    pub scratch: Scratch,
}

const PAGE: usize = 64;

/// Stable-address slab of operation slots.
pub(crate) struct OpTable {
    pages: Vec<Box<[Slot]>>,
    free: Vec<u32>,
    live: usize,
}

impl OpTable {
    pub fn new() -> Self {
        OpTable {
            pages: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// Operations in flight or not yet released.
    pub fn live(&self) -> usize {
        self.live
    }

    pub fn insert(&mut self, op: Op, notify: Notify, timeout: Option<Duration>) -> OpId {
        if self.free.is_empty() {
            self.grow();
        }
        let index = self.free.pop().expect("grown");
        let slot = self.slot_mut(index);
        debug_assert_eq!(slot.life, Life::Free);
        slot.gen = slot.gen.wrapping_add(1);
        slot.life = Life::Active;
        slot.op = op;
        slot.notify = notify;
        slot.done = false;
        slot.queue.clear();
        slot.keep = None;
        slot.cancel_requested = false;
        slot.timeout = timeout;
        if let Op::Connect { addr, .. } | Op::SendTo { addr, .. } = op {
            // SAFETY: the submitter guarantees `addr` is valid during submission.
            slot.scratch.addr = unsafe { *addr };
        }
        slot.starved = false;
        slot.connecting = false;
        slot.deadline = None;
        slot.plain_send = false;
        let gen = slot.gen;
        self.live += 1;
        OpId { index, gen }
    }

    fn grow(&mut self) {
        let base = (self.pages.len() * PAGE) as u32;
        let page: Box<[Slot]> = (0..PAGE)
            .map(|_| Slot {
                gen: 0,
                life: Life::Free,
                op: Op::Nop,
                notify: Notify::Token(0),
                done: true,
                queue: VecDeque::new(),
                keep: None,
                cancel_requested: false,
                timeout: None,
                starved: false,
                connecting: false,
                deadline: None,
                plain_send: false,
                scratch: Scratch {
                    addr: RawAddr::empty(),
                    // SAFETY: msghdr and iovec are plain old data; zeroes are valid.
                    msg: unsafe { std::mem::zeroed() },
                    // SAFETY: as above.
                    iov: unsafe { std::mem::zeroed() },
                    timeout: io_uring::types::Timespec::new(),
                },
            })
            .collect();
        self.pages.push(page);
        // Hand out low indices first.
        self.free.extend((base..base + PAGE as u32).rev());
    }

    fn slot_mut(&mut self, index: u32) -> &mut Slot {
        let i = index as usize;
        &mut self.pages[i / PAGE][i % PAGE]
    }

    /// The slot of a live operation, or `None` if `id` is stale.
    pub fn get_mut(&mut self, id: OpId) -> Option<&mut Slot> {
        let i = id.index as usize;
        let slot = self.pages.get_mut(i / PAGE)?.get_mut(i % PAGE)?;
        (slot.gen == id.gen && slot.life != Life::Free).then_some(slot)
    }

    /// Frees a slot; its resources are dropped.
    pub fn release(&mut self, id: OpId) {
        if let Some(slot) = self.get_mut(id) {
            slot.life = Life::Free;
            slot.keep = None;
            slot.queue.clear();
            slot.notify = Notify::Token(0);
            self.free.push(id.index);
            self.live -= 1;
        }
    }

    /// Ids of every live operation (used at shutdown).
    pub fn live_ids(&self) -> Vec<OpId> {
        let mut ids = Vec::new();
        for (p, page) in self.pages.iter().enumerate() {
            for (i, slot) in page.iter().enumerate() {
                if slot.life != Life::Free {
                    ids.push(OpId {
                        index: (p * PAGE + i) as u32,
                        gen: slot.gen,
                    });
                }
            }
        }
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ops and completions are copied on every submission and completion: keep them
    /// small (a sockaddr_storage inside either cost ~120 ns per echoed message).
    #[test]
    fn ops_and_completions_stay_small() {
        assert!(
            std::mem::size_of::<Op>() <= 32,
            "Op is {} bytes",
            std::mem::size_of::<Op>()
        );
        assert!(
            std::mem::size_of::<Completion>() <= 72,
            "Completion is {} bytes",
            std::mem::size_of::<Completion>()
        );
    }

    #[test]
    fn raw_addr_round_trips_ip_addresses() {
        for a in ["127.0.0.1:80", "[::1]:8080", "[fe80::1%2]:9"] {
            let sa: SocketAddr = a.parse().unwrap();
            assert_eq!(RawAddr::from_socket_addr(&sa).to_socket_addr(), Some(sa));
        }
        let long = std::path::PathBuf::from("/".repeat(200));
        assert!(RawAddr::from_unix_path(&long).is_err());
    }

    #[test]
    fn user_data_round_trips_and_slots_reuse_with_new_generations() {
        let id = OpId {
            index: 7,
            gen: 0xdead,
        };
        assert_eq!(OpId::from_user_data(id.to_user_data()), id);
        let mut t = OpTable::new();
        let a = t.insert(Op::Nop, Notify::Token(1), None);
        t.release(a);
        let b = t.insert(Op::Nop, Notify::Token(2), None);
        assert_eq!(a.index, b.index, "slot reused");
        assert_ne!(a.gen, b.gen, "with a new generation");
        assert!(
            t.get_mut(a).is_none(),
            "the stale id no longer reaches the slot"
        );
        assert!(t.get_mut(b).is_some());
        assert_eq!(t.live(), 1);
    }
}
