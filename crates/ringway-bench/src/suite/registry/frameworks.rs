//! The Python frameworks of S15: one ASGI app (plaintext and JSON) under uvicorn on
//! ringway's loop, uvloop, rloop and asyncio; the same two endpoints on aiohttp's server
//! on each loop; and granian serving the same app (its default loop and uvloop). Every
//! server is `crates/ringway-bench/python/serve.py`, run by the Python of a virtual
//! environment that the suite makes itself ([`ensure_env`]): Python 3.12, uvicorn,
//! httptools, aiohttp, granian, uvloop and rloop from PyPI, and a release build of
//! ringway's extension (maturin, from `crates/ringway-py`).
//!
//! A missing environment that cannot be made, or a module that does not import in it,
//! makes the peer [`Launch::Unavailable`] with the reason, never a silent skip.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::measure::launch::{LaunchSpec, Ready};
use crate::suite::registry::spec::{Launch, Service};

/// The packages S15's environment installs from PyPI.
pub const PACKAGES: &[&str] = &[
    "uvicorn",
    "httptools",
    "aiohttp",
    "granian",
    "uvloop",
    "rloop",
    "maturin>=1.7,<2",
];

/// Which server runs the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// uvicorn (httptools) on a loop.
    Uvicorn,
    /// aiohttp's own server on a loop.
    Aiohttp,
    /// granian (a Rust HTTP server on tokio) running the ASGI app on a loop.
    Granian,
}

impl Server {
    /// `serve.py --server`.
    pub fn name(self) -> &'static str {
        match self {
            Server::Uvicorn => "uvicorn",
            Server::Aiohttp => "aiohttp",
            Server::Granian => "granian",
        }
    }
}

/// The workspace's root (this crate is `crates/ringway-bench`).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The environment's directory: under the workspace's `target/`, made once and kept.
pub fn env_dir() -> PathBuf {
    match std::env::var_os("RINGWAY_S15_ENV") {
        Some(d) => PathBuf::from(d),
        None => workspace().join("target/bench-python/s15"),
    }
}

/// The environment's interpreter.
pub fn env_python(dir: &Path) -> PathBuf {
    dir.join("bin/python")
}

/// `serve.py`.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python/serve.py")
}

/// A Python 3.12 to make the environment with: `PYTHON312`, else pyenv's, else the
/// one on `PATH`.
fn python312() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PYTHON312") {
        return Some(PathBuf::from(p));
    }
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))?;
    let found = std::fs::read_dir(root.join("versions"))
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("3.12."))
        })
        .map(|p| p.join("bin/python3.12"))
        .find(|p| p.is_file());
    found.or_else(|| Some(PathBuf::from("python3.12")))
}

/// Runs `cmd`, `Err` with its stderr's tail when it fails.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let tail: String = err.lines().rev().take(6).collect::<Vec<_>>().join(" | ");
    Err(format!("{what} failed ({}): {tail}", out.status))
}

