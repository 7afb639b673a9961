//! `Fsync`: flushes a file to storage.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Flushes a file's data (and, unless `data_only`, its metadata) to storage. On epoll
/// it runs at submission.
#[derive(Debug, Clone, Copy)]
pub struct Fsync {
    /// The file.
    pub fd: RawFd,
    /// `fdatasync` rather than `fsync`.
    pub data_only: bool,
}

impl OpKind for Fsync {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
}

impl UringOp for Fsync {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        let mut op = opcode::Fsync::new(types::Fd(self.fd));
        if self.data_only {
            op = op.flags(types::FsyncFlags::DATASYNC);
        }
        op.build()
    }
}

impl EpollOp for Fsync {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        // SAFETY: no pointers.
        let r = unsafe {
            if self.data_only {
                libc::fdatasync(self.fd)
            } else {
                libc::fsync(self.fd)
            }
        };
        Attempt::result(super::syscall_result(r as isize))
    }
}
