//! Tasks: spawning (re-exported from [`runtime`](crate::runtime)), [`JoinSet`] for a
//! group of tasks, and [`task_local!`](crate::task_local) values.

mod join_set;
mod local_key;

pub use crate::runtime::{spawn, spawn_blocking, yield_now, JoinError, JoinHandle};
pub use join_set::JoinSet;
pub use local_key::{AccessError, LocalKey, TaskLocalFuture};
