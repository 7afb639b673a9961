//! What the epoll backend knows about one fd: whether each direction is believed ready,
//! whether the peer closed it, and the operations parked on each direction, in order.

use std::collections::VecDeque;

use crate::driver::completion::OpId;

/// One direction of an fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    Read,
    Write,
}

pub(super) struct FdState {
    pub registered: bool,
    readable: bool,
    writable: bool,
    /// The peer closed its side (RDHUP/HUP/ERR was reported). Sticky: the edge that told
    /// us is gone, so a short read must not clear `readable` once this is set, or the
    /// read that would return end of stream parks forever.
    read_closed: bool,
    /// HUP/ERR: writes fail at once from now on.
    write_closed: bool,
    readers: VecDeque<OpId>,
    writers: VecDeque<OpId>,
}

impl FdState {
    /// A new fd is presumed ready both ways: the first try finds out.
    pub(super) fn new() -> Self {
        FdState {
            registered: false,
            readable: true,
            writable: true,
            read_closed: false,
            write_closed: false,
            readers: VecDeque::new(),
            writers: VecDeque::new(),
        }
    }

    pub(super) fn queue(&mut self, dir: Direction) -> &mut VecDeque<OpId> {
        match dir {
            Direction::Read => &mut self.readers,
            Direction::Write => &mut self.writers,
        }
    }

    pub(super) fn ready(&self, dir: Direction) -> bool {
        match dir {
            Direction::Read => self.readable,
            Direction::Write => self.writable,
        }
    }

    /// Sets a direction's readiness; a closed direction stays ready.
    pub(super) fn set_ready(&mut self, dir: Direction, ready: bool) {
        match dir {
            Direction::Read => self.readable = ready || self.read_closed,
            Direction::Write => self.writable = ready || self.write_closed,
        }
    }

    /// Takes in an edge from `epoll_wait`; returns which directions became ready.
    pub(super) fn on_event(&mut self, bits: i32) -> (bool, bool) {
        let closed = libc::EPOLLHUP | libc::EPOLLERR;
        if bits & (libc::EPOLLRDHUP | closed) != 0 {
            self.read_closed = true;
        }
        if bits & closed != 0 {
            self.write_closed = true;
        }
        let readable = bits & (libc::EPOLLIN | libc::EPOLLRDHUP | closed) != 0;
        let writable = bits & (libc::EPOLLOUT | closed) != 0;
        if readable {
            self.set_ready(Direction::Read, true);
        }
        if writable {
            self.set_ready(Direction::Write, true);
        }
        (readable, writable)
    }

    /// Takes `id` out of whichever queue holds it.
    pub(super) fn forget(&mut self, id: OpId) {
        self.readers.retain(|x| *x != id);
        self.writers.retain(|x| *x != id);
    }

    /// Every parked operation, readers first.
    pub(super) fn into_parked(self) -> impl Iterator<Item = OpId> {
        self.readers.into_iter().chain(self.writers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_direction_stays_ready_after_a_short_read() {
        let mut st = FdState::new();
        st.set_ready(Direction::Read, false);
        assert!(!st.ready(Direction::Read));
        assert_eq!(st.on_event(libc::EPOLLIN | libc::EPOLLRDHUP), (true, false));
        st.set_ready(Direction::Read, false);
        assert!(
            st.ready(Direction::Read),
            "the end of stream must still be read"
        );
        assert_eq!(st.on_event(libc::EPOLLOUT), (false, true));
    }
}
