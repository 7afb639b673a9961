//! `ringway::sync` and `ringway::task` on both backends: channels across cores, the
//! core-local locks, `JoinSet`, `task_local!`, the errors that say which side is gone,
//! and the runtime-agnostic crates (tokio's `sync`, async-channel, futures) on ringway.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use ringway::sync::{mpsc, oneshot, watch, Mutex, Notify, RwLock, Semaphore};
use ringway::task::JoinSet;
use ringway::time::{sleep, timeout};
use ringway::Handle;

const WAIT: Duration = Duration::from_secs(10);

#[ringway::test(both, threads = 2)]
async fn bounded_mpsc_carries_every_message_across_cores_in_order() {
    let (tx, mut rx) = mpsc::channel(8);
    let producer = Handle::current().spawn_on(1, move || async move {
        for i in 0..20_000u32 {
            tx.send(i).await.unwrap();
        }
        ringway::runtime::current_core()
    });
    let mut next = 0;
    while let Some(i) = timeout(WAIT, rx.recv()).await.unwrap() {
        assert_eq!(i, next);
        next += 1;
    }
    assert_eq!(next, 20_000);
    assert_eq!(producer.await.unwrap(), 1);
}

#[ringway::test(both, threads = 2)]
async fn unbounded_mpsc_from_both_cores_to_one() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = Handle::current();
    let producers = handle.spawn_on_each(move |core| {
        let tx = tx.clone();
        async move {
            for i in 0..5_000u64 {
                tx.send((core, i)).unwrap();
                if i % 100 == 0 {
                    ringway::runtime::yield_now().await;
                }
            }
        }
    });
    let mut last = [None::<u64>; 2];
    let mut count = 0;
    while let Some((core, i)) = timeout(WAIT, rx.recv()).await.unwrap() {
        // Per producer, order is kept.
        assert!(last[core].map_or(true, |l| l < i));
        last[core] = Some(i);
        count += 1;
    }
    assert_eq!(count, 10_000);
    for p in producers {
        p.await.unwrap();
    }
}

#[ringway::test(both)]
async fn mpsc_errors_say_which_side_is_gone() {
    let (tx, rx) = mpsc::channel::<String>(1);
    drop(rx);
    let e = tx.send("lost".into()).await.unwrap_err();
    assert_eq!(e.0, "lost", "the message comes back");
    assert!(e.to_string().contains("receiver is gone"), "{e}");
    assert!(tx.is_closed());

    let (tx, mut rx) = mpsc::channel(1);
    tx.try_send(1).unwrap();
    let full = tx.try_send(2).unwrap_err();
    assert!(matches!(full, ringway::sync::TrySendError::Full(2)));
    assert!(full.to_string().contains("full"), "{full}");
    drop(tx);
    assert_eq!(
        rx.recv().await,
        Some(1),
        "queued messages outlive the senders"
    );
    assert_eq!(rx.recv().await, None);
    let e = rx.try_recv().unwrap_err();
    assert!(e.to_string().contains("every sender is gone"), "{e}");
}

#[ringway::test(both, threads = 2)]
async fn a_full_bounded_sender_waits_for_the_receiver_on_another_core() {
    let (tx, mut rx) = mpsc::channel(1);
    tx.send(0u8).await.unwrap();
    let blocked = ringway::spawn(async move {
        tx.send(1).await.unwrap(); // waits: the channel is full
        "sent"
    });
    ringway::runtime::yield_now().await;
    assert!(!blocked.is_finished());
    let got = Handle::current()
        .spawn_on(1, move || async move {
            let a = rx.recv().await;
            let b = rx.recv().await;
            (a, b)
        })
        .await
        .unwrap();
    assert_eq!(got, (Some(0), Some(1)));
    assert_eq!(timeout(WAIT, blocked).await.unwrap().unwrap(), "sent");
}

#[ringway::test(both, threads = 2)]
async fn oneshot_across_cores_and_its_errors() {
    let (tx, rx) = oneshot::channel();
    Handle::current()
        .spawn_on(1, move || async move {
            sleep(Duration::from_millis(5)).await;
            tx.send(ringway::runtime::current_core()).unwrap();
        })
        .detach();
    assert_eq!(timeout(WAIT, rx).await.unwrap().unwrap(), 1);

    let (tx, rx) = oneshot::channel::<u8>();
    Handle::current()
        .spawn_on(1, move || async move { drop(tx) })
        .detach();
    let e = timeout(WAIT, rx).await.unwrap().unwrap_err();
    assert!(e.to_string().contains("dropped without sending"), "{e}");

    let (tx, rx) = oneshot::channel::<String>();
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send("back".into()).unwrap_err(), "back");
}

