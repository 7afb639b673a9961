//! Synchronisation: channels that cross cores, and locks for the tasks of one core.
//!
//! **Across cores** ([`mpsc`], [`oneshot`], [`watch`]): every handle is `Send`, so a
//! sender on one core and a receiver on another work as in any runtime. A send wakes
//! the receiving task through that task's own core: its inject queue, and its eventfd
//! only if it sleeps (the path [`Handle::spawn_on`](crate::Handle::spawn_on) takes). The
//! hot path (send and receive of `mpsc` and `oneshot`) takes no lock: a lock-free
//! queue and an atomic waker.
//!
//! **On one core** ([`Mutex`], [`RwLock`], [`Semaphore`], [`Notify`]): tasks never
//! migrate, so the tasks that share these are on one thread. They are made of `Cell`s
//! and a wait list, with no atomics, and are `!Sync` (and `!Send`): they are shared
//! through `Rc` or a reference, and cannot be handed to another core by mistake. Each
//! serves its waiters in the order they came, and each may be held across `.await`.
//!
//! **Graceful drain** ([`drain`]): the shutdown of a server on every core, written once
//! for ringway-http's and ringway-compat's servers.
//!
//! **Runtime-agnostic crates work too.** ringway's wakers are ordinary `std::task`
//! wakers, so channels and combinators written against `std::future` alone run
//! unchanged: `tokio::sync` (its channels, `Mutex`, `Semaphore`, `Notify`; the `sync`
//! feature needs no tokio runtime), `async-channel`, `futures`' `select!`, `join!` and
//! channels. `tests/sync.rs` runs each of them on both backends and across cores.
//! What needs tokio's *runtime* (its timers, `tokio::spawn`, its I/O types) does not:
//! see `ringway-compat` for those.

pub mod drain;
mod error;
pub mod mpsc;
mod mutex;
mod notify;
pub mod oneshot;
mod rwlock;
mod semaphore;
mod wait_list;
pub mod watch;

pub use error::{AcquireError, RecvError, SendError, TryRecvError, TrySendError};
pub use mutex::{Mutex, MutexGuard};
pub use notify::{Notified, Notify};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::{Acquire, Semaphore, SemaphorePermit};
