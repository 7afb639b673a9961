//! The epoll syscalls, one `unsafe` each, errors as `io::Error`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Calls a libc function; -1 becomes the `io::Error` of errno.
macro_rules! syscall {
    ($fn:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: each caller passes pointers that are valid for the call (see there).
        let r = unsafe { libc::$fn($($arg),*) };
        if r == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }};
}

/// A new epoll instance.
pub(super) fn create() -> io::Result<OwnedFd> {
    let fd = syscall!(epoll_create1(libc::EPOLL_CLOEXEC))?;
    // SAFETY: a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ctl(epfd: &OwnedFd, op: i32, fd: RawFd, events: i32, key: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: events as u32,
        u64: key,
    };
    // `ev` lives for the call.
    syscall!(epoll_ctl(epfd.as_raw_fd(), op, fd, &mut ev)).map(drop)
}

/// Registers `fd` for `events`, tagged with `key`.
pub(super) fn add(epfd: &OwnedFd, fd: RawFd, events: i32, key: u64) -> io::Result<()> {
    ctl(epfd, libc::EPOLL_CTL_ADD, fd, events, key)
}

/// Changes the registration of `fd`.
pub(super) fn modify(epfd: &OwnedFd, fd: RawFd, events: i32, key: u64) -> io::Result<()> {
    ctl(epfd, libc::EPOLL_CTL_MOD, fd, events, key)
}

/// Removes the registration of `fd`.
pub(super) fn delete(epfd: &OwnedFd, fd: RawFd) -> io::Result<()> {
    // A null event is allowed for DEL.
    syscall!(epoll_ctl(
        epfd.as_raw_fd(),
        libc::EPOLL_CTL_DEL,
        fd,
        std::ptr::null_mut()
    ))
    .map(drop)
}

/// Waits for events, at most `timeout` (`None`: until one comes); returns how many of
/// `events` were filled. An interrupted wait returns 0.
pub(super) fn wait(
    epfd: &OwnedFd,
    events: &mut [libc::epoll_event],
    timeout: Option<Duration>,
) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        // Round up: waking early would only spin.
        Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32,
    };
    // `events` is valid for `len` entries.
    match syscall!(epoll_wait(
        epfd.as_raw_fd(),
        events.as_mut_ptr(),
        events.len() as i32,
        ms
    )) {
        Ok(n) => Ok(n as usize),
        Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Resets an eventfd's counter (the driver's waker).
pub(super) fn drain_eventfd(fd: RawFd) {
    let mut buf = 0u64;
    // 8 bytes into a live u64. EAGAIN (already drained) is fine.
    let _ = syscall!(read(fd, (&mut buf as *mut u64).cast(), 8));
}
