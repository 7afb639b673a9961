//! The heap blocks task bodies live in, kept per core for the next task of the same
//! layout ([`TaskBlocks`]), and the owning pointer to one placed body ([`TaskBox`]).
//!
//! Why not a `Box`: a task body is aligned to a cache line (see `TaskBody`), and glibc
//! serves an over-aligned allocation with `posix_memalign`, which takes no block from
//! its per-thread cache and splits a larger chunk every time (then `free` merges the
//! pieces back): 752 instructions per spawn and 430 per task end, counted with
//! callgrind on `ringway serve --hello` under a new connection per request
//! (`scripts/instructions newconn-c10`), where every request spawns a task. A server
//! spawns tasks of a few layouts only, one per connection, so the block a finished
//! connection leaves is the one the next connection takes: a pop and a push, and the
//! block's lines are still in the cache.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::future::Future;
use std::ptr::NonNull;
use std::sync::Arc;

use super::core::TaskBody;
use super::task::{JoinState, TaskFuture};

/// How many layouts a core keeps blocks of (a server has a handful: connections, its
/// accept loop, timers' helpers); blocks of other layouts go back to the allocator.
const LAYOUTS: usize = 8;

/// How many blocks of one layout a core keeps at most, and how many bytes: enough for
/// the connections that end within one turn of a churning server, little against the
/// memory of the connections themselves.
const KEPT_BLOCKS: usize = 256;
const KEPT_BYTES: usize = 256 * 1024;

/// One core's free task blocks, by layout.
#[derive(Debug, Default)]
pub(super) struct TaskBlocks {
    kept: Vec<(Layout, Vec<NonNull<u8>>)>,
}

impl TaskBlocks {
    /// A block for `layout`: a kept one, or a new one from the allocator.
    #[inline]
    fn take(&mut self, layout: Layout) -> NonNull<u8> {
        if let Some((_, free)) = self.kept.iter_mut().find(|(l, _)| *l == layout) {
            if let Some(block) = free.pop() {
                return block;
            }
        }
        // SAFETY: a task body's layout has a non-zero size (it holds `running`).
        let raw = unsafe { alloc(layout) };
        NonNull::new(raw).unwrap_or_else(|| handle_alloc_error(layout))
    }

    /// Keeps `block` (allocated with `layout`, its contents dropped) for the next task
    /// of that layout, or frees it if this core keeps enough of them.
    #[inline]
    fn give_back(&mut self, block: NonNull<u8>, layout: Layout) {
        let most = KEPT_BLOCKS.min(KEPT_BYTES / layout.size());
        let at = match self.kept.iter().position(|(l, _)| *l == layout) {
            Some(at) => Some(at),
            None if self.kept.len() < LAYOUTS && most > 0 => {
                self.kept.push((layout, Vec::new()));
                Some(self.kept.len() - 1)
            }
            None => None,
        };
        match at {
            Some(at) if self.kept[at].1.len() < most => self.kept[at].1.push(block),
            // SAFETY: `block` came from `alloc(layout)` and nothing refers to it.
            _ => unsafe { dealloc(block.as_ptr(), layout) },
        }
    }

    /// Blocks kept now (all layouts).
    #[cfg(test)]
    pub(super) fn kept(&self) -> usize {
        self.kept.iter().map(|(_, free)| free.len()).sum()
    }
}

impl Drop for TaskBlocks {
    fn drop(&mut self) {
        for (layout, free) in self.kept.drain(..) {
            for block in free {
                // SAFETY: every kept block came from `alloc(layout)` and holds nothing.
                unsafe { dealloc(block.as_ptr(), layout) };
            }
        }
    }
}

/// An owned task body in a block of its own. Never moves (the future is polled in
/// place). Dropped plainly, the block goes back to the allocator; given back to a core's
/// [`TaskBlocks`] with [`recycle`](Self::recycle), the next task may take it.
pub(super) struct TaskBox {
    body: NonNull<TaskBody<dyn Future<Output = ()>>>,
}

