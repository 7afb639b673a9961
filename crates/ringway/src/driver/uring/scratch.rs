//! Where each operation's kernel-visible memory ([`UringScratch`]) lives, by slot
//! index.
//!
//! An SQE points into it (an address, a `msghdr`, a linked timeout's timespec), so it
//! must not move until the final CQE: it lives in fixed-size pages that are never
//! freed while the ring lives, indexed like the driver's op table.

use crate::driver::op::UringScratch;
use crate::driver::table::PAGE;

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
