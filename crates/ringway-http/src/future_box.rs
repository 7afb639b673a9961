//! A heap block for a future, reused across requests on a core: what the `http`-types
//! handler's future lives in while it runs. Kept off the connection's own state (which
//! every idle connection carries) like a `Box`, but without an allocation and a free
//! per request: a block goes back to a small per-core cache when its future is done,
//! and the next future of the same size and alignment takes it.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// Free blocks kept per core, at most (beyond, a block is freed).
const KEEP: usize = 64;

/// The per-core cache of free blocks.
struct Blocks(Vec<(Layout, NonNull<u8>)>);

impl Drop for Blocks {
    fn drop(&mut self) {
        for (layout, ptr) in self.0.drain(..) {
            // SAFETY: every cached block was allocated with `alloc(layout)` and is free.
            unsafe { dealloc(ptr.as_ptr(), layout) };
        }
    }
}

thread_local! {
    static FREE: RefCell<Blocks> = const { RefCell::new(Blocks(Vec::new())) };
}

/// A pinned future in a reused heap block (see the module doc).
pub(crate) struct FutureBox<F> {
    ptr: NonNull<F>,
    /// Owns an `F` (for the drop check).
    owns: PhantomData<F>,
}

impl<F> FutureBox<F> {
    /// Moves `future` into a block: a cached one of its layout, else a new one.
    pub(crate) fn new(future: F) -> FutureBox<F> {
        let layout = Layout::new::<F>();
        let ptr: NonNull<F> = if layout.size() == 0 {
            NonNull::dangling()
        } else {
            let cached = FREE
                .try_with(|f| {
                    let mut f = f.borrow_mut();
                    let at = f.0.iter().rposition(|(l, _)| *l == layout)?;
                    Some(f.0.swap_remove(at).1)
                })
                .ok()
                .flatten();
            match cached {
                Some(p) => p.cast(),
                None => {
                    // SAFETY: `layout` has a non-zero size.
                    let p = unsafe { alloc(layout) };
                    match NonNull::new(p) {
                        Some(p) => p.cast(),
                        None => handle_alloc_error(layout),
                    }
                }
            }
        };
        // SAFETY: `ptr` is valid for writes of an `F` and properly aligned (a block of
        // `F`'s layout, or dangling for a zero-sized `F`).
        unsafe { ptr.as_ptr().write(future) };
        FutureBox {
            ptr,
            owns: PhantomData,
        }
    }
}

impl<F> Drop for FutureBox<F> {
    fn drop(&mut self) {
        // SAFETY: the block holds the `F` written by `new`, dropped only here.
        unsafe { self.ptr.as_ptr().drop_in_place() };
        let layout = Layout::new::<F>();
        if layout.size() == 0 {
            return;
        }
        let block = self.ptr.cast::<u8>();
        let kept = FREE
            .try_with(|f| {
                let mut f = f.borrow_mut();
                if f.0.len() < KEEP {
                    f.0.push((layout, block));
                    true
                } else {
                    false
                }
            })
            .unwrap_or(false);
        if !kept {
            // SAFETY: allocated with `alloc(layout)` (or taken from the cache, whose
            // blocks were), and its future was dropped above.
            unsafe { dealloc(block.as_ptr(), layout) };
        }
    }
}

impl<F: Future> Future for FutureBox<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the future stays in its block from `new` until it is dropped in
        // `drop`, never moved out: it is pinned there whatever happens to the box.
        unsafe { Pin::new_unchecked(&mut *self.ptr.as_ptr()) }.poll(cx)
    }
}

// The box only points at the pinned future; moving the box does not move it.
impl<F> Unpin for FutureBox<F> {}

impl<F> fmt::Debug for FutureBox<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FutureBox")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;
    use std::task::Waker;

    fn poll_once<F: Future>(f: &mut FutureBox<F>) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn blocks_are_reused_and_futures_dropped() {
        let alive = Rc::new(());
        let held = alive.clone();
        let mut a = FutureBox::new(async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        assert!(poll_once(&mut a).is_pending());
        let block = a.ptr.cast::<u8>();
        assert_eq!(Rc::strong_count(&alive), 2);
        drop(a);
        assert_eq!(Rc::strong_count(&alive), 1, "the future was dropped");
        // Same layout: the same block comes back.
        let held = alive.clone();
        let mut b = FutureBox::new(async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        assert_eq!(b.ptr.cast::<u8>(), block);
        assert!(poll_once(&mut b).is_pending());
        drop(b);
        // Ready futures, and zero-sized ones.
        let mut c = FutureBox::new(async { 7 });
        assert_eq!(poll_once(&mut c), Poll::Ready(7));
        let mut d = FutureBox::new(std::future::pending::<()>());
        assert_eq!(std::mem::size_of_val(&std::future::pending::<()>()), 0);
        assert!(poll_once(&mut d).is_pending());
        assert_eq!(Rc::strong_count(&alive), 1);
    }
}
