//! Rounds run beside other work are told apart: a CPU hog pinned to the server's CPU
//! for a whole `ringway bench` run makes every round *contended* (other processes took
//! a share of the benchmark's CPUs), and contended rounds are shown but never ranked,
//! so the headline gives no timed verdict and says why.
//!
//! On this machine a build beside the suite flipped three verdicts between two default
//! runs (S7 16 KiB, S9 50%, S10 x1); the rule is what keeps such runs from ranking.

mod common;
use common::ringway_binary;
use std::process::{Child, Command, Stdio};

/// A process spinning on one CPU, stopped (by its pid) when dropped.
struct Hog(Child);

impl Hog {
    fn on(cpu: &str) -> Hog {
        let child = Command::new("taskset")
            .args(["-c", cpu, "yes"])
            .stdout(Stdio::null())
            .spawn()
            .expect("taskset and yes (util-linux, coreutils)");
        Hog(child)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn rounds_beside_a_cpu_hog_are_contended_and_not_ranked() {
    let ringway = ringway_binary();
    let out = std::env::temp_dir().join(format!("ringway-bench-hog-{}", std::process::id()));
    let hog = Hog::on("0");
    let run = Command::new(&ringway)
        .args([
            "bench",
            "--scenario",
            "S5",
            "--peers",
            "ringway-uring,ringway-epoll",
        ])
        .args(["--server-cpus", "0", "--client-cpus", "1"])
        .args(["--rounds", "3", "--duration", "0.5", "--warmup", "0.2"])
        .args(["--no-progress", "--no-counted"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    drop(hog);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "ringway bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let rounds = json["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 6, "3 rounds of 2 peers");
    for r in rounds {
        // The hog had half of CPU 0 at least: a quarter of the two CPUs' time.
        assert_eq!(r["contended"], true, "{r}");
        assert!(r["foreign_cpu_ms"].as_f64().unwrap() > 0.0, "{r}");
    }
    for row in json["rows"].as_array().unwrap() {
        assert_eq!(row["contended_rounds"].as_u64(), Some(3), "{row}");
    }
    let s5 = json["headline"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["scenario"] == "S5")
        .expect("a headline for S5")
        .clone();
    assert!(s5["timed"].is_null(), "no pair of rounds is usable: {s5}");
    assert!(s5["verdict"].is_null(), "{s5}");
    assert!(
        stdout.contains("other processes used the benchmark's CPUs in 6 of its 6 rounds"),
        "{stdout}"
    );
    assert!(stdout.contains("contended: rounds in which"), "{stdout}");
    std::fs::remove_dir_all(&out).unwrap();
}
