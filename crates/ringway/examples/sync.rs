//! Channels across cores and locks on one core: a fan-out of jobs to every core over
//! `mpsc`, answers over `oneshot`, a `watch` to stop the workers, a `Semaphore` and a
//! `Mutex` among one core's tasks, a `JoinSet`, and a `task_local!` request id.
//!
//! ```sh
//! cargo run -p ringway --example sync
//! ```

use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use ringway::sync::{mpsc, oneshot, watch, Mutex, Semaphore};
use ringway::task::JoinSet;

/// A job for a worker: a number to square, and where to send the answer.
type Job = (u64, oneshot::Sender<(u64, usize)>);

ringway::task_local! {
    static REQUEST_ID: u64;
}

#[ringway::main(threads = 2)]
async fn main() {
    let handle = ringway::Handle::current();
    let (stop_tx, stop_rx) = watch::channel(false);

    // One worker per core, each with its own queue: the fan-out picks the queue.
    let mut queues = Vec::new();
    let mut workers = JoinSet::new();
    for core in 0..handle.cores() {
        let (tx, rx) = mpsc::channel::<Job>(64);
        queues.push(tx);
        let stop = stop_rx.clone();
        workers.spawn_on(core, move || worker(rx, stop));
    }

    let mut answers = Vec::new();
    for n in 0..10u64 {
        let (tx, rx) = oneshot::channel();
        queues[n as usize % queues.len()]
            .send((n, tx))
            .await
            .unwrap();
        answers.push(rx);
    }
    for rx in answers {
        let (square, core) = rx.await.unwrap();
        println!("{square:>3} (worked out on core {core})");
    }

    // On this core: at most two of five tasks at a time, appending under one lock.
    let limit = Rc::new(Semaphore::new(2));
    let log = Rc::new(Mutex::new(Vec::new()));
    let mut tasks = JoinSet::new();
    for id in 0..5u64 {
        let (limit, log) = (limit.clone(), log.clone());
        tasks.spawn(REQUEST_ID.scope(id, async move {
            let _permit = limit.acquire().await.unwrap();
            ringway::time::sleep(Duration::from_millis(2)).await;
            log.lock()
                .await
                .push(format!("request {}", REQUEST_ID.get()));
        }));
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    println!("{:?}", log.lock().await);

    stop_tx.send(true).unwrap();
    while let Some(handled) = workers.join_next().await {
        println!("a worker stopped after {} jobs", handled.unwrap());
    }
}

/// Squares what comes until told to stop; returns how many it did.
async fn worker(mut jobs: mpsc::Receiver<Job>, mut stop: watch::Receiver<bool>) -> usize {
    let core = ringway::runtime::current_core();
    let mut handled = 0;
    loop {
        next_event(&mut jobs, &mut stop, core, &mut handled).await;
        if *stop.borrow() {
            return handled;
        }
    }
}

/// Waits for a job or a change of the stop flag, whichever comes first.
async fn next_event(
    jobs: &mut mpsc::Receiver<Job>,
    stop: &mut watch::Receiver<bool>,
    core: usize,
    handled: &mut usize,
) {
    let changed = stop.changed();
    let mut changed = std::pin::pin!(changed);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(Some((n, reply))) = jobs.poll_recv(cx) {
            let _ = reply.send((n * n, core));
            *handled += 1;
            return std::task::Poll::Ready(());
        }
        changed.as_mut().poll(cx).map(drop)
    })
    .await
}