impl TaskBox {
    /// Places the task of the future at `fut` (its output for `state`) in a block from
    /// `blocks`, moving the future there bitwise: built on the stack first and moved,
    /// the body would be one more copy of it.
    ///
    /// # Safety
    ///
    /// `fut` points at a valid future that the caller neither uses nor drops after this
    /// call.
    #[inline(always)]
    pub(super) unsafe fn place<F: Future + 'static>(
        blocks: &mut TaskBlocks,
        fut: *const F,
        state: Arc<JoinState<F::Output>>,
    ) -> TaskBox {
        let block = blocks.take(Layout::new::<TaskBody<TaskFuture<F>>>());
        let body = block.cast::<TaskBody<TaskFuture<F>>>().as_ptr();
        // SAFETY: the block is fresh or given back (its last body dropped), sized and
        // aligned for this body by its layout; every field is written before the box
        // that owns them exists; `fut` is the caller's to give (its promise).
        unsafe {
            std::ptr::addr_of_mut!((*body).running).write(Cell::new(false));
            TaskFuture::write(std::ptr::addr_of_mut!((*body).future), fut, state);
        }
        // SAFETY: non-null (from the block), and now a whole body.
        let body: NonNull<TaskBody<dyn Future<Output = ()>>> =
            unsafe { NonNull::new_unchecked(body) };
        TaskBox { body }
    }

    /// The body, for polling in place: it stays at this address until the box is
    /// dropped or recycled.
    #[inline]
    pub(super) fn as_ptr(&self) -> *mut TaskBody<dyn Future<Output = ()>> {
        self.body.as_ptr()
    }

    /// Whether the body is being polled.
    #[inline]
    pub(super) fn running(&self) -> bool {
        // SAFETY: the body is alive while the box is; `running` is a `Cell`, read
        // through a shared reference.
        unsafe { self.body.as_ref() }.running.get()
    }

    /// Drops the body, then gives its block to `blocks` for the next task. The body's
    /// drop may spawn (a cancelled future's I/O, a guard that starts work): `blocks`
    /// is borrowed only after it.
    pub(super) fn recycle(self, blocks: &std::cell::RefCell<TaskBlocks>) {
        let body = self.body;
        std::mem::forget(self);
        // SAFETY: the body is alive (the box owned it); read before it is dropped.
        let layout = Layout::for_value(unsafe { body.as_ref() });
        // SAFETY: the box owned the body, and it is dropped once, here (the box is
        // forgotten above).
        unsafe { std::ptr::drop_in_place(body.as_ptr()) };
        blocks.borrow_mut().give_back(body.cast(), layout);
    }
}

impl Drop for TaskBox {
    fn drop(&mut self) {
        // SAFETY: the body is alive; its layout is read before it is dropped.
        let layout = Layout::for_value(unsafe { self.body.as_ref() });
        // SAFETY: the box owns the body, dropped once here; its block came from
        // `alloc(layout)` (through `TaskBlocks::take`) and is freed after.
        unsafe {
            std::ptr::drop_in_place(self.body.as_ptr());
            dealloc(self.body.as_ptr().cast(), layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A future that counts its drops (and is as large as a small task's).
    struct Counted(Rc<Cell<u32>>, #[allow(dead_code)] [u8; 200]);

    impl Future for Counted {
        type Output = ();
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            std::task::Poll::Ready(())
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    fn place(blocks: &RefCell<TaskBlocks>, drops: &Rc<Cell<u32>>) -> TaskBox {
        let fut = std::mem::ManuallyDrop::new(Counted(drops.clone(), [7; 200]));
        // SAFETY: `fut` is moved into the box and never used again.
        unsafe { TaskBox::place(&mut blocks.borrow_mut(), &*fut, JoinState::new()) }
    }

    #[test]
    fn a_recycled_block_is_the_next_tasks_and_every_body_drops_once() {
        let drops = Rc::new(Cell::new(0));
        let blocks = RefCell::new(TaskBlocks::default());
        let a = place(&blocks, &drops);
        let first = a.as_ptr() as *mut u8;
        assert_eq!(first as usize % 64, 0, "aligned to a cache line");
        a.recycle(&blocks);
        assert_eq!((drops.get(), blocks.borrow().kept()), (1, 1));
        let b = place(&blocks, &drops);
        assert_eq!(b.as_ptr() as *mut u8, first, "the kept block, taken again");
        assert_eq!(blocks.borrow().kept(), 0);
        drop(b); // plainly: back to the allocator
        assert_eq!((drops.get(), blocks.borrow().kept()), (2, 0));
    }

    #[test]
    fn a_core_keeps_a_bounded_number_of_blocks() {
        let drops = Rc::new(Cell::new(0));
        let blocks = RefCell::new(TaskBlocks::default());
        let n = KEPT_BLOCKS + 10;
        let boxes: Vec<TaskBox> = (0..n).map(|_| place(&blocks, &drops)).collect();
        for b in boxes {
            b.recycle(&blocks);
        }
        assert_eq!(drops.get() as usize, n);
        assert_eq!(blocks.borrow().kept(), KEPT_BLOCKS);
    }
}
