//! Preparing a run: the scratch directory and what peers read from it (the nuclei body
//! with its fixed modification time, a TLS certificate), the open-file limit the large
//! scenarios need, the harness pinned beside the client, and the tools found or missing.

use std::fs::{self, File, FileTimes};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::peers::canned::{body_bytes, BODY_FILE, BODY_MTIME_SECS};
use crate::suite::registry::nginx::cpu_list;
use crate::suite::registry::Service;
use crate::suite::results::Meta;
use crate::suite::scenarios::Variant;

/// The scratch directory of a run and what the peers read from it.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// `OUT/work`, canonical; removed at the end of the run.
    pub work_dir: std::path::PathBuf,
    /// The directory holding the nuclei body.
    pub static_dir: std::path::PathBuf,
    /// A certificate and its key, when a variant needs TLS.
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

/// Makes `out` and its scratch directory, writes the body (and a certificate when a
/// variant needs TLS), raises the open-file limit and pins the harness to `client_cpus`.
pub fn prepare(out: &Path, client_cpus: &str, variants: &[Variant]) -> Result<Scratch, String> {
    fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let work_dir = out.join("work");
    fs::create_dir_all(&work_dir).map_err(|e| format!("{}: {e}", work_dir.display()))?;
    let work_dir = work_dir.canonicalize().map_err(|e| e.to_string())?;
    let static_dir = work_dir.join("static");
    write_body(&static_dir)?;
    let tls = if variants.iter().any(|v| v.service == Service::Tls) {
        Some(write_tls(&work_dir)?)
    } else {
        None
    };
    raise_fd_limit();
    pin_self(client_cpus)?;
    Ok(Scratch {
        work_dir,
        static_dir,
        tls,
    })
}

/// Which optional measurements the tools found allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// perf: syscalls per request.
    pub perf: bool,
    /// wrk: the cross-check.
    pub wrk: bool,
    /// `--instructions` asked for and valgrind here.
    pub instructions: bool,
    /// valgrind and callgrind_control are here.
    pub valgrind: bool,
    /// `--profile PEER` asked for and perf here.
    pub profile: Option<String>,
}

/// Names every missing tool (on stderr and in `meta`) and says what the run can count
/// (`profile` and `instructions`: what the run was asked for).
/// A missing tool leaves its figure out, never faked.
pub fn report_tools(
    tools: &[Tool],
    meta: &mut Meta,
    profile: Option<&str>,
    instructions: bool,
) -> Found {
    let present = |name: &str| tools.iter().any(|t| t.name == name && t.present);
    for t in tools.iter().filter(|t| !t.present) {
        let line = format!(
            "{} (for {}): install it with: {}",
            t.name, t.for_what, t.install
        );
        eprintln!("ringway bench: {line}; its column is left out");
        meta.missing_tools.push(line);
    }
    let profile = profile.map(str::to_string).filter(|_| {
        present("perf") || {
            eprintln!(
                "ringway bench: --profile needs perf (apt-get install linux-perf): no flamegraph"
            );
            false
        }
    });
    let instructions = instructions
        && (present("valgrind") && present("callgrind_control")
            || {
                eprintln!("ringway bench: --instructions needs valgrind (apt-get install valgrind): no instructions column");
                false
            });
    Found {
        perf: present("perf"),
        wrk: present("wrk"),
        instructions,
        valgrind: present("valgrind") && present("callgrind_control"),
        profile,
    }
}

/// Writes the nuclei body into `static_dir` with the modification time the canned
/// response assumes (its `ETag` and `Last-Modified` depend on it).
pub fn write_body(static_dir: &Path) -> Result<(), String> {
    fs::create_dir_all(static_dir).map_err(|e| format!("{}: {e}", static_dir.display()))?;
    let path = static_dir.join(BODY_FILE);
    fs::write(&path, body_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    let mtime = UNIX_EPOCH + Duration::from_secs(BODY_MTIME_SECS);
    File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_times(FileTimes::new().set_modified(mtime).set_accessed(mtime)))
        .map_err(|e| format!("setting the mtime of {}: {e}", path.display()))
}

