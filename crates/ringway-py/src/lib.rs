//! ringway for Python: the native half of the `ringway` package, an asyncio event loop
//! on ringway's io_uring and epoll drivers.
//!
//! - [`loop_core`]: `LoopCore`, the native base class of `ringway.Loop` (ready queue,
//!   timers, the run loop, readiness watches);
//! - [`handle`]: `Handle` and `TimerHandle`;
//! - [`stream`]: `StreamCore`, the TCP/Unix transport's receive and send paths;
//! - [`listener`]: `ListenerCore`, multishot accept for servers;
//! - [`io_driver`]: the only module that uses `ringway::driver`;
//! - sans-IO parts with their own tests: [`timer_heap`], [`write_queue`], [`sources`].

pub mod clock;
pub mod gil_cell;
pub mod handle;
pub mod io_driver;
pub mod listener;
pub mod loop_core;
mod protocol_context;
pub mod sources;
pub mod stream;
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
