//! What an op's io_uring side is given besides the op itself: the ring's settings
//! ([`UringEnv`]) and the op's kernel-visible memory ([`UringScratch`]), which the
//! backend keeps in stable pages by slot index (`uring::ScratchPages`).

use io_uring::types::Timespec;

use crate::driver::addr::RawAddr;

/// What every op's SQE may depend on besides the op: the ring's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UringEnv {
    /// The provided-buffer ring's group id.
    pub bgid: u16,
    /// The most bytes a multishot receive takes per trigger (when the kernel takes a
    /// cap: `recv_len_cap`).
    pub recv_per_trigger: u32,
    /// Sends of at least this many bytes use `SEND_ZC` (`usize::MAX`: never).
    pub send_zc_min: usize,
    /// The kernel takes a per-trigger length for a multishot receive (probed).
    pub recv_len_cap: bool,
}

/// One operation's kernel-visible memory (io_uring only).
pub(crate) struct UringScratch {
    /// An address the op reads (`Connect`, `SendTo`: copied at submission) or the
    /// kernel writes (`Accept`, `RecvFrom`).
    pub addr: RawAddr,
    pub msg: libc::msghdr,
    pub iov: libc::iovec,
    /// A linked timeout's duration.
    pub timeout: Timespec,
    /// The socket refused `SEND_ZC`: send this op's bytes the ordinary way.
    pub plain_send: bool,
}

impl UringScratch {
    pub(crate) fn new() -> Self {
        UringScratch {
            addr: RawAddr::empty(),
            msg: super::empty_msghdr(),
            // SAFETY: iovec is plain old data; a null pointer and zero length are valid.
            iov: unsafe { std::mem::zeroed() },
            timeout: Timespec::new(),
            plain_send: false,
        }
    }
}
