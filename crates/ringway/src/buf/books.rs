//! A pool's books: per buffer, what keeps it out of the ring and how far it is filled.
//!
//! Every received piece is cut here and every dropped piece released here, so the two
//! are kept to a few instructions (a 64-byte echo pays them once per message): the two
//! counts of a buffer sit side by side in one entry (one bounds check, one cache line),
//! and the pieces alive are not counted apart: they are what the references add up to
//! beyond the writers' (see [`Books::in_use`]).

use std::cell::Cell;

/// Per buffer: how many references keep it out of the ring (pieces alive, plus one
/// while it may still be written into), and how many bytes have been handed out of it
/// since it was last given to the kernel (or the epoll filler).
pub(super) struct Books {
    bufs: Box<[Account]>,
    /// Buffers that can take bytes now: in the ring (the one the kernel is filling
    /// included), or for epoll free or open. Each holds its writer's reference, and no
    /// other buffer does.
    available: Cell<usize>,
    /// The least `available` has been (for `PoolStats::peak_pinned`).
    lowest: Cell<usize>,
}

/// One buffer's entry in the [`Books`].
struct Account {
    refs: Cell<u32>,
    filled: Cell<u32>,
}

impl Books {
    /// Books for `cap` buffers of which the first `count` are available and empty; the
    /// rest are not in the pool yet (no reference, not available) until
    /// [`grow`](Self::grow) adds them.
    pub(super) fn new(count: u16, cap: u16) -> Books {
        debug_assert!(count <= cap);
        Books {
            bufs: (0..cap)
                .map(|bid| Account {
                    refs: Cell::new(u32::from(bid < count)),
                    filled: Cell::new(0),
                })
                .collect(),
            available: Cell::new(count as usize),
            lowest: Cell::new(count as usize),
        }
    }

    /// Buffers `from..to`, not in the pool until now, are available and empty. The
    /// least availability seen moves up with them: what was pinned at most stays what
    /// it was.
    pub(super) fn grow(&self, from: u16, to: u16) {
        for bid in from..to {
            self.renew(bid);
        }
        let added = usize::from(to - from);
        self.lowest.set(self.lowest.get() + added);
    }

    /// Records a piece of `len` bytes cut from buffer `bid`; returns its offset.
    /// `open`: the buffer may still take more bytes (its writer keeps its reference).
    #[inline(always)]
    pub(super) fn cut(&self, bid: u16, len: u32, open: bool) -> u32 {
        let a = &self.bufs[bid as usize];
        let off = a.filled.get();
        a.filled.set(off + len);
        if open {
            a.refs.set(a.refs.get() + 1);
        } else {
            // The writer's reference becomes the piece's: the count does not change.
            self.take_available();
        }
        off
    }

    /// How many bytes of buffer `bid` have been handed out in its current life.
    #[inline]
    pub(super) fn filled(&self, bid: u16) -> u32 {
        self.bufs[bid as usize].filled.get()
    }

    /// One buffer fewer can take bytes (it is full or closed, and pinned by its pieces).
    #[inline]
    pub(super) fn take_available(&self) {
        let left = self.available.get() - 1;
        self.available.set(left);
        if left < self.lowest.get() {
            self.lowest.set(left);
        }
    }

    /// Drops one reference of buffer `bid`; true if that was the last: the buffer can
    /// go back, and the caller [`renew`](Self::renew)s it. Nothing else is done here, so
    /// that what follows a piece's drop is out of its way.
    #[inline(always)]
    pub(super) fn release(&self, bid: u16) -> bool {
        let a = &self.bufs[bid as usize];
        let left = a.refs.get() - 1;
        a.refs.set(left);
        left == 0
    }

    /// [`release`](Self::release) without checking `bid`: a piece's drop, whose buffer
    /// was checked when the piece was cut.
    ///
    /// # Safety
    ///
    /// `bid` must be below the count these books were made for.
    #[inline(always)]
    pub(super) unsafe fn release_unchecked(&self, bid: u16) -> bool {
        debug_assert!((bid as usize) < self.bufs.len());
        // SAFETY: the caller promises `bid` is in range.
        let a = unsafe { self.bufs.get_unchecked(bid as usize) };
        let left = a.refs.get() - 1;
        a.refs.set(left);
        left == 0
    }

    /// Buffer `bid`, whose last reference went, is available again: with its writer's
    /// reference, empty.
    #[inline]
    pub(super) fn renew(&self, bid: u16) {
        let a = &self.bufs[bid as usize];
        debug_assert_eq!(a.refs.get(), 0);
        a.refs.set(1);
        a.filled.set(0);
        self.available.set(self.available.get() + 1);
    }

    /// Buffers that can take bytes now.
    #[inline]
    pub(super) fn available(&self) -> usize {
        self.available.get()
    }

    /// The least [`available`](Self::available) has been since the books were made or
    /// [`reset_lowest`](Self::reset_lowest).
    pub(super) fn lowest(&self) -> usize {
        self.lowest.get()
    }

    /// Starts [`lowest`](Self::lowest) again from what is available now.
    pub(super) fn reset_lowest(&self) {
        self.lowest.set(self.available.get());
    }

    /// Pieces alive: every reference is a piece's or an available buffer's writer's
    /// (a buffer taken out of the available ones hands its writer's reference to its
    /// last piece, and gets it back when it returns). Counted here rather than on every
    /// cut and drop: only statistics ask.
    pub(super) fn in_use(&self) -> usize {
        let refs: usize = self.bufs.iter().map(|a| a.refs.get() as usize).sum();
        refs.saturating_sub(self.available.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_alive_are_the_references_beyond_the_writers() {
        let books = Books::new(3, 3);
        assert_eq!(books.in_use(), 0);
        assert_eq!((books.cut(0, 10, true), books.cut(0, 5, true)), (0, 10));
        assert_eq!(books.in_use(), 2);
        // Closed by its third piece: the writer's reference is that piece's.
        assert_eq!(books.cut(0, 7, false), 15);
        assert_eq!(
            (books.in_use(), books.available(), books.lowest()),
            (3, 2, 2)
        );
        assert!(!books.release(0) && !books.release(0));
        assert_eq!(books.in_use(), 1);
        assert!(books.release(0), "the last piece gives the buffer back");
        books.renew(0);
        assert_eq!(
            (books.in_use(), books.available(), books.filled(0)),
            (0, 3, 0)
        );
        // A buffer closed with no piece (epoll's little room left, a plain ring's end
        // of stream): its writer's reference is let go at once.
        books.take_available();
        assert!(books.release(1));
        books.renew(1);
        assert_eq!(
            (books.in_use(), books.available(), books.lowest()),
            (0, 3, 2)
        );
        books.reset_lowest();
        assert_eq!(books.lowest(), 3);
    }
}
