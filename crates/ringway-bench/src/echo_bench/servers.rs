//! The servers under measurement ("peers") and how to start them.
//!
//! A peer is a name and a command line with a `{port}` placeholder. The defaults are the
//! ringway CLI on both backends and this crate's own echo servers, all found in the
//! directory of the running `echo-bench` executable (cargo puts every binary of a
//! profile in the same directory). A peer whose program is missing is skipped with a
//! hint on how to build it rather than failing the whole run.

use std::path::{Path, PathBuf};

/// A server under measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Short name used in tables and in `--peers`.
    pub name: String,
    /// Command line; every `{port}` is replaced by the port to bind on 127.0.0.1.
    pub argv: Vec<String>,
    /// What to tell the user when the program does not exist.
    pub build_hint: String,
}

impl Peer {
    /// The command line for a server bound to `port`.
    pub fn command(&self, port: u16) -> Vec<String> {
        let port = port.to_string();
        self.argv
            .iter()
            .map(|a| a.replace("{port}", &port))
            .collect()
    }

    /// `Err(reason)` if the peer cannot be started because its program is missing.
    pub fn check_available(&self) -> Result<(), String> {
        let program = self
            .argv
            .first()
            .ok_or_else(|| "empty command line".to_string())?;
        let path = Path::new(program);
        // A bare name is looked up in PATH at spawn time; only check explicit paths.
        if path.components().count() > 1 && !path.is_file() {
            return Err(format!("{} not found; {}", path.display(), self.build_hint));
        }
        Ok(())
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The default peers, with their programs in `bin_dir`.
pub fn default_peers(bin_dir: &Path) -> Vec<Peer> {
    let bin = |name: &str| -> String { bin_dir.join(name).display().to_string() };
    let own_hint = "build it first: cargo build --release -p ringway-bench".to_string();
    let cli_hint = "build ringway-cli first: cargo build --release -p ringway-cli".to_string();
    let bind = "--bind 127.0.0.1:{port}";
    let mk = |name: &str, cmd: String, hint: &String| Peer {
        name: name.to_string(),
        argv: words(&cmd),
        build_hint: hint.clone(),
    };
    vec![
        mk(
            "ringway-uring",
            format!("{} echo {bind} --threads 1 --backend uring", bin("ringway")),
            &cli_hint,
        ),
        mk(
            "ringway-epoll",
            format!("{} echo {bind} --threads 1 --backend epoll", bin("ringway")),
            &cli_hint,
        ),
        mk("tokio", format!("{} {bind}", bin("echo-tokio")), &own_hint),
        mk(
            "monoio",
            format!("{} {bind}", bin("echo-monoio")),
            &own_hint,
        ),
        mk(
            "monoio-coop",
            format!("{} {bind} --coop-taskrun", bin("echo-monoio")),
            &own_hint,
        ),
        mk("floor", format!("{} {bind}", bin("echo-floor")), &own_hint),
    ]
}

/// Parses a user-defined peer, `NAME=COMMAND LINE WITH {port}`.
pub fn parse_custom_peer(spec: &str) -> Result<Peer, String> {
    let (name, cmd) = spec
        .split_once('=')
        .ok_or_else(|| format!("peer spec {spec:?} is not NAME=COMMAND"))?;
    let name = name.trim();
    if name.is_empty() || name.contains(',') {
        return Err(format!("bad peer name {name:?}"));
    }
    let argv = words(cmd);
    if argv.is_empty() {
        return Err(format!("peer {name} has an empty command"));
    }
    if !argv.iter().any(|a| a.contains("{port}")) {
        return Err(format!("peer {name}: the command must contain {{port}}"));
    }
    Ok(Peer {
        name: name.to_string(),
        argv,
        build_hint: "check the command given with --peer".to_string(),
    })
}

/// Keeps the peers named in `selection` (comma-separated), in the order given there.
/// An empty selection keeps them all.
pub fn select(peers: &[Peer], selection: Option<&str>) -> Result<Vec<Peer>, String> {
    let Some(selection) = selection else {
        return Ok(peers.to_vec());
    };
    let mut out = Vec::new();
    for name in selection
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let peer = peers.iter().find(|p| p.name == name).ok_or_else(|| {
            let known: Vec<&str> = peers.iter().map(|p| p.name.as_str()).collect();
            format!("unknown peer {name:?}; known: {}", known.join(", "))
        })?;
        if !out.contains(peer) {
            out.push(peer.clone());
        }
    }
    if out.is_empty() {
        return Err("no peer selected".to_string());
    }
    Ok(out)
}

/// The directory holding the running executable (and so the other binaries).
pub fn bin_dir() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(exe
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_commands_substitute_port() {
        let peers = default_peers(Path::new("/t/release"));
        let uring = &peers[0];
        assert_eq!(uring.name, "ringway-uring");
        assert_eq!(
            uring.command(4321).join(" "),
            "/t/release/ringway echo --bind 127.0.0.1:4321 --threads 1 --backend uring"
        );
        let coop = peers.iter().find(|p| p.name == "monoio-coop").unwrap();
        assert_eq!(
            coop.command(9).join(" "),
            "/t/release/echo-monoio --bind 127.0.0.1:9 --coop-taskrun"
        );
    }

    #[test]
    fn missing_program_is_reported_with_hint() {
        let peers = default_peers(Path::new("/nonexistent/dir"));
        let err = peers[0].check_available().unwrap_err();
        assert!(err.contains("/nonexistent/dir/ringway not found"), "{err}");
        assert!(
            err.contains("cargo build --release -p ringway-cli"),
            "{err}"
        );
        let tokio = peers.iter().find(|p| p.name == "tokio").unwrap();
        assert!(tokio
            .check_available()
            .unwrap_err()
            .contains("-p ringway-bench"));
        // A bare program name is left to PATH lookup.
        let custom = parse_custom_peer("x=sh -c {port}").unwrap();
        assert_eq!(custom.check_available(), Ok(()));
    }

    #[test]
    fn selection_keeps_order_and_rejects_unknown() {
        let peers = default_peers(Path::new("/b"));
        let sel = select(&peers, Some("floor,tokio,floor")).unwrap();
        let names: Vec<_> = sel.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["floor", "tokio"]);
        assert!(select(&peers, Some("nginx"))
            .unwrap_err()
            .contains("unknown peer"));
        assert_eq!(select(&peers, None).unwrap().len(), peers.len());
    }

    #[test]
    fn custom_peer_needs_port_placeholder() {
        let p = parse_custom_peer("nc = ncat -l 127.0.0.1 {port}").unwrap();
        assert_eq!(p.name, "nc");
        assert_eq!(p.command(7), ["ncat", "-l", "127.0.0.1", "7"]);
        assert!(parse_custom_peer("nc=ncat -l").is_err());
        assert!(parse_custom_peer("no-equals-sign").is_err());
    }
}
