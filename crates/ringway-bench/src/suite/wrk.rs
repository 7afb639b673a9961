//! The wrk cross-check: each peer of S5 c50 loaded once more by `wrk -t1 -c50`, its
//! req/s set beside ringway load's median. Two independent clients agreeing within 10%
//! is what says the numbers measure the server, not the client; where they do not, the
//! report says so.

use crate::suite::peers::{LaunchCtx, PeerSpec};
use crate::suite::results::{Row, WrkCheck};
use crate::suite::scenarios::{Shape, Variant};
use crate::suite::variant::{bring_up, stop_tree, VariantEnv};
use crate::suite::Progress;

/// Parses `Requests/sec: 123.45` from wrk's output.
pub fn parse_rps(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs the check for every peer that has an S5 c50 row.
pub fn cross_check(
    env: &VariantEnv,
    v: &Variant,
    peers: &[PeerSpec],
    ctx: &LaunchCtx,
    rows: &[Row],
    progress: &Progress,
) -> Vec<WrkCheck> {
    let Shape::Closed { conns, .. } = v.shape else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for peer in peers {
        let Some(row) = rows.iter().find(|r| {
            r.peer == peer.name && r.scenario == v.scenario && r.variant == v.name && r.rps > 0.0
        }) else {
            continue;
        };
        progress.set_message(format!("wrk cross-check: {}", peer.name));
        let Ok(mut live) = bring_up(env, v, peer, ctx) else {
            continue;
        };
        let secs = env.duration.max(1.0).ceil() as u64;
        let url = format!(
            "http://127.0.0.1:{}{}",
            live.server.port,
            crate::canned::HELLO_PATH
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
            .output();
        stop_tree(&mut live.server);
        let Some(wrk_rps) = o
            .ok()
            .and_then(|o| parse_rps(&String::from_utf8_lossy(&o.stdout)))
        else {
            progress.println(format!("  wrk against {} gave no result", peer.name));
            continue;
        };
        let ratio = wrk_rps / row.rps;
        out.push(WrkCheck {
            peer: peer.name.to_string(),
            wrk_rps,
            load_rps: row.rps,
            ratio,
            agrees: (0.9..=1.1).contains(&ratio),
        });
    }
    out
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