#[ringway::test(both, threads = 2)]
async fn watch_tells_every_receiver_of_the_latest_value() {
    let (tx, rx) = watch::channel(0u32);
    let handle = Handle::current();
    let watchers = handle.spawn_on_each(move |_| {
        let mut rx = rx.clone();
        async move {
            let mut seen = Vec::new();
            while rx.changed().await.is_ok() {
                seen.push(*rx.borrow_and_update());
            }
            seen
        }
    });
    sleep(Duration::from_millis(10)).await;
    for v in 1..=3 {
        tx.send(v).unwrap();
        sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        tx.receiver_count(),
        2,
        "the original receiver was moved into the closure and dropped"
    );
    drop(tx);
    for w in watchers {
        let seen = timeout(WAIT, w).await.unwrap().unwrap();
        assert_eq!(seen.last(), Some(&3), "{seen:?}");
    }
    let (tx, rx) = watch::channel(());
    drop(rx);
    assert!(tx.send(()).is_err(), "no receiver left");
}

#[ringway::test(both)]
async fn mutex_is_held_across_await_and_served_in_order() {
    let m = Rc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..5 {
        let m = m.clone();
        tasks.push(ringway::spawn(async move {
            let mut g = m.lock().await;
            sleep(Duration::from_millis(1)).await;
            g.push(i);
        }));
        ringway::runtime::yield_now().await; // each asks in turn
    }
    assert!(m.try_lock().is_none(), "held by the first task");
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*m.lock().await, [0, 1, 2, 3, 4]);
}

#[ringway::test(both)]
async fn rwlock_writers_are_not_starved_by_readers() {
    let lock = Rc::new(RwLock::new(0));
    let r1 = lock.read().await;
    let l = lock.clone();
    let writer = ringway::spawn(async move {
        *l.write().await += 1;
    });
    ringway::runtime::yield_now().await;
    // A reader that comes after the waiting writer waits behind it.
    assert!(lock.try_read().is_none());
    let l = lock.clone();
    let late_reader = ringway::spawn(async move { *l.read().await });
    ringway::runtime::yield_now().await;
    drop(r1);
    writer.await.unwrap();
    assert_eq!(late_reader.await.unwrap(), 1, "the reader saw the write");
}

