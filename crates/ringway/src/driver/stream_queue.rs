//! The queue a multishot receive's stream shares with the driver ([`StreamQueue`]):
//! the driver pushes completions into it, the stream takes them without a call into the
//! driver.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::first_inline::FirstInline;
use crate::buf::PoolBuf;

/// A multishot receive's completions, shared by the driver (which pushes) and its
/// stream (which pops, without borrowing the driver). Single-threaded: both live on
/// the core.
#[derive(Default)]
pub(crate) struct StreamQueue {
    /// `(result, buffer)` of each completion not yet taken.
    pub items: RefCell<FirstInline<(i32, Option<PoolBuf>)>>,
    /// The final completion is in `items` (or taken), or the slot is gone: once
    /// `items` is empty, only the driver can say what comes next.
    pub done: Cell<bool>,
    /// The receive is stopped until the stream has caught up (see
    /// `Owner::Stream::backlogged`): the stream tells the driver when it has.
    pub backlogged: Cell<bool>,
}

/// A [`StreamQueue`] as the slot and its stream hold it.
pub(crate) type QueueWatch = Rc<StreamQueue>;
