//! Choosing the backend by trying the real thing.
//!
//! A feature probe (`IORING_REGISTER_PROBE`) says which opcodes exist, not whether *this*
//! process may build *this* ring: a container's seccomp profile answers `EPERM`,
//! `kernel.io_uring_disabled` answers `EPERM`, a low memlock limit answers `ENOMEM`, an
//! older kernel answers `EINVAL` to newer setup flags. So the probe builds the ring that
//! will be used, with its real size and flags, registers the real provided-buffer ring,
//! and does one no-op round trip. Each `EINVAL` moves one rung down the ladder of setup
//! flags; any other refusal, or the last rung failing, means epoll. Every refusal is
//! recorded, so the chosen backend can say why it is not the best one.

use std::io;
use std::time::Duration;

use io_uring::{cqueue, opcode, types, IoUring};

use super::config::DriverConfig;
use super::op::UringEnv;
use super::uring::{Uring, BGID};
use super::waker::DriverWaker;
use crate::buf::BufferPool;

/// One rung of the ladder: a name for logs and a way to set the builder up.
struct Rung {
    flags: &'static [&'static str],
    setup: fn(&mut io_uring::Builder, Option<Duration>),
}

const RUNGS: &[Rung] = &[
    Rung {
        flags: &["SINGLE_ISSUER", "DEFER_TASKRUN"],
        setup: |b, _| {
            b.setup_single_issuer().setup_defer_taskrun();
        },
    },
    Rung {
        flags: &["COOP_TASKRUN", "TASKRUN_FLAG"],
        setup: |b, _| {
            b.setup_coop_taskrun().setup_taskrun_flag();
        },
    },
    Rung {
        flags: &[],
        setup: |_, _| {},
    },
];

const SQPOLL_RUNGS: &[Rung] = &[
    Rung {
        flags: &["SQPOLL", "SINGLE_ISSUER"],
        setup: |b, idle| {
            b.setup_sqpoll(idle.unwrap_or_default().as_millis() as u32)
                .setup_single_issuer();
        },
    },
    Rung {
        flags: &["SQPOLL"],
        setup: |b, idle| {
            b.setup_sqpoll(idle.unwrap_or_default().as_millis() as u32);
        },
    },
];

fn errno_name(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => "EPERM".into(),
        Some(libc::ENOMEM) => "ENOMEM".into(),
        Some(libc::EINVAL) => "EINVAL".into(),
        Some(libc::ENOSYS) => "ENOSYS".into(),
        Some(libc::EACCES) => "EACCES".into(),
        Some(n) => format!("errno {n}"),
        None => e.to_string(),
    }
}

/// Tries each rung; returns the ring, its registered pool and the flags that won. On
/// failure `fallbacks` says why each rung was refused.
pub(crate) fn build_uring(
    cfg: &DriverConfig,
    waker: &DriverWaker,
    fallbacks: &mut Vec<String>,
) -> io::Result<(Box<Uring>, BufferPool, Vec<&'static str>)> {
    let rungs: Vec<&Rung> = match cfg.sqpoll_idle {
        Some(_) => SQPOLL_RUNGS.iter().chain(RUNGS.iter()).collect(),
        None => RUNGS.iter().collect(),
    };
    let mut last_err = io::Error::from_raw_os_error(libc::EINVAL);
    for rung in rungs {
        let name = if rung.flags.is_empty() {
            "no flags".to_string()
        } else {
            rung.flags.join("|")
        };
        match try_rung(cfg, rung) {
            Ok((ring, pool, fixed)) => {
                let mut ring = ring;
                if let Some(note) = fixed {
                    fallbacks.push(note);
                }
                if cfg.pool_incremental && !pool.is_incremental() {
                    fallbacks.push(format!(
                        "buffer ring IOU_PBUF_RING_INC: EINVAL (whole buffers: {} of {} bytes)",
                        pool.count(),
                        pool.buf_size()
                    ));
                }
                let env = UringEnv {
                    bgid: BGID,
                    recv_per_trigger: recv_per_trigger(&pool),
                    send_zc_min: cfg.send_zc_min.unwrap_or(usize::MAX),
                    recv_len_cap: multishot_recv_takes_a_length(&mut ring),
                };
                let uring = Box::new(Uring::new(ring, waker.raw_fd(), env));
                return Ok((uring, pool, rung.flags.to_vec()));
            }
            Err((stage, e)) => {
                fallbacks.push(format!("io_uring {name}: {stage}: {}", errno_name(&e)));
                let retry = e.raw_os_error() == Some(libc::EINVAL) && stage == "io_uring_setup";
                last_err = e;
                if !retry {
                    break;
                }
            }
        }
    }
    Err(last_err)
}

