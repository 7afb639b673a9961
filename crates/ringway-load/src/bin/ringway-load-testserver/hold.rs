//! `--hold N`: a barrier for responses, to check a client's concurrency by count.

use std::cell::RefCell;
use std::future::poll_fn;
use std::sync::atomic::Ordering;
use std::task::{Poll, Waker};
use std::time::Duration;

use crate::counters::{HELD_MAX, HOLD_TIMEOUTS};

/// The longest a request is held waiting for the others.
const HOLD_LIMIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Barrier {
    held: usize,
    /// Bumped each time the barrier opens.
    round: u64,
    waiting: Vec<Waker>,
}

thread_local! {
    static BARRIER: RefCell<Barrier> = RefCell::new(Barrier::default());
}

/// Holds this request until `n` are held at once (all then go on), or for
/// [`HOLD_LIMIT`] at most (counted in `HOLD_TIMEOUTS`).
pub(crate) async fn barrier(n: usize) {
    let round = BARRIER.with(|b| {
        let mut b = b.borrow_mut();
        b.held += 1;
        HELD_MAX.fetch_max(b.held as u64, Ordering::SeqCst);
        if b.held >= n {
            b.held = 0;
            b.round += 1;
            for w in b.waiting.drain(..) {
                w.wake();
            }
            None
        } else {
            Some(b.round)
        }
    });
    let Some(round) = round else { return };
    let opened = poll_fn(|cx| {
        BARRIER.with(|b| {
            let mut b = b.borrow_mut();
            if b.round != round {
                Poll::Ready(())
            } else {
                b.waiting.push(cx.waker().clone());
                Poll::Pending
            }
        })
    });
    if ringway::time::timeout(HOLD_LIMIT, opened).await.is_err() {
        HOLD_TIMEOUTS.fetch_add(1, Ordering::SeqCst);
        BARRIER.with(|b| {
            let mut b = b.borrow_mut();
            if b.round == round {
                b.held -= 1;
            }
        });
    }
}