/// Makes a self-signed certificate for `localhost` / `127.0.0.1`; returns (cert, key).
pub fn write_tls(dir: &Path) -> Result<(std::path::PathBuf, std::path::PathBuf), String> {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .map_err(|e| format!("making a certificate: {e}"))?;
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    fs::write(&cert, ck.cert.pem()).map_err(|e| format!("{}: {e}", cert.display()))?;
    fs::write(&key, ck.key_pair.serialize_pem()).map_err(|e| format!("{}: {e}", key.display()))?;
    Ok((cert, key))
}

/// Raises the soft open-file limit to the hard one (children inherit it); returns it.
pub fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit; raising the soft limit up to the hard one
        // needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return raised.rlim_cur;
        }
    }
    lim.rlim_cur
}

/// Pins the calling process (the harness, and the helper threads it starts later) to
/// `cpus`, so that reading a server's output never takes the server's core.
pub fn pin_self(cpus: &str) -> Result<(), String> {
    let list = cpu_list(cpus);
    if list.is_empty() {
        return Err(format!("bad CPU list {cpus:?}"));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it, with CPU
    // numbers checked against its capacity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for c in list {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(format!("CPU {c} out of range"));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "sched_setaffinity: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// The default split: the first half of the CPUs serve, the second half load (on two
/// CPUs: server core 0, client core 1).
pub fn default_cpus() -> (String, String) {
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    if n < 2 {
        return ("0".into(), "0".into());
    }
    let half = n / 2;
    let range = |a: usize, b: usize| {
        if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        }
    };
    (range(0, half - 1), range(half, n - 1))
}

/// A tool the suite uses, and whether it is here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// Program name.
    pub name: &'static str,
    /// What it is needed for.
    pub for_what: &'static str,
    /// The command that installs it.
    pub install: &'static str,
    /// Found on this machine.
    pub present: bool,
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// The optional tools, each looked up.
pub fn tools() -> Vec<Tool> {
    let t = |name, for_what, install| Tool {
        name,
        for_what,
        install,
        present: on_path(name),
    };
    let mut v = vec![
        t(
            "perf",
            "syscalls per request and --profile",
            "apt-get install linux-perf",
        ),
        t(
            "valgrind",
            "instructions per request (the headline's counted evidence, --instructions)",
            "apt-get install valgrind",
        ),
        t(
            "callgrind_control",
            "--instructions",
            "apt-get install valgrind",
        ),
        t("wrk", "the wrk cross-check of S5", "apt-get install wrk"),
    ];
    v.push(Tool {
        name: "nginx",
        for_what: "the nginx peer",
        install: "apt-get install nginx-light",
        present: crate::suite::registry::nginx::find().is_some(),
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_file_has_the_fixed_mtime() {
        let dir = std::env::temp_dir().join(format!("ringway-setup-{}", std::process::id()));
        write_body(&dir).unwrap();
        let meta = fs::metadata(dir.join(BODY_FILE)).unwrap();
        assert_eq!(meta.len() as usize, crate::peers::canned::BODY_LEN);
        let secs = meta.modified().unwrap().duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(secs, Duration::from_secs(BODY_MTIME_SECS));
        let (cert, key) = write_tls(&dir).unwrap();
        assert!(fs::read_to_string(cert)
            .unwrap()
            .contains("BEGIN CERTIFICATE"));
        assert!(fs::read_to_string(key).unwrap().contains("PRIVATE KEY"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cpu_split_and_fd_limit() {
        let (server, client) = default_cpus();
        assert!(!server.is_empty() && !client.is_empty());
        assert!(raise_fd_limit() >= 1024);
        assert!(pin_self("nonsense").is_err());
    }
}