/// One rung: the ring, its pool, and why the pool cannot grow, if the kernel refused
/// the growing pool's ring.
type RungUp = (IoUring, BufferPool, Option<String>);

fn try_rung(cfg: &DriverConfig, rung: &Rung) -> Result<RungUp, (&'static str, io::Error)> {
    let mut builder = IoUring::builder();
    builder.setup_cqsize(cfg.ring_entries.saturating_mul(4));
    (rung.setup)(&mut builder, cfg.sqpoll_idle);
    let ring = builder
        .build(cfg.ring_entries)
        .map_err(|e| ("io_uring_setup", e))?;

    let (pool, fixed) = register_pool(&ring, cfg)?;

    // One round trip, to know that submission and completion really work here.
    let nop = opcode::Nop::new().build().user_data(0x6e6f70);
    // SAFETY: a NOP carries no pointers.
    unsafe { ring.submission_shared().push(&nop) }
        .map_err(|_| ("nop", io::Error::from_raw_os_error(libc::EBUSY)))?;
    ring.submit_and_wait(1).map_err(|e| ("nop round trip", e))?;
    // SAFETY: we are the only user of this ring's completion queue.
    let cqe = unsafe { ring.completion_shared() }.next();
    match cqe {
        Some(c) if c.user_data() == 0x6e6f70 && c.result() == 0 => Ok((ring, pool, fixed)),
        Some(c) => Err((
            "nop round trip",
            io::Error::from_raw_os_error(-c.result().min(-1)),
        )),
        None => Err(("nop round trip", io::Error::from_raw_os_error(libc::EIO))),
    }
}

/// Makes the core's pool and registers its buffer ring: incremental
/// (`IOU_PBUF_RING_INC`, Linux 6.12) if configured and the kernel takes it, else whole
/// buffers of [`PLAIN_BUF_SIZE`], as many as fit in the same memory (small pieces
/// would otherwise each take a large buffer).
///
/// The ring has an entry for every buffer the pool may grow to, and without
/// `CAP_IPC_LOCK` the kernel charges those entries to `RLIMIT_MEMLOCK` (16 bytes each,
/// besides the rings': io_uring needs ~40 KiB of the limit per core). Where the charge
/// is refused (`ENOMEM`), a ring of the pool's own count is tried before io_uring is
/// given up: a pool that cannot grow beats epoll. The second value says so.
fn register_pool(
    ring: &IoUring,
    cfg: &DriverConfig,
) -> Result<(BufferPool, Option<String>), (&'static str, io::Error)> {
    let register = |pool: &BufferPool, flags: u16| {
        let addr = pool.ring_addr().expect("ring pool");
        // SAFETY: the ring memory belongs to `pool`, which the driver keeps (and so
        // keeps the mapping alive) for as long as the ring exists.
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(addr, pool.ring_entries(), BGID, flags)
        }
    };
    // A pool of `count` buffers growing to `max`, registered; on ENOMEM one that cannot
    // grow.
    let make = |count: u16, max: u16, size: usize, incremental: bool| {
        let flags = if incremental {
            types::IOU_PBUF_RING_INC as u16
        } else {
            0
        };
        let pool =
            BufferPool::new_ring(count, max, size, incremental).map_err(|e| ("buffer pool", e))?;
        match register(&pool, flags) {
            Ok(()) => Ok((pool, None)),
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) && pool.capacity() > count => {
                let entries = pool.ring_entries();
                drop(pool);
                let fixed = BufferPool::new_ring(count, count, size, incremental)
                    .map_err(|e| ("buffer pool", e))?;
                register(&fixed, flags).map_err(|e| ("register_buf_ring", e))?;
                let note = format!(
                    "buffer ring of {entries} entries: ENOMEM (RLIMIT_MEMLOCK): the pool \
                     stays at {count} buffers"
                );
                Ok((fixed, Some(note)))
            }
            Err(e) => Err(("register_buf_ring", e)),
        }
    };
    if cfg.pool_incremental {
        match make(
            cfg.pool_buffers,
            cfg.pool_buffers_max,
            cfg.pool_buf_size,
            true,
        ) {
            Ok(made) => return Ok(made),
            // This kernel has no incremental buffers: whole ones below.
            Err(("register_buf_ring", e)) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(other) => return Err(other),
        }
    }
    let (count, max, size) = if cfg.pool_incremental {
        let (count, size) = plain_geometry(cfg.pool_buffers, cfg.pool_buf_size);
        let (max, _) = plain_geometry(cfg.pool_buffers_max, cfg.pool_buf_size);
        (count, max, size)
    } else {
        (cfg.pool_buffers, cfg.pool_buffers_max, cfg.pool_buf_size)
    };
    make(count, max, size, false)
}

