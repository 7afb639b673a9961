//! A first-in first-out queue that keeps its oldest item inline and spills the rest to
//! a `VecDeque`.
//!
//! A stream's receive queue holds one completion at a time almost always (the task
//! takes it in the same turn), and an idle connection holds none. A plain `VecDeque`
//! allocates at its first push and keeps that allocation for the life of the
//! connection, idle or not; this one allocates only when two items wait at once.

use std::collections::VecDeque;

/// A FIFO queue whose oldest item lives inline (see the module documentation).
#[derive(Debug)]
pub(crate) struct FirstInline<T> {
    /// The oldest item, when there is one and it is not in `rest`: if `first` is
    /// `None`, `rest` is empty or its front is the oldest.
    first: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for FirstInline<T> {
    fn default() -> Self {
        FirstInline {
            first: None,
            rest: VecDeque::new(),
        }
    }
}

impl<T> FirstInline<T> {
    /// Appends `item` as the newest.
    #[inline]
    pub(crate) fn push_back(&mut self, item: T) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(item);
        } else {
            self.rest.push_back(item);
        }
    }

    /// Takes the oldest item.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        self.first.take().or_else(|| self.rest.pop_front())
    }

    /// Takes the oldest item if it is kept inline and `wanted` says yes; `None`
    /// otherwise (nothing taken).
    #[inline(always)]
    pub(crate) fn take_first_if(&mut self, wanted: impl FnOnce(&T) -> bool) -> Option<T> {
        match &self.first {
            Some(item) if wanted(item) => self.first.take(),
            _ => None,
        }
    }

    /// The newest item.
    #[inline]
    pub(crate) fn back_mut(&mut self) -> Option<&mut T> {
        match self.rest.back_mut() {
            Some(last) => Some(last),
            None => self.first.as_mut(),
        }
    }

    /// Nothing waits.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    /// How many items wait.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.first.is_some() as usize + self.rest.len()
    }

    /// Every item, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.first.iter().chain(self.rest.iter())
    }

    /// Every item, oldest first.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.first.iter_mut().chain(self.rest.iter_mut())
    }
}

impl<T> Extend<T> for FirstInline<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.push_back(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FirstInline;
    use std::collections::VecDeque;

    /// Every sequence of pushes and pops gives what a `VecDeque` gives.
    #[test]
    fn behaves_as_a_vecdeque() {
        // Operation sequences from a small LCG: push-heavy, pop-heavy and balanced.
        for seed in 0..200u64 {
            let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let (mut q, mut model) = (FirstInline::default(), VecDeque::new());
            for n in 0..300u32 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let push_odds = [3, 5, 7][(seed % 3) as usize];
                let pick = (x >> 33) % 10;
                if pick < push_odds {
                    q.push_back(n);
                    model.push_back(n);
                } else {
                    assert_eq!(q.pop_front(), model.pop_front());
                }
                assert_eq!(q.len(), model.len());
                assert_eq!(q.back_mut().copied(), model.back().copied());
                let all: Vec<u32> = q.iter_mut().map(|v| *v).collect();
                assert_eq!(all, model.iter().copied().collect::<Vec<_>>());
            }
        }
    }

    /// One item at a time never allocates the spill queue.
    #[test]
    fn one_at_a_time_stays_inline() {
        let mut q = FirstInline::default();
        for n in 0..100 {
            q.push_back(n);
            assert_eq!(q.pop_front(), Some(n));
        }
        assert_eq!(q.rest.capacity(), 0);
    }
}
