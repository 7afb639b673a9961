//! Dropping a runtime cancels every task and every operation and closes every fd it
//! opened: the process is left as it was found.
//!
//! Alone in its test binary (so alone in its process): it counts the process's open
//! fds, which a test running beside it would change.

use std::future::Future;
use std::time::Duration;

use ringway::net::{TcpListener, TcpStream};
use ringway::time::sleep;
use ringway::{Backend, Runtime};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("read /proc/self/fd")
        .count()
}

#[test]
fn runtime_shutdown_cancels_tasks_and_io_and_closes_every_fd() {
    for backend in [Backend::Epoll, Backend::Uring] {
        // Counted before the runtime exists: its rings, eventfds and epoll instances
        // must go too.
        let fds_before = open_fds();
        let rt = Runtime::builder()
            .worker_threads(2)
            .backend(backend)
            .build()
            .unwrap();
        let handle = rt.handle();
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            ringway::spawn(async move {
                let (mut s, _) = l.accept().await.unwrap();
                let _ = s.read(vec![0u8; 10]).await; // never completes
            })
            .detach();
            handle
                .spawn_on(1, || async { sleep(Duration::from_secs(100)).await })
                .detach();
            let _c = TcpStream::connect(addr).await.unwrap();
            sleep(Duration::from_millis(10)).await;
            assert!(open_fds() > fds_before, "the runtime and sockets hold fds");
        });
        drop(rt); // must not hang: tasks and ops are cancelled
                  // A handle outliving its runtime spawns nothing: the task reports cancelled.
        let late = handle.spawn_on(1, || async { 7 });
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::pin::pin!(late).poll(&mut cx) {
            std::task::Poll::Ready(Err(e)) => assert!(e.is_cancelled(), "{e:?}"),
            other => panic!("a spawn on a dropped runtime gave {other:?}"),
        }
        drop(handle); // it keeps the cores' wake eventfds open, as it may still wake them
        assert_eq!(
            open_fds(),
            fds_before,
            "{backend:?}: fds left open after the runtime was dropped"
        );
    }
}
