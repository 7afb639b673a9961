//! `Statx`: a file's metadata by path.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Writes the metadata of `path` (relative to the working directory) into `*buf`
/// (`statx(AT_FDCWD, path, flags, STATX_BASIC_STATS | STATX_BTIME, buf)`); completes
/// with 0. `flags` is `AT_SYMLINK_NOFOLLOW` for a link's own metadata, else 0. On epoll
/// it runs at submission (`ringway::fs` sends path operations to the blocking pool
/// there instead).
#[derive(Debug, Clone, Copy)]
pub struct Statx {
    /// A NUL-terminated path, readable until the final completion.
    pub path: *const libc::c_char,
    /// Where the kernel writes: writable until the final completion.
    pub buf: *mut libc::statx,
    /// `AT_*` flags.
    pub flags: i32,
}

/// What `Statx` asks for.
const MASK: u32 = libc::STATX_BASIC_STATS | libc::STATX_BTIME;

impl OpKind for Statx {
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

impl UringOp for Statx {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Statx::new(types::Fd(libc::AT_FDCWD), self.path, self.buf.cast())
            .flags(self.flags)
            .mask(MASK)
            .build()
    }
}

impl EpollOp for Statx {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: the caller's promise: `path` is a NUL-terminated string and `buf` is
        // writable.
        let r = unsafe { libc::statx(libc::AT_FDCWD, self.path, self.flags, MASK, self.buf) };
        Attempt::result(super::syscall_result(r as isize))
    }
}
