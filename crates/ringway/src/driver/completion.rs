//! What the driver hands back: operation ids and completions.

use std::net::SocketAddr;

use crate::buf::PoolBuf;

/// Identifies an operation in flight: a slot index and that slot's generation, so a
/// completion or a cancel for an operation that has ended cannot touch its successor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpId {
    pub(crate) index: u32,
    pub(crate) gen: u32,
}

impl OpId {
    /// The 64-bit form carried in an SQE's `user_data`.
    pub(crate) fn to_user_data(self) -> u64 {
        ((self.gen as u64) << 32) | self.index as u64
    }

    pub(crate) fn from_user_data(ud: u64) -> Self {
        OpId {
            index: ud as u32,
            gen: (ud >> 32) as u32,
        }
    }
}

/// One completion of an operation.
#[derive(Debug)]
#[must_use = "a completion may hold a pool buffer or a new fd"]
pub struct Completion {
    /// The result: a count or an fd when `>= 0`, `-errno` otherwise.
    pub result: i32,
    /// For `RecvMulti`: the piece of a pool buffer the bytes landed in.
    pub buf: Option<PoolBuf>,
    /// For `Accept` and `RecvFrom`: the peer's IP address. (Kept small on purpose: a
    /// completion is moved several times on its way to the task.)
    pub addr: Option<SocketAddr>,
}

impl Completion {
    /// A completion with only a result.
    pub fn new(result: i32) -> Self {
        Completion {
            result,
            buf: None,
            addr: None,
        }
    }

    /// The result as an `io::Result`: the count (or fd), or the error.
    pub fn io_result(&self) -> std::io::Result<usize> {
        if self.result >= 0 {
            Ok(self.result as usize)
        } else {
            Err(std::io::Error::from_raw_os_error(-self.result))
        }
    }
}
