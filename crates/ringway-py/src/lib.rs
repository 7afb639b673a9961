//! ringway for Python: the native half of the `ringway` package, an asyncio event loop
//! on ringway's io_uring and epoll drivers.
//!
//! - [`loop_core`]: `LoopCore`, the native base class of `ringway.Loop` (ready queue,
//!   timers, the run loop, readiness watches);
//! - [`handle`]: `Handle` and `TimerHandle`;
//! - [`stream`]: `StreamCore`, the TCP/Unix transport (receive, send, close, its
//!   Python face);
//! - [`listener`]: `ListenerCore`, multishot accept for servers;
//! - [`io_source`]: the one trait the loop calls its sources (transports, listeners)
//!   through, so that `loop_core` names neither: the modules depend in one direction
//!   (`stream`, `listener` -> `loop_core` -> `handle`, `io_source`, `io_driver`);
//! - [`io_driver`]: the only module that uses `ringway::driver`;
//! - sans-IO parts with their own tests: [`timer_heap`], [`write_queue`], [`sources`].

pub mod clock;
pub mod gil_cell;
pub mod handle;
pub mod io_driver;
mod io_source;
pub mod listener;
pub mod loop_core;
mod protocol_context;
mod socket_setup;
pub mod sources;
pub mod stream;
mod tasks;
pub mod timer_heap;
pub mod write_queue;

use pyo3::prelude::*;

#[pymodule]
fn _ringway(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<loop_core::LoopCore>()?;
    m.add_class::<handle::Handle>()?;
    m.add_class::<handle::TimerHandle>()?;
    m.add_class::<stream::StreamCore>()?;
    m.add_class::<listener::ListenerCore>()?;
    Ok(())
}
