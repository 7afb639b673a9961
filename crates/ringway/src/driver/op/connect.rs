//! `Connect`: connects a socket.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;
use crate::driver::addr::RawAddr;

/// Connects a socket to `addr`.
#[derive(Debug, Clone, Copy)]
pub struct Connect {
    /// The socket.
    pub fd: RawFd,
    /// Where to. Read only while the op is submitted (the driver copies it into the
    /// operation's own memory), so it need not outlive the call that submits.
    pub addr: *const RawAddr,
}

impl OpKind for Connect {
    fn fd(&self) -> Option<RawFd> {
        Some(self.fd)
    }
    fn input_addr(&self) -> Option<*const RawAddr> {
        Some(self.addr)
    }
}

impl UringOp for Connect {
    fn sqe(&self, scratch: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        let (addr, len) = scratch.addr.as_ptr();
        opcode::Connect::new(types::Fd(self.fd), addr, len).build()
    }
}

impl EpollOp for Connect {
    fn readiness(&self) -> Readiness {
        Readiness::Write(self.fd)
    }
    unsafe fn attempt(&self, state: &mut EpollOpState, _: &BufferPool) -> Attempt {
        if !state.connecting {
            let (addr, len) = state.addr().as_ptr();
            // SAFETY: the address lives in `state` for the call.
            let r = super::syscall_result(unsafe { libc::connect(self.fd, addr, len) } as isize);
            if r == -libc::EINPROGRESS || r == -libc::EAGAIN {
                // Under way: writability will say it is over.
                state.connecting = true;
                return Attempt::Blocked;
            }
            return Attempt::result(r);
        }
        let mut err: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `err` and `len` are live for the call, `len` holds err's size.
        let r = unsafe {
            libc::getsockopt(
                self.fd,
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut err as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Attempt::result(super::syscall_result(r as isize));
        }
        Attempt::result(-err)
    }
}
