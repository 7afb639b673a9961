//! The run's metadata: machine, kernel, mitigations, versions, pinning.

use std::collections::BTreeMap;
use std::fs;

use crate::suite::results::Meta;

/// The CPU model from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// One line per entry of `/sys/devices/system/cpu/vulnerabilities`.
pub fn mitigations() -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir("/sys/devices/system/cpu/vulnerabilities")
        .map(|d| {
            d.flatten()
                .map(|e| {
                    let v = fs::read_to_string(e.path()).unwrap_or_default();
                    format!("{}: {}", e.file_name().to_string_lossy(), v.trim())
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Versions of the peers' crates (build time), rustc, and the tools found.
pub fn versions() -> BTreeMap<String, String> {
    let mut v: BTreeMap<String, String> = env!("RINGWAY_BENCH_CRATE_VERSIONS")
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, val)| (k.to_string(), val.to_string()))
        .collect();
    v.insert("rustc".into(), env!("RINGWAY_BENCH_RUSTC").to_string());
    v.insert("ringway".into(), env!("CARGO_PKG_VERSION").to_string());
    if let Some(nginx) = crate::suite::registry::nginx::find() {
        if let Ok(o) = std::process::Command::new(nginx).arg("-v").output() {
            let text = String::from_utf8_lossy(&o.stderr);
            if let Some(ver) = text.trim().strip_prefix("nginx version: ") {
                v.insert("nginx".into(), ver.to_string());
            }
        }
    }
    for (tool, arg) in [
        ("wrk", "-v"),
        ("valgrind", "--version"),
        ("perf", "--version"),
    ] {
        if let Ok(o) = std::process::Command::new(tool).arg(arg).output() {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            if let Some(first) = text.lines().next().filter(|l| !l.is_empty()) {
                v.insert(tool.into(), first.trim().to_string());
            }
        }
    }
    v
}

/// The workspace commit, when run from a git checkout.
pub fn commit() -> Option<String> {
    let o = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The machine part of [`Meta`].
pub fn machine() -> Meta {
    Meta {
        ringway: match commit() {
            Some(c) => format!("{} ({c})", env!("CARGO_PKG_VERSION")),
            None => env!("CARGO_PKG_VERSION").to_string(),
        },
        unix_time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cpu: cpu_model(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mitigations: mitigations(),
        versions: versions(),
        ..Meta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_name_the_peer_crates_and_rustc() {
        let v = versions();
        assert!(v["rustc"].starts_with("rustc "), "{v:?}");
        assert!(
            v.contains_key("io-uring") && v.contains_key("tokio"),
            "{v:?}"
        );
        let m = machine();
        assert!(!m.kernel.is_empty());
        assert!(m.cpus >= 1);
    }
}
