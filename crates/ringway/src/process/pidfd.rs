//! A child's pidfd: waiting for it through the driver, reading its status, signalling
//! it, and reaping it when nobody waits any more.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::driver::op::{self as raw, supported, UringOpcode};
use crate::driver::{Completion, Op};
use crate::io::ops::ResultOnly;
use crate::io::{OpFuture, Operation, StreamFd};

/// Tests set this to wait with a poll on the pidfd even where the ring has `WAITID`, the
/// road older kernels take.
static FORCE_POLL_WAIT: AtomicBool = AtomicBool::new(false);

/// A pidfd of a child of this process, not yet reaped.
#[derive(Debug)]
pub(super) struct PidFd {
    fd: StreamFd,
}

impl PidFd {
    /// `pidfd_open(pid)`. The pid cannot have been reused: it is our child and nobody
    /// has reaped it (ringway installs no SIGCHLD handler and never waits by pid).
    pub(super) fn open(pid: u32) -> io::Result<PidFd> {
        // SAFETY: pidfd_open takes no pointers; the result is checked before it is
        // owned.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own. Kept blocking: on a non-blocking pidfd, the
        // kernel's waitid does not wait (io_uring's included).
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        Ok(PidFd {
            fd: StreamFd::as_is(fd),
        })
    }

    fn raw(&self) -> RawFd {
        self.fd.fd()
    }

    /// Sends `signum` to the child (`pidfd_send_signal`: no pid, so no race with reuse).
    pub(super) fn send_signal(&self, signum: i32) -> io::Result<()> {
        // SAFETY: no pointers (a null siginfo means "as kill(2) would").
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.raw(),
                signum,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reaps the child if it has exited; `None` if it still runs. Never blocks.
    pub(super) fn try_reap(&self) -> io::Result<Option<ExitStatus>> {
        reap(self.raw(), libc::WEXITED | libc::WNOHANG)
    }

    /// Waits for the child to exit and reaps it: `IORING_OP_WAITID` where the ring has
    /// it, otherwise readiness of the pidfd (it becomes readable when the child exits)
    /// and a `waitid` that then cannot block.
    pub(super) async fn wait(&self) -> io::Result<ExitStatus> {
        let uring = crate::runtime::current_backend().is_uring();
        if uring && supported(UringOpcode::WaitId) && !FORCE_POLL_WAIT.load(Ordering::Relaxed) {
            return OpFuture::new(WaitOp {
                pidfd: self.raw(),
                info: Box::new(zeroed_info()),
            })
            .await;
        }
        if uring {
            loop {
                let poll = raw::Poll {
                    fd: self.raw(),
                    events: libc::POLLIN as u32,
                    multishot: false,
                };
                OpFuture::new(ResultOnly(poll.into())).await?;
                if let Some(st) = self.try_reap()? {
                    return Ok(st);
                }
            }
        }
        // epoll: the op itself waits for readability, then reaps without blocking.
        OpFuture::new(WaitOp {
            pidfd: self.raw(),
            info: Box::new(zeroed_info()),
        })
        .await
    }

    /// Gives the pidfd up (the driver forgets it first).
    pub(super) fn into_owned(self) -> OwnedFd {
        self.fd.into_owned()
    }
}

fn zeroed_info() -> libc::siginfo_t {
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    unsafe { std::mem::zeroed() }
}

/// `waitid(P_PIDFD, fd, options)`: the status, or `None` after a `WNOHANG` that found
/// the child running.
fn reap(fd: RawFd, options: i32) -> io::Result<Option<ExitStatus>> {
    let mut info = zeroed_info();
    loop {
        // SAFETY: `info` is live and writable for the call.
        let r = unsafe { libc::waitid(libc::P_PIDFD, fd as libc::id_t, &mut info, options) };
        if r == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok((info.si_signo != 0).then(|| exit_status(&info)))
}

/// The status `waitid` wrote, as std's `ExitStatus` (built from the wait-status word
/// that `waitpid` would have given).
pub(super) fn exit_status(info: &libc::siginfo_t) -> ExitStatus {
    // SAFETY: for a SIGCHLD record (what waitid writes) `si_status` is the field the
    // kernel filled.
    let status = unsafe { info.si_status() };
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_KILLED => status & 0x7f,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        // Stopped or continued: waitid with WEXITED only reports exits.
        _ => (status & 0xff) << 8,
    };
    ExitStatus::from_raw(raw)
}

/// The `WaitId` op with the status record it owns (boxed: its address goes to the
/// kernel and must not move with the future).
struct WaitOp {
    pidfd: RawFd,
    info: Box<libc::siginfo_t>,
}

impl Operation for WaitOp {
    type Output = io::Result<ExitStatus>;
    fn op(&mut self) -> Op {
        raw::WaitId {
            pidfd: self.pidfd,
            info: &mut *self.info,
        }
        .into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        c.io_result()?;
        Ok(exit_status(&self.info))
    }
}

/// Reaps a child whose `Child` was dropped before it exited: on the current core if
/// there is one (a task waiting through the driver), else, or if that task is dropped
/// first (its runtime shut down), on the blocking pool. No child is left a zombie.
pub(super) fn reap_in_background(pidfd: PidFd) {
    if crate::Handle::try_current().is_some() {
        let orphan = Orphan(Some(pidfd));
        crate::spawn(async move {
            let mut orphan = orphan;
            if let Some(p) = &orphan.0 {
                let _ = p.wait().await;
            }
            orphan.0 = None;
        })
        .detach();
    } else {
        reap_blocking(pidfd);
    }
}

/// A child to reap; reaped on the blocking pool if dropped still holding it.
struct Orphan(Option<PidFd>);

impl Drop for Orphan {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            reap_blocking(p);
        }
    }
}

