//! The driver's low-level face, with no executor: what an event loop with its own
//! scheduler (the Python loop) drives. Ops are submitted with a token; each `turn`
//! submits what is queued, waits once (one `io_uring_enter` or one `epoll_wait`) and
//! hands every completion to a sink as `(token, completion, last)`.
//!
//! ```sh
//! cargo run -p ringway --example driver_face
//! RINGWAY_BACKEND=epoll cargo run -p ringway --example driver_face
//! ```

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use ringway::driver::op::{Nop, Recv};
use ringway::driver::{Backend, Driver, DriverConfig};

fn main() -> std::io::Result<()> {
    let backend = Backend::from_env()?.unwrap_or(Backend::Auto);
    let mut driver = Driver::new(&DriverConfig {
        backend,
        ..DriverConfig::default()
    })?;
    println!("backend: {}", driver.info());

    let (a, mut b) = UnixStream::pair()?;
    // The blocking mode this backend wants of the fds it is given.
    a.set_nonblocking(driver.socket_flags() & libc::SOCK_NONBLOCK != 0)?;
    let mut buf = vec![0u8; 64];
    // SAFETY: `buf` and `a` outlive the ops' final completions, which the loop below
    // waits for.
    let recv = unsafe {
        driver.submit(Nop, 1, None);
        driver.submit(
            Recv {
                fd: a.as_raw_fd(),
                buf: buf.as_mut_ptr(),
                len: buf.len() as u32,
            },
            2,
            Some(Duration::from_secs(5)),
        )
    };
    println!("submitted a NOP (token 1) and a receive (token 2, op {recv:?})");
    b.write_all(b"hello, driver")?;

    let mut pending = 2;
    while pending > 0 {
        driver.turn(Some(Duration::from_secs(1)), &mut |token, c, last| {
            println!("token {token}: result {}, last {last}", c.result);
            if token == 2 && c.result > 0 {
                println!(
                    "  received {:?}",
                    String::from_utf8_lossy(&buf[..c.result as usize])
                );
            }
            pending -= usize::from(last);
        })?;
    }
    println!("stats: {:?}", driver.stats());
    Ok(())
}