#[ringway::test(both)]
async fn semaphore_limits_concurrency_and_gives_back_cancelled_grants() {
    let sem = Rc::new(Semaphore::new(3));
    let running = Rc::new(Cell::new(0));
    let peak = Rc::new(Cell::new(0));
    let mut set = JoinSet::new();
    for _ in 0..20 {
        let (sem, running, peak) = (sem.clone(), running.clone(), peak.clone());
        set.spawn(async move {
            let _p = sem.acquire().await.unwrap();
            running.set(running.get() + 1);
            peak.set(peak.get().max(running.get()));
            sleep(Duration::from_millis(1)).await;
            running.set(running.get() - 1);
        });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
    assert_eq!(peak.get(), 3);
    assert_eq!(sem.available_permits(), 3);

    // A waiting acquire that is dropped leaves the line and loses nothing.
    let all = sem.acquire_many(3).await.unwrap();
    let waiting = timeout(Duration::from_millis(5), sem.acquire()).await;
    assert!(waiting.is_err());
    drop(all);
    assert_eq!(sem.available_permits(), 3);

    sem.close();
    let e = sem.acquire().await.unwrap_err();
    assert!(e.to_string().contains("closed"), "{e}");
}

#[ringway::test(both)]
async fn notify_one_keeps_a_permit_and_notify_waiters_wakes_all() {
    let n = Rc::new(Notify::new());
    n.notify_one();
    timeout(WAIT, n.notified()).await.unwrap(); // the kept permit
    let mut set = JoinSet::new();
    for _ in 0..3 {
        let n = n.clone();
        set.spawn(async move { n.notified().await });
    }
    ringway::runtime::yield_now().await;
    n.notify_waiters();
    let mut woken = 0;
    while let Some(r) = timeout(WAIT, set.join_next()).await.unwrap() {
        r.unwrap();
        woken += 1;
    }
    assert_eq!(woken, 3);
    // A `notified` made before `notify_waiters` counts it, polled or not.
    let early = n.notified();
    n.notify_waiters();
    timeout(WAIT, early).await.unwrap();
}

#[ringway::test(both)]
async fn join_set_returns_in_finishing_order_and_cancels_on_drop() {
    let mut set = JoinSet::new();
    for ms in [30u64, 10, 20] {
        set.spawn(async move {
            sleep(Duration::from_millis(ms)).await;
            ms
        });
    }
    let mut order = Vec::new();
    while let Some(r) = set.join_next().await {
        order.push(r.unwrap());
    }
    assert_eq!(order, [10, 20, 30]);

    struct Dropped(Rc<Cell<bool>>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    let dropped = Rc::new(Cell::new(false));
    let mut set = JoinSet::new();
    let d = Dropped(dropped.clone());
    set.spawn(async move {
        let _d = d;
        sleep(Duration::from_secs(60)).await;
    });
    ringway::runtime::yield_now().await;
    drop(set);
    ringway::runtime::yield_now().await;
    assert!(dropped.get(), "dropping the set cancelled its task");

    let mut set = JoinSet::new();
    set.spawn(sleep(Duration::from_secs(60)));
    set.abort_all();
    assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    assert!(set.join_next().await.is_none());
}

ringway::task_local! {
    static REQUEST: u32;
}

#[ringway::test(both)]
async fn task_locals_belong_to_their_task() {
    let mut set = JoinSet::new();
    for id in 0..4 {
        set.spawn(REQUEST.scope(id, async move {
            for _ in 0..3 {
                ringway::runtime::yield_now().await; // the others run in between
                assert_eq!(REQUEST.get(), id);
            }
            REQUEST.scope(id + 100, async { REQUEST.get() }).await + REQUEST.get()
        }));
    }
    let mut sum = 0;
    while let Some(r) = set.join_next().await {
        sum += r.unwrap();
    }
    assert_eq!(sum, (0..4).map(|id| 2 * id + 100).sum::<u32>());
    let e = REQUEST.try_with(|_| ()).unwrap_err();
    assert!(e.to_string().contains("outside a scope"), "{e}");
}

// The runtime-agnostic crates: nothing of tokio's runtime, only its `sync` feature.

#[ringway::test(both, threads = 2)]
async fn tokio_sync_works_on_ringway() {
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    Handle::current()
        .spawn_on(1, move || async move {
            for i in 0..1000u32 {
                tx.send(i).await.unwrap();
            }
        })
        .detach();
    let mut n = 0;
    while let Some(i) = timeout(WAIT, rx.recv()).await.unwrap() {
        assert_eq!(i, n);
        n += 1;
    }
    assert_eq!(n, 1000);

    let m = std::sync::Arc::new(tokio::sync::Mutex::new(0));
    let m2 = m.clone();
    let other = Handle::current().spawn_on(1, move || async move {
        for _ in 0..100 {
            *m2.lock().await += 1;
            ringway::runtime::yield_now().await;
        }
    });
    for _ in 0..100 {
        *m.lock().await += 1;
        ringway::runtime::yield_now().await;
    }
    other.await.unwrap();
    assert_eq!(*m.lock().await, 200);

    let (tx, rx) = tokio::sync::oneshot::channel();
    Handle::current()
        .spawn_on(1, move || async move { tx.send("across").unwrap() })
        .detach();
    assert_eq!(timeout(WAIT, rx).await.unwrap().unwrap(), "across");

    let notify = std::sync::Arc::new(tokio::sync::Notify::new());
    let n2 = notify.clone();
    let woken = Handle::current().spawn_on(1, move || async move { n2.notified().await });
    sleep(Duration::from_millis(5)).await;
    notify.notify_one();
    timeout(WAIT, woken).await.unwrap().unwrap();
}

#[ringway::test(both, threads = 2)]
async fn async_channel_works_across_cores() {
    let (tx, rx) = async_channel::bounded(2);
    let consumers = Handle::current().spawn_on_each(move |_| {
        let rx = rx.clone();
        async move {
            let mut got = 0u64;
            while let Ok(v) = rx.recv().await {
                got += v;
            }
            got
        }
    });
    for v in 1..=1000u64 {
        tx.send(v).await.unwrap();
    }
    drop(tx);
    let mut total = 0;
    for c in consumers {
        total += timeout(WAIT, c).await.unwrap().unwrap();
    }
    assert_eq!(total, 500_500);
}

#[ringway::test(both)]
async fn futures_select_and_join_work_with_ringway_futures() {
    use futures::{FutureExt, StreamExt};

    let (a, b) = futures::join!(
        async {
            sleep(Duration::from_millis(5)).await;
            1
        },
        async {
            sleep(Duration::from_millis(1)).await;
            2
        }
    );
    assert_eq!((a, b), (1, 2));

    let (tx, mut rx) = mpsc::unbounded_channel::<u8>();
    let slow = sleep(Duration::from_secs(60)).fuse();
    let msg = async { rx.recv().await }.fuse();
    futures::pin_mut!(slow, msg);
    tx.send(7).unwrap();
    let got = futures::select! {
        _ = slow => None,
        m = msg => m,
    };
    assert_eq!(got, Some(7));

    let (mut ftx, frx) = futures::channel::mpsc::channel::<u32>(1);
    let sender = ringway::spawn(async move {
        for i in 0..10 {
            futures::SinkExt::send(&mut ftx, i).await.unwrap();
        }
    });
    let all: Vec<u32> = frx.collect().await;
    sender.await.unwrap();
    assert_eq!(all, (0..10).collect::<Vec<_>>());
}