fn reap_blocking(pidfd: PidFd) {
    let fd = pidfd.into_owned();
    drop(crate::spawn_blocking(move || {
        let _ = reap(fd.as_raw_fd(), libc::WEXITED);
    }));
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;
    use crate::process::Command;

    /// The road of kernels before 6.7 on io_uring: a poll of the pidfd, then `waitid`.
    #[test]
    fn waiting_by_poll_where_the_ring_has_no_waitid() {
        let rt = crate::Runtime::builder()
            .worker_threads(1)
            .backend(crate::Backend::Uring)
            .build()
            .unwrap();
        FORCE_POLL_WAIT.store(true, Ordering::Relaxed);
        let (code, killed) = rt.block_on(async {
            let code = Command::new("sh").args(["-c", "exit 7"]).status().await;
            let mut child = Command::new("sleep").arg("30").spawn().unwrap();
            child
                .send_signal(crate::signal::SignalKind::terminate())
                .unwrap();
            (code, child.wait().await)
        });
        FORCE_POLL_WAIT.store(false, Ordering::Relaxed);
        assert_eq!(code.unwrap().code(), Some(7));
        assert_eq!(killed.unwrap().signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn statuses_decode_as_waitpid_would_give_them() {
        let mut info = zeroed_info();
        info.si_signo = libc::SIGCHLD;
        info.si_code = libc::CLD_EXITED;
        // SAFETY: writes the `si_status` field of a SIGCHLD record, where the kernel
        // would (the libc crate has a reader only).
        unsafe { set_status(&mut info, 42) };
        assert_eq!(exit_status(&info).code(), Some(42));
        info.si_code = libc::CLD_KILLED;
        // SAFETY: as above.
        unsafe { set_status(&mut info, libc::SIGKILL) };
        assert_eq!(exit_status(&info).signal(), Some(libc::SIGKILL));
        info.si_code = libc::CLD_DUMPED;
        assert!(exit_status(&info).core_dumped());
    }

    /// Writes `si_status`, found by reading back through the libc accessor.
    unsafe fn set_status(info: &mut libc::siginfo_t, status: i32) {
        let base = (info as *mut libc::siginfo_t).cast::<i32>();
        let words = std::mem::size_of::<libc::siginfo_t>() / 4;
        for i in 3..words {
            // SAFETY: within the struct, an i32-aligned word (the caller's promise).
            unsafe {
                let old = *base.add(i);
                *base.add(i) = 0x5a5a_5a5a;
                if info.si_status() == 0x5a5a_5a5a {
                    *base.add(i) = status;
                    return;
                }
                *base.add(i) = old;
            }
        }
        panic!("si_status not found");
    }
}
