//! Records, at build time, the versions of the peers' crates (from the workspace's
//! Cargo.lock) and of rustc, so that every results.json says what was measured.

use std::process::Command;

/// Crates whose versions the report names.
const CRATES: &[&str] = &[
    "io-uring",
    "tokio",
    "hyper",
    "hyper-util",
    "monoio",
    "compio",
    "glommio",
    "may_minihttp",
    "rustls",
];

fn main() {
    let lock = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let mut found: Vec<String> = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            if CRATES.contains(&n.as_str()) {
                found.push(format!("{n}={}", v.trim_matches('"')));
            }
        }
    }
    println!(
        "cargo:rustc-env=RINGWAY_BENCH_CRATE_VERSIONS={}",
        found.join(",")
    );
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=RINGWAY_BENCH_RUSTC={version}");
}
