//! The driver's low-level face, without any executor: what an event loop with its own
//! scheduler (the Python loop) uses. Submit with a token, `turn`, completions with
//! their tokens and the `last` flag, cancel. Run on both backends.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use ringway::driver::op::{Poll, Recv, RecvMulti, Send};
use ringway::driver::{Backend, Completion, Driver, DriverConfig};

fn driver(backend: Backend) -> Driver {
    Driver::new(&DriverConfig {
        backend,
        ..DriverConfig::default()
    })
    .unwrap()
}

/// A connected pair with the blocking mode the driver wants.
fn pair(d: &Driver) -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().unwrap();
    let nonblocking = d.socket_flags() & libc::SOCK_NONBLOCK != 0;
    a.set_nonblocking(nonblocking).unwrap();
    (a, b)
}

/// Turns until `want` final completions arrived (or 20 s passed: the machine may be loaded); returns every
/// completion by token.
fn run(d: &mut Driver, want: usize) -> HashMap<u64, Vec<(Completion, bool)>> {
    let mut got: HashMap<u64, Vec<(Completion, bool)>> = HashMap::new();
    let mut finals = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while finals < want {
        assert!(
            Instant::now() < deadline,
            "{:?}: timed out with {finals} of {want} final completions; got {:?}",
            d.info().kind,
            got.iter()
                .map(|(t, v)| (
                    *t,
                    v.iter().map(|(c, l)| (c.result, *l)).collect::<Vec<_>>()
                ))
                .collect::<Vec<_>>()
        );
        d.turn(Some(Duration::from_millis(50)), &mut |token, c, last| {
            finals += last as usize;
            got.entry(token).or_default().push((c, last));
        })
        .unwrap();
    }
    got
}

/// Submits a one-shot poll for `fd` becoming readable, with `token`.
fn poll_readable(d: &mut Driver, fd: &impl AsRawFd, token: u64) {
    // SAFETY: a poll carries no pointers.
    unsafe {
        d.submit(
            Poll {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN as u32,
                multishot: false,
            },
            token,
            None,
        )
    };
}

fn each_backend(f: impl Fn(Backend)) {
    for b in [Backend::Uring, Backend::Epoll] {
        f(b);
    }
}

#[test]
fn recv_and_send_complete_with_their_tokens() {
    each_backend(|backend| {
        let mut d = driver(backend);
        assert_eq!(d.info().kind, backend);
        let (a, mut b) = pair(&d);
        let mut buf = vec![0u8; 64];
        let msg = b"to the peer";
        // SAFETY: `buf` and `msg` outlive the final completions awaited below.
        unsafe {
            d.submit(
                Recv {
                    fd: a.as_raw_fd(),
                    buf: buf.as_mut_ptr(),
                    len: 64,
                },
                1,
                None,
            );
            d.submit(
                Send {
                    fd: a.as_raw_fd(),
                    buf: msg.as_ptr(),
                    len: msg.len() as u32,
                },
                2,
                None,
            );
        }
        b.write_all(b"hello driver").unwrap();
        let got = run(&mut d, 2);
        let (recv, last) = &got[&1][0];
        assert!(last);
        assert_eq!(recv.result, 12, "{backend:?}");
        assert_eq!(&buf[..12], b"hello driver");
        assert_eq!(got[&2][0].0.result, msg.len() as i32);
        let mut echo = [0u8; 11];
        b.read_exact(&mut echo).unwrap();
        assert_eq!(&echo, msg);
        assert_eq!(d.live_ops(), 0, "slots free after their last completion");
    });
}

#[test]
fn multishot_recv_streams_pool_buffers_until_end_of_stream() {
    each_backend(|backend| {
        let mut d = driver(backend);
        let (a, mut b) = pair(&d);
        // SAFETY: a pool receive carries no pointers.
        unsafe { d.submit(RecvMulti { fd: a.as_raw_fd() }, 9, None) };
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
        b.write_all(&data).unwrap();
        drop(b); // end of stream ends the multishot receive
        let got = run(&mut d, 1);
        let parts = &got[&9];
        let mut all = Vec::new();
        for (c, last) in parts {
            if *last {
                assert_eq!(c.result, 0, "{backend:?}: ends with end of stream");
            } else {
                let buf = c.buf.as_ref().expect("data comes in a pool buffer");
                assert_eq!(buf.len(), c.result as usize);
                all.extend_from_slice(buf);
            }
        }
        assert_eq!(all, data, "{backend:?}: every byte, in order");
        drop(got);
        assert_eq!(d.pool().stats().in_use, 0, "buffers returned when dropped");
    });
}

