//! Allocations on the serving core, counted: with a request-view handler the path of a
//! request allocates nothing in the steady state (buffers come from the core's pools,
//! the head is read where it was received, the response written in place), with the
//! access log on or off; a new connection allocates a bounded few, and no task block,
//! background-send record or receive queue (the runtime keeps a finished connection's
//! for the next one). A count, not a
//! timing: the allocator counts the calls made on the server's core thread.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};

use common::*;
use ringway::Backend;
use ringway_http::Config;

/// The system allocator, counting the allocations of threads that ask for it.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
    /// Of `COUNT`, those aligned beyond what `malloc` gives (a task's block: a cache
    /// line), which glibc serves the slow way (`posix_memalign`).
    static ALIGNED: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; the counters are
// thread-local cells with const initialisers (no allocation, no reentrancy).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNTING.try_with(|c| {
            if c.get() {
                COUNT.with(|n| n.set(n.get() + 1));
                if layout.align() > 16 {
                    ALIGNED.with(|n| n.set(n.get() + 1));
                }
            }
        });
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a pointer this allocator (the system's) returned, with its layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = COUNTING.try_with(|c| {
            if c.get() {
                COUNT.with(|n| n.set(n.get() + 1));
            }
        });
        // SAFETY: as for dealloc, and the caller's new size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Allocations on the server's core while `requests` batches of `depth` pipelined
/// requests go over `conns` keep-alive connections (after a warm-up round).
fn allocations(server: &TestServer, conns: usize, depth: usize, rounds: usize) -> u64 {
    let mut cs: Vec<_> = (0..conns).map(|_| connect(server.addr)).collect();
    let batch = "GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n".repeat(depth);
    let round = |cs: &mut Vec<std::net::TcpStream>| {
        for c in cs.iter_mut() {
            c.write_all(batch.as_bytes()).unwrap();
        }
        for c in cs.iter_mut() {
            let mut raw = Vec::new();
            let mut buf = [0u8; 65536];
            while parse_responses(&raw, &[], false).0.len() < depth {
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0, "closed");
                raw.extend_from_slice(&buf[..n]);
            }
        }
    };
    for _ in 0..3 {
        round(&mut cs);
    }
    // What reading the counter costs by itself (the task that reads it).
    server.on_core(|| {
        COUNTING.with(|c| c.set(true));
        COUNT.with(|n| n.set(0));
    });
    let idle = server.on_core(|| COUNT.with(|n| n.replace(0)));
    for _ in 0..rounds {
        round(&mut cs);
    }
    let busy = server.on_core(|| COUNT.with(|n| n.replace(0)));
    server.on_core(|| COUNTING.with(|c| c.set(false)));
    busy.saturating_sub(idle)
}

fn view_server(log: bool) -> TestServer {
    let mut setup = Setup {
        view: true,
        ..Setup::default()
    };
    if log {
        setup.log = Some(Box::new(std::io::sink()));
    }
    TestServer::start_setup(Config::default(), setup)
}

#[test]
fn a_view_handler_allocates_nothing_per_request() {
    for log in [false, true] {
        let server = view_server(log);
        // One request at a time on 20 connections, then pipelined by 16.
        for (conns, depth, rounds) in [(20, 1, 250), (10, 16, 60)] {
            let requests = (conns * depth * rounds) as u64;
            let n = allocations(&server, conns, depth, rounds);
            eprintln!(
                "log {log}, {conns} conns x {depth}: {n} allocations for {requests} requests"
            );
            // Not one per request, nor per batch: what remains is time-driven (the
            // Date ticker's timer, a log buffer now and then), a handful per second.
            assert!(
                n * 100 < requests,
                "log {log}, {conns} x {depth}: {n} allocations for {requests} requests"
            );
        }
        server.stop();
    }
}

/// A fresh `http::Request` allocates nothing: its field map owns no memory, which the
/// `http`-types path relies on when it forgets that map instead of dropping it
/// (`RequestView::fill_http`).
#[test]
fn a_blank_http_request_owns_no_memory() {
    COUNT.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let req = http::Request::new(());
    let capacity = req.headers().capacity();
    drop(req);
    COUNTING.with(|c| c.set(false));
    assert_eq!(COUNT.with(Cell::get), 0, "Request::new allocated");
    assert_eq!(capacity, 0);
}

/// For comparison (printed, not asserted): the `http`-types handler builds a target,
/// a field map and a response map per request.
#[test]
fn http_types_handler_allocations_are_reported() {
    let server = TestServer::start(Config::default());
    let n = allocations(&server, 10, 1, 100);
    eprintln!("http types: {n} allocations for 1000 requests");
    assert!(n > 0, "the http types are built per request");
    server.stop();
}

/// Allocations (all, and over-aligned) on the server's core per new connection: one
/// request each, the client closing once the response is in (the suite's S10 x1),
/// after a warm-up.
fn per_new_connection(server: &TestServer, n: u64) -> (f64, f64) {
    let one = || {
        let mut c = connect(server.addr);
        c.write_all(b"GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap();
        let (mut raw, mut buf) = (Vec::new(), [0u8; 4096]);
        while parse_responses(&raw, &[false], false).0.is_empty() {
            let got = c.read(&mut buf).unwrap();
            assert!(got > 0, "closed before the response");
            raw.extend_from_slice(&buf[..got]);
        }
    };
    // Every connection so far ended on the server (each counts its requests when it
    // is dropped).
    let ended = |count: u64| {
        for _ in 0..500 {
            if server.stats.snapshot().requests_read >= count {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the server did not end its connections");
    };
    for _ in 0..50 {
        one();
    }
    ended(50);
    server.on_core(|| {
        COUNTING.with(|c| c.set(true));
        COUNT.with(|n| n.set(0));
        ALIGNED.with(|n| n.set(0));
    });
    let idle = server.on_core(|| COUNT.with(|n| n.replace(0)));
    for _ in 0..n {
        one();
    }
    ended(50 + n);
    let (all, aligned) = server.on_core(|| {
        COUNTING.with(|c| c.set(false));
        (COUNT.with(|n| n.replace(0)), ALIGNED.with(|n| n.replace(0)))
    });
    let all = all.saturating_sub(2 * idle);
    (all as f64 / n as f64, aligned as f64 / n as f64)
}

/// A new connection per request allocates a bounded few on the serving core: the
/// task's header and join state (2 on io_uring, 3 on epoll); its task's block, its
/// socket's background-send record and its receive's queue are the ones a finished
/// connection left (5 and 6 allocations before, one of them a `posix_memalign`).
#[test]
fn a_new_connection_allocates_a_bounded_few_and_no_task_block() {
    for (backend, most) in [(Backend::Uring, 2.0), (Backend::Epoll, 3.0)] {
        let setup = Setup {
            view: true,
            backend: Some(backend),
            ..Setup::default()
        };
        let server = TestServer::start_setup(Config::default(), setup);
        let (all, aligned) = per_new_connection(&server, 200);
        eprintln!("{backend:?}: {all:.2} allocations per new connection, {aligned:.2} aligned");
        assert!(
            aligned < 0.05,
            "{backend:?}: a task block per connection: {aligned:.2}"
        );
        assert!(
            all <= most + 0.05,
            "{backend:?}: {all:.2} allocations per new connection"
        );
        server.stop();
    }
}
