//! Transport-level abuse (hostile-inputs class 28): half-closed peers are answered,
//! reset storms leave the server serving, and running out of file descriptors (EMFILE)
//! makes the accept loop back off, not spin, and recover once descriptors free up.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use ringway_http::Config;

#[test]
fn half_closed_peer_still_gets_its_answers() {
    let server = TestServer::start(Config::default());
    let mut s = connect(server.addr);
    s.write_all(b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let ex = read_exchange(&mut s, 2, &[], true, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![200, 200]);
    assert!(ex.closed);
}

fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a correctly sized option value.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
    drop(s); // closes with RST
}

#[test]
fn reset_storm_leaves_the_server_serving() {
    let server = TestServer::start(Config::default());
    for i in 0..300 {
        let mut s = connect(server.addr);
        let part: &[u8] = match i % 3 {
            0 => b"GET / HTTP/1.1\r\nHo",
            1 => b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc",
            _ => b"",
        };
        s.write_all(part).unwrap();
        reset(s);
    }
    let mut s = connect(server.addr);
    s.write_all(b"GET /ok HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let ex = read_exchange(&mut s, 1, &[], false, Duration::from_secs(5));
    assert_eq!(ex.statuses(), vec![200]);
    let stats = server.stop();
    assert!(stats.connections >= 301, "{stats}");
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    // Fields 14 and 15 of stat (utime, stime), counted from after the command name.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn emfile_backs_off_and_recovers() {
    let mut cmd = Command::new(ringway_bin());
    cmd.args([
        "serve",
        "--hello",
        "--threads",
        "1",
        "--bind",
        "127.0.0.1:0",
        "--no-access-log",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // SAFETY: only setrlimit (async-signal-safe) runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 48,
                rlim_max: 48,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn ringway serve");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    // More connections than the server has descriptors: the kernel completes them, the
    // server's accepts fail with EMFILE.
    let held: Vec<TcpStream> = (0..80)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let t0 = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(1));
    let spent = cpu_ticks(child.id()) - t0;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    assert!(
        spent * 2 < hz,
        "accept loop spinning on EMFILE: {spent} ticks in 1 s"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    // Recovered: a new connection is served.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
    // SAFETY: our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success());
    assert!(err.contains("accept_errors"), "{err}");
}
