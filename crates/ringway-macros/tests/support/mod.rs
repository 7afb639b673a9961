//! A stand-in for the `ringway` crate, just big enough to run the code the
//! macros generate. Each test crate re-exports it at its root and declares
//! `extern crate self as ringway;`, so `::ringway::Runtime` resolves here.
//! `block_on` records the builder settings so tests can check them.

#![allow(dead_code)]

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Uring,
    Epoll,
    Auto,
}

/// What the generated code asked the builder for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub threads: Option<usize>,
    pub backend: Option<Backend>,
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

pub struct Runtime(Config);

pub struct Builder(Config);

impl Runtime {
    pub fn builder() -> Builder {
        Builder(Config::default())
    }

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
    pub fn worker_threads(mut self, n: usize) -> Self {
        self.0.threads = Some(n);
        self
    }

    pub fn backend(mut self, backend: Backend) -> Self {
        self.0.backend = Some(backend);
        self
    }

    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.0.pin = Some(pin);
        self
    }

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
