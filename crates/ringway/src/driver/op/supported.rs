//! Which io_uring opcodes this kernel has, asked once per process.
//!
//! The driver's probe builds the ring and says which backend won; it does not ask about
//! each opcode, and most ops have been in the kernel since the rings the probe accepts.
//! The newer ones (`WAITID` 6.7, `MKDIRAT` 5.15, `STATX`, `RENAMEAT`, `UNLINKAT` 5.11)
//! are asked of the kernel here, through a two-entry ring made once for the question
//! (`IORING_REGISTER_PROBE`); their callers take another road where the answer is no.

use std::sync::OnceLock;

use io_uring::{opcode, IoUring, Probe};

/// The ops a caller may ask about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UringOpcode {
    /// `IORING_OP_WAITID` ([`WaitId`](super::WaitId)).
    WaitId,
    /// `IORING_OP_STATX` ([`Statx`](super::Statx)).
    Statx,
    /// `IORING_OP_MKDIRAT` ([`MkDir`](super::MkDir)).
    MkDirAt,
    /// `IORING_OP_RENAMEAT` ([`Rename`](super::Rename)).
    RenameAt,
    /// `IORING_OP_UNLINKAT` ([`Unlink`](super::Unlink)).
    UnlinkAt,
}

impl UringOpcode {
    fn code(self) -> u8 {
        match self {
            UringOpcode::WaitId => opcode::WaitId::CODE,
            UringOpcode::Statx => opcode::Statx::CODE,
            UringOpcode::MkDirAt => opcode::MkDirAt::CODE,
            UringOpcode::RenameAt => opcode::RenameAt::CODE,
            UringOpcode::UnlinkAt => opcode::UnlinkAt::CODE,
        }
    }
}

/// True if this kernel's io_uring has `op`. False if io_uring cannot be set up at all
/// (then the runtime runs on epoll and never asks).
pub fn supported(op: UringOpcode) -> bool {
    // One bit per `UringOpcode`, in declaration order.
    static KNOWN: OnceLock<u8> = OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        let Ok(ring) = IoUring::new(2) else { return 0 };
        let mut probe = Probe::new();
        if ring.submitter().register_probe(&mut probe).is_err() {
            return 0;
        }
        ALL.iter()
            .enumerate()
            .filter(|(_, op)| probe.is_supported(op.code()))
            .fold(0, |bits, (i, _)| bits | 1 << i)
    });
    let i = ALL
        .iter()
        .position(|o| *o == op)
        .expect("every opcode is listed");
    known & (1 << i) != 0
}

const ALL: [UringOpcode; 5] = [
    UringOpcode::WaitId,
    UringOpcode::Statx,
    UringOpcode::MkDirAt,
    UringOpcode::RenameAt,
    UringOpcode::UnlinkAt,
];
