//! The wrk cross-check: after S5 c50's rounds, each peer is loaded by `wrk -t1 -c50` and
//! then by `ringway load` with the same shape, back to back, and their req/s compared.
//! Two independent clients agreeing within 10% is what says the numbers measure the
//! server, not the client; where they do not, the report says so.

use std::time::Duration;

use crate::suite::results::WrkCheck;
use crate::suite::run::client;
use crate::suite::run::env::{sizing, Live, VariantEnv};
use crate::suite::scenarios::{Shape, Variant};

/// Parses `Requests/sec: 123.45` from wrk's output.
pub fn parse_rps(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs wrk and then ringway load, back to back, against `live` (same shape: closed
/// loop, `conns` connections, the round's duration), and compares their req/s. Measured
/// together, so the host's mood is the same for both.
pub fn cross_check(env: &VariantEnv, v: &Variant, live: &Live) -> Result<WrkCheck, String> {
    let Shape::Closed { conns, pipeline: 1 } = v.shape else {
        return Err("the wrk cross-check needs a closed loop without pipelining".into());
    };
    let secs = env.duration.max(1.0).ceil() as u64;
    let url = format!(
        "http://127.0.0.1:{}{}",
        live.server.port,
        crate::peers::canned::HELLO_PATH
    );
    let o = std::process::Command::new("taskset")
        .args([
            "-c",
            &env.client_cpus,
            "wrk",
            "-t1",
            &format!("-c{conns}"),
            &format!("-d{secs}s"),
            &url,
        ])
        .output()
        .map_err(|e| format!("wrk: {e}"))?;
    let wrk_rps = parse_rps(&String::from_utf8_lossy(&o.stdout))
        .ok_or_else(|| format!("wrk gave no result: {}", String::from_utf8_lossy(&o.stderr)))?;
    let mut s = sizing(env, v, live);
    s.seconds = secs as f64;
    let args = client::load_args(v.service, &v.shape, live.server.port, s, false);
    let run = client::run(
        &env.ringway,
        Some(&env.client_cpus),
        &args,
        Duration::from_secs(secs * 3 + 60),
    )?;
    let load_rps = run.report.rps;
    let ratio = wrk_rps / load_rps.max(1e-9);
    Ok(WrkCheck {
        peer: live.peer.name.to_string(),
        wrk_rps,
        load_rps,
        ratio,
        agrees: (0.9..=1.1).contains(&ratio),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wrk_output() {
        let text = "Running 1s test @ http://127.0.0.1:1/\n  1 threads and 50 connections\n\
                    Requests/sec: 231234.56\nTransfer/sec:     28.45MB\n";
        assert_eq!(parse_rps(text), Some(231234.56));
        assert_eq!(parse_rps("nothing"), None);
    }
}
