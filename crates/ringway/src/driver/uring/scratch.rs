//! Memory the kernel reads or writes while an operation is in flight, by slot index.
//!
//! An SQE points into it (an address, a `msghdr`, a linked timeout's timespec), so it
//! must not move until the final CQE: it lives in fixed-size pages that are never
//! freed while the ring lives, indexed like the driver's op table.

use io_uring::types::Timespec;

use crate::driver::table::PAGE;
use crate::driver::RawAddr;

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
    fn new() -> Self {
        UringScratch {
            addr: RawAddr::empty(),
            msg: crate::driver::op::empty_msghdr(),
            // SAFETY: iovec is plain old data; a null pointer and zero length are valid.
            iov: unsafe { std::mem::zeroed() },
            timeout: Timespec::new(),
            plain_send: false,
        }
    }
}

/// Stable pages of [`UringScratch`], grown on demand.
#[derive(Default)]
pub(crate) struct ScratchPages {
    pages: Vec<Box<[UringScratch]>>,
}

impl ScratchPages {
    /// The scratch of slot `index`.
    #[inline]
    pub(super) fn get(&mut self, index: u32) -> &mut UringScratch {
        let (page, at) = (index as usize / PAGE, index as usize % PAGE);
        if page >= self.pages.len() {
            self.grow(page);
        }
        &mut self.pages[page][at]
    }

    #[cold]
    fn grow(&mut self, page: usize) {
        while self.pages.len() <= page {
            self.pages
                .push((0..PAGE).map(|_| UringScratch::new()).collect());
        }
    }
}
