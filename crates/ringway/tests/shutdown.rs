//! Dropping a runtime cancels every task and every operation and closes every fd it
//! opened: the process is left as it was found.
//!
//! Alone in its test binary (so alone in its process): it counts the process's open
//! fds, which a test running beside it would change.

use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use ringway::driver::{Driver, DriverConfig};
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
        // Wakers that outlive the runtime: block_on's own, and a task's on core 1 (both
        // reach a core's eventfd).
        let (main_waker, task_waker) = rt.block_on(async {
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
            let task_waker = handle
                .spawn_on(1, || {
                    std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone()))
                })
                .await
                .unwrap();
            let main_waker = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
            let _c = TcpStream::connect(addr).await.unwrap();
            sleep(Duration::from_millis(10)).await;
            assert!(open_fds() > fds_before, "the runtime and sockets hold fds");
            (main_waker, task_waker)
        });
        drop(rt); // must not hang: tasks and ops are cancelled
                  // Closed with the runtime, whatever still holds a way to wake it (a handle, a
                  // waker kept by another thread): their fds must not close later, under whatever
                  // the process opens next.
        assert_eq!(
            open_fds(),
            fds_before,
            "{backend:?}: fds left open after the runtime was dropped"
        );
        // A handle outliving its runtime spawns nothing: the task reports cancelled.
        let late = handle.spawn_on(1, || async { 7 });
        let mut cx = Context::from_waker(Waker::noop());
        match std::pin::pin!(late).poll(&mut cx) {
            Poll::Ready(Err(e)) => assert!(e.is_cancelled(), "{e:?}"),
            other => panic!("a spawn on a dropped runtime gave {other:?}"),
        }
        // The wakers do nothing now; in particular they write nothing into an fd that
        // took the number of a closed eventfd.
        let reused = Eventfd::new();
        main_waker.wake();
        task_waker.wake();
        assert!(
            reused.is_empty(),
            "{backend:?}: a stale waker wrote into a reused fd"
        );
        drop(reused);
        // The driver's own waker, unconditionally (`notify`), after the driver is gone.
        let driver = Driver::new(&DriverConfig {
            backend,
            ..Default::default()
        })
        .unwrap();
        let notifier = driver.waker();
        drop(driver);
        assert_eq!(
            open_fds(),
            fds_before,
            "{backend:?}: the driver left fds open"
        );
        let reused = Eventfd::new();
        notifier.notify();
        assert!(
            reused.is_empty(),
            "{backend:?}: notify wrote into a reused fd"
        );
        drop(reused);
        drop(handle);
        assert_eq!(open_fds(), fds_before);
    }
}

/// An eventfd opened after a runtime's were closed: it takes the lowest free number,
/// which one of theirs had, so a stale write would land in it.
struct Eventfd(std::os::fd::OwnedFd);

impl Eventfd {
    fn new() -> Self {
        // SAFETY: no memory preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        assert!(fd >= 0, "eventfd: {}", std::io::Error::last_os_error());
        // SAFETY: a new descriptor we own.
        Eventfd(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
    }

    /// Nothing was written to it (a non-blocking read finds no count).
    fn is_empty(&self) -> bool {
        let mut n = 0u64;
        // SAFETY: reads 8 bytes into a live u64.
        let r = unsafe {
            libc::read(
                std::os::fd::AsRawFd::as_raw_fd(&self.0),
                (&mut n as *mut u64).cast(),
                8,
            )
        };
        r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
    }
}
