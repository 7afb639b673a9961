//! A stand-in for the `ringway` crate, just big enough to run the code the
//! macros generate. Each test crate re-exports it at its root and declares
//! `extern crate self as ringway;`, so `::ringway::Runtime` resolves here.
//! `block_on` records the builder settings so tests can check them.

#![allow(dead_code)]

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// The backends the generated code may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `backend = "uring"`.
    Uring,
    /// `backend = "epoll"`.
    Epoll,
    /// `backend = "auto"`.
    Auto,
}

/// What the generated code asked the builder for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// `worker_threads(n)`.
    pub threads: Option<usize>,
    /// `backend(b)`.
    pub backend: Option<Backend>,
    /// `pin_threads(p)`.
    pub pin: Option<bool>,
}

thread_local! {
    static CURRENT: RefCell<Option<Config>> = const { RefCell::new(None) };
}

/// The settings of the runtime running the current `block_on`.
pub fn current() -> Config {
    CURRENT
        .with(|c| c.borrow().clone())
        .expect("not inside block_on")
}

/// Records the settings it was built with.
#[derive(Debug)]
pub struct Runtime(Config);

/// Collects the settings the generated code asks for.
#[derive(Debug)]
pub struct Builder(Config);

impl Runtime {
    /// A builder with nothing set.
    pub fn builder() -> Builder {
        Builder(Config::default())
    }

    /// Polls `future` to completion (busy), with this runtime's settings visible to
    /// `current()`.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        CURRENT.with(|c| *c.borrow_mut() = Some(self.0.clone()));
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        let out = loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                break out;
            }
        };
        CURRENT.with(|c| *c.borrow_mut() = None);
        out
    }
}

impl Builder {
    /// Records the thread count.
    pub fn worker_threads(mut self, n: usize) -> Self {
        self.0.threads = Some(n);
        self
    }

    /// Records the backend.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.0.backend = Some(backend);
        self
    }

    /// Records the pinning.
    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.0.pin = Some(pin);
        self
    }

    /// The runtime.
    pub fn build(self) -> std::io::Result<Runtime> {
        Ok(Runtime(self.0))
    }
}

fn noop_waker() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: every vtable function ignores the (null) data pointer.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}
