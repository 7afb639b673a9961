//! The connection's input: bytes received but not yet consumed.
//!
//! A received pool buffer is parsed in place while it is the only input; when something
//! is left over (a request straddling two receives), the rest is copied into the
//! connection's own buffer and the pool buffer goes back to the ring at once. So an idle
//! connection never holds a pool buffer.

use ringway::buf::PoolBuf;

/// Unconsumed input of one connection.
#[derive(Debug, Default)]
pub(crate) struct Input {
    own: Vec<u8>,
    pos: usize,
    pool: Option<PoolBuf>,
    ppos: usize,
}

impl Input {
    /// The unconsumed bytes, contiguous.
    pub fn bytes(&self) -> &[u8] {
        match &self.pool {
            Some(p) => &p[self.ppos..],
            None => &self.own[self.pos..],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// Marks `n` bytes consumed.
    pub fn consume(&mut self, n: usize) {
        match &self.pool {
            Some(p) => {
                self.ppos += n;
                debug_assert!(self.ppos <= p.len());
                if self.ppos >= p.len() {
                    self.pool = None;
                    self.ppos = 0;
                }
            }
            None => {
                self.pos += n;
                debug_assert!(self.pos <= self.own.len());
                if self.pos >= self.own.len() {
                    self.own.clear();
                    self.pos = 0;
                }
            }
        }
    }

    /// Adds a received pool buffer: kept for in-place parsing if nothing else is
    /// pending, else appended to the own buffer.
    pub fn push_pool(&mut self, buf: PoolBuf) {
        if self.pool.is_none() && self.own.len() == self.pos {
            self.own.clear();
            self.pos = 0;
            self.pool = Some(buf);
            self.ppos = 0;
        } else {
            self.settle();
            self.own.extend_from_slice(&buf);
        }
    }

    /// Copies what is left of a pool buffer into the own buffer and releases it; also
    /// compacts the own buffer. Called before waiting for more input.
    pub fn settle(&mut self) {
        if let Some(p) = self.pool.take() {
            let rest = &p[self.ppos..];
            self.own.drain(..self.pos);
            self.pos = 0;
            self.own.extend_from_slice(rest);
            self.ppos = 0;
        } else if self.pos > 0 {
            self.own.drain(..self.pos);
            self.pos = 0;
        }
    }

    /// The own buffer, for transports that produce plaintext themselves (TLS).
    pub fn own_mut(&mut self) -> &mut Vec<u8> {
        self.settle();
        &mut self.own
    }
}
