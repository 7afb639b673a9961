//! The Python peers of S14: one server process per loop (ringway's asyncio loop, stock
//! asyncio, uvloop, rloop), each `crates/ringway-py/bench/servers.py` (the servers the
//! Python benchmark already has, not a copy) run by the Python of the bench virtual
//! environment that `crates/ringway-py/bench/run --setup-only` prepares: a release
//! build of ringway's extension, uvloop and rloop from PyPI.
//!
//! A missing environment or a loop that is not installed in it is
//! [`Launch::Unavailable`] with the command that fixes it, never a silent skip. Which
//! loops import is asked once per run (one Python process) and remembered.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::measure::launch::{LaunchSpec, Ready};
use crate::suite::registry::spec::{Launch, Service};

/// The command that prepares the Python side, as the user types it from the repository.
pub const SETUP: &str = "crates/ringway-py/bench/run --setup-only";

/// One Python event loop under measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyLoop {
    /// ringway's loop (`ringway.new_event_loop()`).
    Ringway,
    /// The standard library's selector loop (the control).
    Asyncio,
    /// uvloop (the reference).
    Uvloop,
    /// rloop, where it installs.
    Rloop,
}

impl PyLoop {
    /// `servers.py --loop`, and the module that must import.
    pub fn name(self) -> &'static str {
        match self {
            PyLoop::Ringway => "ringway",
            PyLoop::Asyncio => "asyncio",
            PyLoop::Uvloop => "uvloop",
            PyLoop::Rloop => "rloop",
        }
    }
}

/// `crates/ringway-py` of the source tree this suite was built from;
/// `RINGWAY_PY_DIR` overrides it.
pub fn py_dir() -> PathBuf {
    match std::env::var_os("RINGWAY_PY_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../ringway-py"),
    }
}

/// The bench environment's interpreter under `dir`.
pub fn venv_python(dir: &Path) -> PathBuf {
    dir.join(".venv/bench/bin/python")
}

/// What one probe of an interpreter found: the loop modules that import, or why it
/// could not be asked.
type Probe = Result<Vec<String>, String>;

/// The modules that import in the environment of `python`, asked once per interpreter.
fn importable(python: &Path) -> Probe {
    static SEEN: Mutex<Option<HashMap<PathBuf, Probe>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let map = seen.get_or_insert_with(HashMap::new);
    map.entry(python.to_path_buf())
        .or_insert_with(|| probe(python))
        .clone()
}