/// The modules that import in the environment, asked in one Python process.
fn importable(python: &Path) -> Vec<String> {
    const SCRIPT: &str = "import importlib\nok = []\n\
        for m in ('ringway', 'uvicorn', 'httptools', 'aiohttp', 'granian', 'uvloop', 'rloop'):\n\
        \x20   try:\n\
        \x20       importlib.import_module(m)\n\
        \x20       ok.append(m)\n\
        \x20   except Exception:\n\
        \x20       pass\n\
        print(' '.join(ok))\n";
    Command::new(python)
        .args(["-c", SCRIPT])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Makes the environment if it is not there (a few minutes the first time: the
/// packages from PyPI, ringway's extension built in release); `Ok` with the modules
/// that import in it.
pub fn ensure_env(say: &dyn Fn(String)) -> Result<Vec<String>, String> {
    let dir = env_dir();
    let python = env_python(&dir);
    let modules = if python.is_file() {
        importable(&python)
    } else {
        Vec::new()
    };
    if modules.iter().any(|m| m == "ringway") && modules.iter().any(|m| m == "uvicorn") {
        return Ok(modules);
    }
    say(format!(
        "S15: making the Python environment {} (PyPI packages and a release build of ringway's extension; minutes, once)",
        dir.display()
    ));
    let base = python312().ok_or("no Python 3.12 found (set PYTHON312)")?;
    if !python.is_file() {
        run(
            Command::new(&base).arg("-m").arg("venv").arg(&dir),
            "python3.12 -m venv",
        )?;
    }
    // rloop does not build everywhere: installed on its own so its failure leaves the
    // others.
    let pip = |pkgs: &[&str]| {
        run(
            Command::new(&python)
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
                .args(pkgs),
            &format!("pip install {}", pkgs.join(" ")),
        )
    };
    pip(&PACKAGES
        .iter()
        .copied()
        .filter(|p| *p != "rloop")
        .collect::<Vec<_>>())?;
    if let Err(e) = pip(&["rloop"]) {
        say(format!(
            "S15: rloop does not install here ({e}); its peers are unavailable"
        ));
    }
    let py_dir = workspace().join("crates/ringway-py");
    run(
        Command::new(dir.join("bin/maturin"))
            .args(["develop", "--release", "-q"])
            .current_dir(&py_dir)
            .env("VIRTUAL_ENV", &dir)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    dir.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
        "maturin develop --release (crates/ringway-py)",
    )?;
    Ok(importable(&python))
}

/// The registry's launch function of the S15 peer running `server` on `lp`, given the
/// modules that import in the environment (`None`: the environment is not there).
pub fn launch(service: Service, server: Server, lp: &str, modules: Option<&[String]>) -> Launch {
    let Service::Asgi(_) = service else {
        return Launch::NotApplicable("a Python framework serves the S15 variants only");
    };
    let Some(modules) = modules else {
        return Launch::Unavailable(format!(
            "no S15 environment at {} (the suite makes it when S15 runs)",
            env_dir().display()
        ));
    };
    let loop_module = if lp == "asyncio" || lp == "auto" {
        None
    } else {
        Some(lp)
    };
    for m in [Some(server.name()), loop_module].into_iter().flatten() {
        if !modules.iter().any(|x| x == m) {
            return Launch::Unavailable(format!("{m} does not import in {}", env_dir().display()));
        }
    }
    Launch::Run(LaunchSpec {
        argv: vec![
            env_python(&env_dir()).display().to_string(),
            script().display().to_string(),
            "--server".into(),
            server.name().into(),
            "--loop".into(),
            lp.into(),
            "--port".into(),
            "{port}".into(),
        ],
        ready: Ready::PortOpen,
        ..LaunchSpec::new(Vec::new())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::canned::App;
    use crate::suite::registry::spec::Endpoint;

    #[test]
    fn a_missing_environment_or_module_is_unavailable_and_only_s15_applies() {
        let asgi = Service::Asgi(Endpoint::Plaintext);
        assert!(matches!(
            launch(Service::Http(App::Hello), Server::Uvicorn, "uvloop", None),
            Launch::NotApplicable(_)
        ));
        assert!(matches!(
            launch(asgi, Server::Uvicorn, "uvloop", None),
            Launch::Unavailable(_)
        ));
        let some: Vec<String> = ["uvicorn", "aiohttp", "ringway"].map(String::from).into();
        match launch(asgi, Server::Granian, "uvloop", Some(&some)) {
            Launch::Unavailable(why) => assert!(why.starts_with("granian does not import")),
            other => panic!("{other:?}"),
        }
        match launch(asgi, Server::Uvicorn, "uvloop", Some(&some)) {
            Launch::Unavailable(why) => assert!(why.starts_with("uvloop does not import")),
            other => panic!("{other:?}"),
        }
        let Launch::Run(spec) = launch(asgi, Server::Aiohttp, "ringway", Some(&some)) else {
            panic!("aiohttp on ringway's loop runs")
        };
        let line = spec.command(7).join(" ");
        assert!(
            line.ends_with("python/serve.py --server aiohttp --loop ringway --port 7"),
            "{line}"
        );
        assert_eq!(spec.ready, Ready::PortOpen);
        assert!(matches!(
            launch(asgi, Server::Uvicorn, "asyncio", Some(&some)),
            Launch::Run(_)
        ));
    }
}
