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

use io_uring::{opcode, IoUring};

use super::uring::{Uring, UringEnv, BGID};
use super::{DriverConfig, DriverWaker};
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
            Ok((ring, pool)) => {
                let env = UringEnv {
                    bgid: BGID,
                    buf_size: cfg.pool_buf_size as u32,
                    send_zc_min: cfg.send_zc_min.unwrap_or(usize::MAX),
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

fn try_rung(
    cfg: &DriverConfig,
    rung: &Rung,
) -> Result<(IoUring, BufferPool), (&'static str, io::Error)> {
    let mut builder = IoUring::builder();
    builder.setup_cqsize(cfg.ring_entries.saturating_mul(4));
    (rung.setup)(&mut builder, cfg.sqpoll_idle);
    let ring = builder
        .build(cfg.ring_entries)
        .map_err(|e| ("io_uring_setup", e))?;

    let pool = BufferPool::new_ring(cfg.pool_buffers, cfg.pool_buf_size)
        .map_err(|e| ("buffer pool", e))?;
    let addr = pool.ring_addr().expect("ring pool");
    // SAFETY: the ring memory belongs to `pool`, which the driver keeps (and so keeps the
    // mapping alive) for as long as the ring exists.
    unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(addr, pool.count(), BGID, 0)
    }
    .map_err(|e| ("register_buf_ring", e))?;

    // One round trip, to know that submission and completion really work here.
    let nop = opcode::Nop::new().build().user_data(0x6e6f70);
    // SAFETY: a NOP carries no pointers.
    unsafe { ring.submission_shared().push(&nop) }
        .map_err(|_| ("nop", io::Error::from_raw_os_error(libc::EBUSY)))?;
    ring.submit_and_wait(1).map_err(|e| ("nop round trip", e))?;
    // SAFETY: we are the only user of this ring's completion queue.
    let cqe = unsafe { ring.completion_shared() }.next();
    match cqe {
        Some(c) if c.user_data() == 0x6e6f70 && c.result() == 0 => Ok((ring, pool)),
        Some(c) => Err((
            "nop round trip",
            io::Error::from_raw_os_error(-c.result().min(-1)),
        )),
        None => Err(("nop round trip", io::Error::from_raw_os_error(libc::EIO))),
    }
}
