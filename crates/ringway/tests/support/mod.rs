//! Helpers shared by the integration suites.

#![allow(dead_code)] // each suite uses a part

use std::io;

/// Counts, in the kernel, how often this thread enters one syscall: a `perf_event_open`
/// counter on the `syscalls:sys_enter_<name>` tracepoint, for the calling thread only.
/// What the driver says about itself is not evidence; this is.
pub(crate) struct SyscallCounter {
    fd: std::os::fd::OwnedFd,
    name: &'static str,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_EVENT_IOC_RESET: libc::c_ulong = 0x2403;

impl SyscallCounter {
    /// A counter for `name` (e.g. `io_uring_enter`), stopped and at zero.
    pub(crate) fn new(name: &'static str) -> io::Result<Self> {
        Self::tracepoint(
            name,
            &format!("/sys/kernel/tracing/events/syscalls/sys_enter_{name}/id"),
        )
    }

    /// A counter for the kernel's tracepoint `category:event` (e.g.
    /// `io_uring:io_uring_submit_req`: every SQE the kernel takes from this thread),
    /// stopped and at zero.
    pub(crate) fn event(category: &str, event: &'static str) -> io::Result<Self> {
        Self::tracepoint(
            event,
            &format!("/sys/kernel/tracing/events/{category}/{event}/id"),
        )
    }

    fn tracepoint(name: &'static str, path: &str) -> io::Result<Self> {
        let id: u64 = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e} (tracefs needed)")))?
            .trim()
            .parse()
            .map_err(io::Error::other)?;
        // struct perf_event_attr (128 bytes, the kernel accepts this size): type, size,
        // config; flags bit 0 = disabled. Everything else zero: count only.
        let mut attr = [0u8; 128];
        attr[0..4].copy_from_slice(&PERF_TYPE_TRACEPOINT.to_ne_bytes());
        attr[4..8].copy_from_slice(&128u32.to_ne_bytes());
        attr[8..16].copy_from_slice(&id.to_ne_bytes());
        attr[40..48].copy_from_slice(&1u64.to_ne_bytes());
        // SAFETY: `attr` is a live, correctly sized perf_event_attr for the call; pid 0
        // and cpu -1 count the calling thread on any CPU.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr.as_ptr(),
                0,
                -1,
                -1,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("perf_event_open on {name}: {e} (needs root or perf_event_paranoid <= 1)"),
            ));
        }
        // SAFETY: a fresh fd that nothing else owns.
        let fd =
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
        Ok(SyscallCounter { fd, name })
    }

    fn ioctl(&self, request: libc::c_ulong) {
        use std::os::fd::AsRawFd;
        // SAFETY: a perf ioctl without argument on our own perf fd.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), request, 0) };
        assert_eq!(
            r,
            0,
            "perf ioctl on {}: {}",
            self.name,
            io::Error::last_os_error()
        );
    }

    /// Starts counting from zero.
    pub(crate) fn start(&self) {
        self.ioctl(PERF_EVENT_IOC_RESET);
        self.ioctl(PERF_EVENT_IOC_ENABLE);
    }

    /// Stops counting and returns the count.
    pub(crate) fn stop(&self) -> u64 {
        use std::io::Read;
        self.ioctl(PERF_EVENT_IOC_DISABLE);
        let mut buf = [0u8; 8];
        std::fs::File::from(self.fd.try_clone().expect("dup perf fd"))
            .read_exact(&mut buf)
            .expect("read perf counter");
        u64::from_ne_bytes(buf)
    }
}
