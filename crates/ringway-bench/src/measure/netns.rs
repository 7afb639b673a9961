//! Beyond loopback (`--net veth`): two network namespaces joined by a veth pair, made
//! by the suite and removed when it is done, so that segmentation, GRO and wake-ups go
//! through a device that behaves more like a NIC than `lo` does.
//!
//! The server runs in the server namespace (`ip netns exec`), the harness and the
//! client in the client namespace. Every command line keeps `127.0.0.1`: in the server
//! namespace `127.0.0.1/32` sits on the veth end (its `lo` stays down, so no `127/8`
//! route makes the client's address look local), and in the client namespace a route
//! sends `127.0.0.1` across the veth from `127.10.0.2`. Both ends take loopback-range
//! addresses only with `route_localnet`, which the setup turns on inside the two
//! namespaces (nothing of the host's is touched). No traffic leaves the two namespaces.
//!
//! Making namespaces needs root; without it [`Veth::create`] says so and how to run.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

/// The two namespaces and the way back to the harness's own.
#[derive(Debug)]
pub struct Veth {
    /// The server's namespace (`ip netns exec NAME` runs a server there).
    pub server_ns: String,
    /// The client's namespace.
    pub client_ns: String,
    home: File,
    client: File,
    entered: bool,
}

/// Runs `ip ARGS`; `Err` with its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e} (apt-get install iproute2)", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `setns(fd, CLONE_NEWNET)` for the calling thread.
fn enter(ns: &File) -> Result<(), String> {
    // SAFETY: setns takes an fd we own (open for as long as `ns` lives) and a flag; it
    // changes only the calling thread's network namespace.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("setns: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

impl Veth {
    /// Makes the namespaces, the veth pair and the routes; names carry the pid so that
    /// two runs never meet. `Err` says why (not root; `ip` missing).
    pub fn create() -> Result<Veth, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("--net veth makes two network namespaces and a veth pair: it needs root \
                 (run `sudo target/release/ringway bench --net veth ...`); --net loopback needs nothing"
                .into());
        }
        let pid = std::process::id();
        let (s, c) = (format!("rwbench-srv-{pid}"), format!("rwbench-cli-{pid}"));
        let (vs, vc) = (format!("rwb{pid}s"), format!("rwb{pid}c"));
        let home =
            File::open("/proc/self/ns/net").map_err(|e| format!("/proc/self/ns/net: {e}"))?;
        let mut veth = Veth {
            server_ns: s.clone(),
            client_ns: c.clone(),
            home,
            client: File::open("/dev/null").map_err(|e| e.to_string())?,
            entered: false,
        };
        // From here on, Drop removes what was made.
        ip(&["netns", "add", &s])?;
        ip(&["netns", "add", &c])?;
        for cmd in [
            vec!["link", "add", &vs, "type", "veth", "peer", "name", &vc],
            vec!["link", "set", &vs, "netns", &s],
            vec!["link", "set", &vc, "netns", &c],
            vec!["-n", &s, "addr", "add", "127.0.0.1/32", "dev", &vs],
            vec!["-n", &s, "addr", "add", "127.10.0.1/24", "dev", &vs],
            vec!["-n", &c, "addr", "add", "127.10.0.2/24", "dev", &vc],
        ] {
            ip(&cmd)?;
        }
        for (ns, dev) in [(&s, &vs), (&c, &vc)] {
            for key in ["all", dev.as_str()] {
                let out = Command::new("ip")
                    .args(["netns", "exec", ns, "sysctl", "-qw"])
                    .arg(format!("net.ipv4.conf.{key}.route_localnet=1"))
                    .output()
                    .map_err(|e| format!("sysctl: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "sysctl route_localnet in {ns}: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
            }
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        ip(&[
            "-n",
            &c,
            "route",
            "add",
            "127.0.0.1/32",
            "dev",
            &vc,
            "src",
            "127.10.0.2",
        ])?;
        veth.client =
            File::open(format!("/run/netns/{c}")).map_err(|e| format!("/run/netns/{c}: {e}"))?;
        Ok(veth)
    }

    /// Moves the calling thread (and what it starts from now on: processes, threads)
    /// into the client namespace.
    pub fn enter_client(&mut self) -> Result<(), String> {
        enter(&self.client)?;
        self.entered = true;
        Ok(())
    }

    /// Moves the calling thread back to the namespace it came from.
    pub fn leave(&mut self) -> Result<(), String> {
        if self.entered {
            enter(&self.home)?;
            self.entered = false;
        }
        Ok(())
    }

    /// The prefix that runs a command in the server namespace.
    pub fn server_prefix(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.server_ns]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = self.leave();
        // Deleting a namespace removes its end of the veth, and with it the pair.
        let _ = ip(&["netns", "del", &self.server_ns]);
        let _ = ip(&["netns", "del", &self.client_ns]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Over the veth for real (root only; elsewhere the refusal is checked): a server
    /// on 127.0.0.1 in the server namespace answers a client in the client namespace,
    /// the bytes cross the veth, and everything is gone afterwards.
    #[test]
    fn a_connection_crosses_the_veth_and_the_namespaces_are_removed() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            let err = Veth::create().unwrap_err();
            assert!(err.contains("needs root"), "{err}");
            return;
        }
        let names;
        {
            let mut veth = Veth::create().unwrap();
            names = (veth.server_ns.clone(), veth.client_ns.clone());
            // A one-shot server in the server namespace: a thread enters it and binds
            // there (a socket stays in the namespace it was made in).
            let server_ns = File::open(format!("/run/netns/{}", veth.server_ns)).unwrap();
            let listener = std::thread::spawn(move || {
                enter(&server_ns).unwrap();
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let port = l.local_addr().unwrap().port();
                (port, l)
            })
            .join()
            .unwrap();
            let (port, l) = listener;
            let server = std::thread::spawn(move || {
                let (mut s, peer) = l.accept().unwrap();
                s.write_all(b"across").unwrap();
                peer
            });
            veth.enter_client().unwrap();
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let mut got = String::new();
            c.read_to_string(&mut got).unwrap();
            veth.leave().unwrap();
            assert_eq!(got, "across");
            let peer = server.join().unwrap();
            assert_eq!(peer.ip().to_string(), "127.10.0.2", "it came over the veth");
        }
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let list = String::from_utf8_lossy(&list.stdout);
        assert!(
            !list.contains(&names.0) && !list.contains(&names.1),
            "{list}"
        );
    }
}
