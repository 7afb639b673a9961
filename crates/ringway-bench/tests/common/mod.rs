//! What the integration tests that run the `ringway` binary share: where this profile's
//! binaries are, and `ringway` itself, built by the cargo that runs the test.

use std::path::PathBuf;
use std::process::Command;

/// Directory of this profile's binaries (a test runs from `target/<profile>/deps`).
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The `ringway` binary of this profile, built first (`cargo build -p ringway-cli`), so
/// that a test never runs a stale one.
pub(crate) fn ringway_binary() -> PathBuf {
    let dir = profile_dir();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "-p", "ringway-cli", "--bin", "ringway"]);
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("run cargo to build the ringway binary");
    assert!(st.success(), "cargo build -p ringway-cli failed");
    let bin = dir.join("ringway");
    assert!(bin.exists(), "{} missing after the build", bin.display());
    bin
}
