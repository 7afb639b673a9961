//! The connection's input: bytes received but not yet consumed.
//!
//! A received pool buffer is parsed in place while it is the only input; when something
//! is left over (a request straddling two receives), the rest is copied into a buffer
//! lent by the core's pool and the pool buffer goes back to the ring at once. Both go
//! back as soon as everything is consumed, so an idle connection holds neither.

use ringway::buf::PoolBuf;

use crate::buffers::PooledBuf;

/// Unconsumed input of one connection.
#[derive(Debug, Default)]
pub(crate) struct Input {
    own: Option<PooledBuf>,
    pos: usize,
    pool: Option<PoolBuf>,
    ppos: usize,
}

impl Input {
    /// The unconsumed bytes, contiguous.
    pub(crate) fn bytes(&self) -> &[u8] {
        match (&self.pool, &self.own) {
            (Some(p), _) => &p[self.ppos..],
            (None, Some(o)) => &o[self.pos..],
            (None, None) => &[],
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// Marks `n` bytes consumed; a buffer consumed to its end goes back at once.
    pub(crate) fn consume(&mut self, n: usize) {
        if let Some(p) = &self.pool {
            self.ppos += n;
            debug_assert!(self.ppos <= p.len());
            if self.ppos >= p.len() {
                self.pool = None;
                self.ppos = 0;
            }
        } else {
            self.consume_own(n);
        }
    }

    /// [`consume`](Self::consume) from the own buffer (input that straddled two
    /// receives: the rare case).
    #[inline(never)]
    fn consume_own(&mut self, n: usize) {
        if let Some(o) = &self.own {
            self.pos += n;
            debug_assert!(self.pos <= o.len());
            if self.pos >= o.len() {
                self.own = None;
                self.pos = 0;
            }
        }
    }

    /// Adds a received pool buffer: kept for in-place parsing if nothing else is
    /// pending, else appended to the own buffer.
    #[inline]
    pub(crate) fn push_pool(&mut self, buf: PoolBuf) {
        // The common case, nothing pending (a pool buffer is never kept consumed to
        // its end, nor the own buffer).
        if self.pool.is_none() && self.own.is_none() {
            debug_assert_eq!(self.pos, 0);
            self.pool = Some(buf);
            self.ppos = 0;
            return;
        }
        self.push_pool_pending(buf);
    }

    /// [`push_pool`](Self::push_pool) when something may be pending.
    #[inline(never)]
    fn push_pool_pending(&mut self, buf: PoolBuf) {
        if self.is_empty() {
            self.own = None;
            self.pos = 0;
            self.pool = Some(buf);
            self.ppos = 0;
        } else {
            self.own_mut().extend_from_slice(&buf);
        }
    }

    /// Copies what is left of a pool buffer into the own buffer and releases it; also
    /// compacts the own buffer. Called before waiting for more input.
    #[inline]
    pub(crate) fn settle(&mut self) {
        // Nothing to settle: the common case between requests.
        if self.pool.is_none() && self.pos == 0 && self.own.is_none() {
            return;
        }
        self.settle_pending();
    }

    /// [`settle`](Self::settle) when there is something to move or compact.
    #[inline(never)]
    fn settle_pending(&mut self) {
        if let Some(p) = self.pool.take() {
            let rest = &p[self.ppos..];
            self.ppos = 0;
            if !rest.is_empty() {
                let own = self.own.get_or_insert_with(PooledBuf::take);
                own.drain(..self.pos);
                self.pos = 0;
                own.extend_from_slice(rest);
            }
        } else if self.pos > 0 {
            if let Some(o) = &mut self.own {
                o.drain(..self.pos);
            }
            self.pos = 0;
        }
        if self.own.as_ref().is_some_and(|o| o.is_empty()) {
            self.own = None;
        }
    }

    /// The own buffer, for transports that produce plaintext themselves (TLS).
    pub(crate) fn own_mut(&mut self) -> &mut Vec<u8> {
        self.settle();
        self.own.get_or_insert_with(PooledBuf::take)
    }

    /// Drops whatever is unconsumed (a closing connection discarding input).
    pub(crate) fn clear(&mut self) {
        self.pool = None;
        self.own = None;
        self.pos = 0;
        self.ppos = 0;
    }
}