/// The buffer size of a pool whose kernel refuses incremental consumption.
pub(crate) const PLAIN_BUF_SIZE: usize = 4096;

/// `count` buffers of `size` bytes as whole buffers of [`PLAIN_BUF_SIZE`] (a power of
/// two of them, at most 32768), or as they are if they are that small already.
fn plain_geometry(count: u16, size: usize) -> (u16, usize) {
    if size <= PLAIN_BUF_SIZE {
        return (count, size);
    }
    let want = (count as usize * size / PLAIN_BUF_SIZE).clamp(1, 32768);
    (want.next_power_of_two().min(32768) as u16, PLAIN_BUF_SIZE)
}

/// The cap on the bytes one multishot receive takes per trigger: two buffers of an
/// incremental pool (a 100 KiB message in one go, a socket with more waiting cannot
/// take the pool), eight whole buffers of a plain one (half the backlog's count).
fn recv_per_trigger(pool: &BufferPool) -> u32 {
    let buffers = if pool.is_incremental() { 2 } else { 8 };
    (pool.buf_size() * buffers).min(u32::MAX as usize) as u32
}

/// The buffer group of the probe's own one-buffer ring.
const PROBE_BGID: u16 = BGID + 1;

/// Whether this kernel takes a length for a multishot receive (a cap on the bytes each
/// trigger takes; newer kernels only, an older one answers `EINVAL`). Tried for real,
/// on a socket pair: one byte received into a pool buffer means yes. The byte goes into
/// a ring of one buffer registered for the probe alone: one taken from the core's
/// incremental pool would shift every later piece of that buffer by a byte (and a
/// message that fitted a buffer would straddle two).
pub(crate) fn multishot_recv_takes_a_length(ring: &mut IoUring) -> bool {
    let Ok(pool) = BufferPool::new_ring(1, 1, 64, false) else {
        return false;
    };
    let addr = pool.ring_addr().expect("ring pool");
    // SAFETY: `pool` owns the ring memory and outlives its registration (unregistered
    // below, before it is dropped).
    if unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(addr, 1, PROBE_BGID, 0)
    }
    .is_err()
    {
        return false;
    }
    let supported = probe_recv_len(ring, &pool);
    if ring.submitter().unregister_buf_ring(PROBE_BGID).is_err() {
        // Still registered: the kernel may write into it; it must never be freed.
        std::mem::forget(pool);
    }
    supported
}

/// [`multishot_recv_takes_a_length`] on a registered ring of one buffer.
fn probe_recv_len(ring: &mut IoUring, pool: &BufferPool) -> bool {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let Ok((a, mut b)) = std::os::unix::net::UnixStream::pair() else {
        return false;
    };
    const PROBE: u64 = 0x6d73686f74;
    let recv = opcode::RecvMulti::new(types::Fd(a.as_raw_fd()), PROBE_BGID)
        .len(pool.buf_size() as u32)
        .build()
        .user_data(PROBE);
    // SAFETY: a pool receive carries no pointer of ours; the pool outlives the ring.
    if unsafe { ring.submission().push(&recv) }.is_err() || b.write_all(b"x").is_err() {
        return false;
    }
    let mut supported = false;
    let mut cancelled = false;
    // Until the receive has ended: its answer, then (if it is still armed) its cancel.
    for _ in 0..8 {
        if ring.submit_and_wait(1).is_err() {
            return false;
        }
        let mut ended = false;
        for c in ring.completion() {
            if c.user_data() != PROBE {
                continue;
            }
            if let Some(bid) = cqueue::buffer_select(c.flags()) {
                drop(pool.provided(bid, c.result(), c.flags()));
            }
            if c.result() == 1 {
                supported = true;
            }
            ended |= !cqueue::more(c.flags());
        }
        if ended {
            return supported;
        }
        if !cancelled {
            cancelled = true;
            let cancel = opcode::AsyncCancel::new(PROBE).build().user_data(0);
            // SAFETY: a cancel carries no pointers.
            if unsafe { ring.submission().push(&cancel) }.is_err() {
                return false;
            }
        }
    }
    supported
}