#[test]
fn cancel_ends_an_operation_with_its_final_completion() {
    each_backend(|backend| {
        let mut d = driver(backend);
        let (a, _b) = pair(&d);
        let mut buf = vec![0u8; 8];
        // SAFETY: `buf` outlives the final completion awaited below.
        let id = unsafe {
            d.submit(
                Recv {
                    fd: a.as_raw_fd(),
                    buf: buf.as_mut_ptr(),
                    len: 8,
                },
                5,
                None,
            )
        };
        // One turn: the receive is now in the kernel (io_uring) or parked on its fd
        // (epoll), and nothing has completed.
        let mut early = 0;
        d.turn(Some(Duration::ZERO), &mut |_, _, _| early += 1)
            .unwrap();
        assert_eq!(early, 0, "{backend:?}: nothing to read yet");
        let before = d.stats();
        d.cancel(id);
        let got = run(&mut d, 1);
        assert_eq!(got[&5][0].0.result, -libc::ECANCELED, "{backend:?}");
        if backend == Backend::Uring {
            // The kernel's answer: the receive's own CQE and the ASYNC_CANCEL's.
            let cqes = d.stats().completions - before.completions;
            assert!(
                cqes >= 2,
                "the cancel did not go through the kernel ({cqes} CQEs)"
            );
        }
        assert_eq!(d.live_ops(), 0);
        d.cancel(id); // a stale id is ignored
    });
}

#[test]
fn linked_timeout_and_poll_readiness() {
    each_backend(|backend| {
        let mut d = driver(backend);
        let (a, mut b) = pair(&d);
        let mut buf = vec![0u8; 8];
        // SAFETY: `buf` outlives the final completion awaited below.
        unsafe {
            d.submit(
                Recv {
                    fd: a.as_raw_fd(),
                    buf: buf.as_mut_ptr(),
                    len: 8,
                },
                1,
                Some(Duration::from_millis(30)),
            )
        };
        let t0 = Instant::now();
        let got = run(&mut d, 1);
        assert_eq!(got[&1][0].0.result, -libc::ETIMEDOUT, "{backend:?}");
        assert!(t0.elapsed() >= Duration::from_millis(30));

        poll_readable(&mut d, &a, 2);
        b.write_all(b"x").unwrap();
        let got = run(&mut d, 1);
        assert!(
            got[&2][0].0.result & libc::POLLIN as i32 != 0,
            "{backend:?}"
        );
    });
}

/// A one-shot poll reports a state, not an edge: on an fd still readable (its bytes not
/// read) the next poll completes at once, on epoll as on io_uring. (On epoll the first
/// poll's report used to clear the fd's readiness, and the second waited for bytes that
/// were already there: `add_reader` callbacks that read part of what was there hung.)
#[test]
fn a_one_shot_poll_on_an_fd_still_ready_completes_at_once() {
    each_backend(|backend| {
        let mut d = driver(backend);
        let (a, mut b) = pair(&d);
        b.write_all(b"xyz").unwrap();
        for token in [5, 6, 7] {
            poll_readable(&mut d, &a, token);
            let got = run(&mut d, 1);
            assert!(
                got[&token][0].0.result & libc::POLLIN as i32 != 0,
                "{backend:?}: poll {token}"
            );
        }
    });
}

#[test]
fn notify_interrupts_a_wait_from_another_thread() {
    each_backend(|backend| {
        let mut d = driver(backend);
        // Three rounds: the driver's read of its eventfd must be armed again after each
        // notification it reaped, or the next wait sleeps through the next one.
        for round in 0..3 {
            let w = d.waker();
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                w.notify();
            });
            // Nothing is in flight: only the notification can end this wait before 30 s.
            let t0 = Instant::now();
            d.turn(Some(Duration::from_secs(30)), &mut |_, _, _| {})
                .unwrap();
            t.join().unwrap();
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{backend:?}, round {round}: the wait was not interrupted"
            );
        }
    });
}

#[test]
fn multishot_poll_reports_each_edge_once_even_on_a_closed_peer() {
    each_backend(|backend| {
        let mut d = driver(backend);
        let (a, mut b) = pair(&d);
        // SAFETY: a poll carries no pointers.
        let id = unsafe {
            d.submit(
                Poll {
                    fd: a.as_raw_fd(),
                    events: libc::POLLIN as u32,
                    multishot: true,
                },
                3,
                None,
            )
        };
        b.write_all(b"x").unwrap();
        drop(b); // readable and closed: still a finite number of reports
        let mut reports = 0;
        for _ in 0..5 {
            d.turn(Some(Duration::from_millis(20)), &mut |t, c, _| {
                assert_eq!(t, 3);
                assert!(c.result & libc::POLLIN as i32 != 0);
                reports += 1;
            })
            .unwrap();
        }
        assert!(
            (1..=4).contains(&reports),
            "{backend:?}: {reports} reports for two edges"
        );
        d.cancel(id);
        run(&mut d, 1);
        assert_eq!(d.live_ops(), 0);
    });
}
