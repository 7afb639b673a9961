//! The one trait between the loop and its I/O sources (stream transports, listeners):
//! what the loop calls on them. The loop keeps `Rc<dyn IoSource>` in its source table
//! and names no source type; the sources name the loop (`LoopCore`), so the modules
//! depend in one direction: `stream`, `listener` -> `loop_core` -> `io_source`.

use pyo3::prelude::*;

use crate::io_driver::IoEvent;
use crate::sources::Kind;

/// What the loop calls on a registered I/O source.
pub(crate) trait IoSource {
    /// Completions of one of the source's operations, of `kind`: consecutive receives
    /// of one turn come together (one Python call for their bytes), every other kind
    /// one at a time.
    fn on_event(&self, py: Python<'_>, kind: Kind, evs: &mut [IoEvent]) -> PyResult<()>;

    /// Called before the loop waits, once per `LoopCore::mark_dirty` (a transport
    /// sends what it was given in this iteration as one send).
    fn flush(&self, py: Python<'_>) -> PyResult<()>;

    /// The loop closed: its driver is gone, and with it every operation in flight.
    fn driver_gone(&self, py: Python<'_>);
}
