//! Timers: sleep, timeout, interval, and the turn clock. Each core keeps its timers in
//! one structure; the driver's wait is bounded by the nearest one (no timerfd).
//!
//! ```sh
//! cargo run -p ringway --example timers
//! ```

use std::time::{Duration, Instant};

use ringway::time::{interval, sleep, timeout};

#[ringway::main]
async fn main() {
    let start = Instant::now();
    sleep(Duration::from_millis(20)).await;
    println!("slept {:?}", start.elapsed());

    // A future that takes too long: cancelled (and its I/O with it) at the deadline.
    let slow = sleep(Duration::from_secs(60));
    match timeout(Duration::from_millis(10), slow).await {
        Ok(()) => unreachable!("sixty seconds did not pass"),
        Err(e) => println!("timeout: {e}"),
    }

    let mut every = interval(Duration::from_millis(5));
    for i in 0..4 {
        let at = every.tick().await;
        println!("tick {i} at {:?}", at.duration_since(start));
    }

    // Many timers at once cost one heap entry each, no syscall.
    let tasks: Vec<_> = (1..=100u64)
        .map(|ms| ringway::spawn(async move { sleep(Duration::from_millis(ms % 20)).await }))
        .collect();
    ringway::runtime::yield_now().await; // the tasks run once and arm their sleeps
    println!(
        "{} timers pending on this core",
        ringway::time::pending_timers()
    );
    for t in tasks {
        t.await.unwrap();
    }
    println!(
        "done after {:?}; turn clock says {:?}",
        start.elapsed(),
        ringway::time::now().duration_since(start)
    );
}