/// Runs `python` once and lists the loop modules that import there.
fn probe(python: &Path) -> Probe {
    const SCRIPT: &str = "import importlib\n\
        ok = ['asyncio']\n\
        for m in ('ringway', 'uvloop', 'rloop'):\n\
        \x20   try:\n\
        \x20       importlib.import_module(m)\n\
        \x20       ok.append(m)\n\
        \x20   except Exception:\n\
        \x20       pass\n\
        print(' '.join(ok))\n";
    let out = Command::new(python)
        .args(["-c", SCRIPT])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            python.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// Says on stderr, at the start of a run that `needed` a Python variant, that the bench
/// environment is missing and how to make it (the Python peers are then unavailable).
pub fn warn_if_missing(needed: bool) {
    let python = venv_python(&py_dir());
    if needed && !python.is_file() {
        eprintln!(
            "ringway bench: S14 needs the Python bench environment {}; prepare it with: {SETUP} \
             (until then the Python peers are reported unavailable)",
            python.display()
        );
    }
}

/// The registry's launch function of the Python peer running `lp`.
pub fn launch(service: Service, lp: PyLoop) -> Launch {
    launch_in(&py_dir(), service, lp)
}

/// [`launch`] with the ringway-py directory given.
pub fn launch_in(dir: &Path, service: Service, lp: PyLoop) -> Launch {
    let Service::Python(server) = service else {
        return Launch::NotApplicable("a Python loop serves the S14 variants only");
    };
    let script = dir.join("bench/servers.py");
    if !script.is_file() {
        return Launch::Unavailable(format!(
            "{} not found (RINGWAY_PY_DIR names crates/ringway-py)",
            script.display()
        ));
    }
    let python = venv_python(dir);
    if !python.is_file() {
        return Launch::Unavailable(format!(
            "no Python bench environment ({} is missing); prepare it with: {SETUP} \
             (a release build of ringway's extension, uvloop, rloop; a few minutes)",
            python.display()
        ));
    }
    let modules = match importable(&python) {
        Ok(m) => m,
        Err(e) => return Launch::Unavailable(format!("{e}; rebuild it with: {SETUP}")),
    };
    if !modules.iter().any(|m| m == lp.name()) {
        let why = match lp {
            PyLoop::Rloop => format!(
                "rloop does not import in {} (it does not install everywhere: {SETUP} \
                 tries `pip install rloop` and says when it fails)",
                python.display()
            ),
            _ => format!(
                "{} does not import in {}; install it with: {SETUP}",
                lp.name(),
                python.display()
            ),
        };
        return Launch::Unavailable(why);
    }
    Launch::Run(LaunchSpec {
        argv: vec![
            python.display().to_string(),
            script.display().to_string(),
            "--loop".into(),
            lp.name().into(),
            "--mode".into(),
            server.mode().into(),
            "--port".into(),
            "{port}".into(),
        ],
        // servers.py says `PORT n`, not `listening on`: ready when the port accepts.
        ready: Ready::PortOpen,
        ..LaunchSpec::new(Vec::new())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::canned::App;
    use crate::suite::registry::spec::PyServer;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringway-py-peer-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("bench")).unwrap();
        std::fs::write(d.join("bench/servers.py"), b"").unwrap();
        d
    }

    #[test]
    fn a_missing_environment_names_the_setup_command() {
        let d = scratch("missing");
        match launch_in(&d, Service::Python(PyServer::Protocol), PyLoop::Ringway) {
            Launch::Unavailable(why) => assert!(why.contains(SETUP), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            launch_in(&d, Service::Http(App::Hello), PyLoop::Ringway),
            Launch::NotApplicable(_)
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Runs `path` until the kernel lets it: a test thread that forks while this one
    /// still holds the file open for writing makes its child hold that descriptor
    /// until the child's exec, and an exec of the file fails with ETXTBSY meanwhile
    /// (CI failed on this once). Once one exec succeeds no writer is left.
    fn wait_until_executable(path: &Path) {
        for _ in 0..200 {
            match Command::new(path).output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(e) => panic!("cannot run {}: {e}", path.display()),
                Ok(_) => return,
            }
        }
        panic!("{} stayed busy for 2 s", path.display());
    }

    #[test]
    fn a_loop_that_does_not_import_is_unavailable_the_others_run_servers_py() {
        let d = scratch("fake");
        let bin = d.join(".venv/bench/bin");
        std::fs::create_dir_all(&bin).unwrap();
        // A stand-in interpreter: the probe is its only use here; it says which
        // modules import (no rloop).
        let python = bin.join("python");
        std::fs::write(&python, "#!/bin/sh\necho asyncio ringway uvloop\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        wait_until_executable(&python);
        let http = Service::Python(PyServer::TwoWriteHttp);
        let Launch::Run(spec) = launch_in(&d, http, PyLoop::Uvloop) else {
            panic!("uvloop imports")
        };
        let line = spec.command(4242).join(" ");
        assert!(
            line.ends_with("bench/servers.py --loop uvloop --mode http --port 4242"),
            "{line}"
        );
        assert!(line.starts_with(&python.display().to_string()), "{line}");
        assert_eq!(spec.ready, Ready::PortOpen);
        match launch_in(&d, http, PyLoop::Rloop) {
            Launch::Unavailable(why) => assert!(why.contains("rloop does not import"), "{why}"),
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
