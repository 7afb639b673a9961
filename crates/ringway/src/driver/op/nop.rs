//! `Nop`: does nothing. The probe's round trip, and a way to wake a ring.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue};

use super::EpollOpState;
use super::{Attempt, EpollOp, OpKind, Readiness, UringOp};
use super::{UringEnv, UringScratch};
use crate::buf::BufferPool;

/// Does nothing; completes with 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nop;

impl OpKind for Nop {
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

impl UringOp for Nop {
    fn sqe(&self, _: &mut UringScratch, _: &UringEnv) -> squeue::Entry {
        opcode::Nop::new().build()
    }
}

impl EpollOp for Nop {
    fn readiness(&self) -> Readiness {
        Readiness::None
    }
    unsafe fn attempt(&self, _: &mut EpollOpState, _: &BufferPool) -> Attempt {
        Attempt::result(0)
    }
}
