//! `--profile PEER`: the peer's server recorded under `perf record -e cpu-clock -g`
//! during one client run of a scenario, folded with inferno's perf collapser and drawn
//! as an SVG flamegraph (inferno) that the report embeds. Hardware counters are not
//! available on this kind of VM; the cpu-clock software event is.

use std::io::BufReader;
use std::time::Duration;

use crate::measure::process::{send_signal, Watched};
use crate::measure::procstat::process_tree;
use crate::suite::progress::Progress;
use crate::suite::registry::{LaunchCtx, PeerSpec};
use crate::suite::results::ProfileInfo;
use crate::suite::run::bring_up::{bring_up, stop_tree};
use crate::suite::run::client;
use crate::suite::run::env::{sizing, VariantEnv};
use crate::suite::scenarios::{select, Variant};

/// The variant to profile: the one named, else S5 c50.
pub fn variant_for(catalogue: &[Variant], name: Option<&str>) -> Result<Variant, String> {
    let picked = select(catalogue, Some(name.unwrap_or("S5:c50")), false)?;
    picked
        .into_iter()
        .next()
        .ok_or_else(|| "--profile-scenario names no variant".to_string())
}

/// Folds `perf script` output and draws the flamegraph; returns (svg, samples).
pub fn flamegraph(perf_script: &[u8], title: &str) -> Result<(String, u64), String> {
    use inferno::collapse::Collapse;
    let mut folded = Vec::new();
    inferno::collapse::perf::Folder::default()
        .collapse(BufReader::new(perf_script), &mut folded)
        .map_err(|e| format!("folding perf script: {e}"))?;
    let text = String::from_utf8_lossy(&folded);
    // A sample starts with an unindented header line (comm pid time: period event:).
    let samples = String::from_utf8_lossy(perf_script)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace) && !l.starts_with('#'))
        .count() as u64;
    if samples == 0 {
        return Err("perf recorded no samples".into());
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut svg)
        .map_err(|e| format!("flamegraph: {e}"))?;
    Ok((String::from_utf8_lossy(&svg).into_owned(), samples))
}

/// Records `peer` in `v` and returns its flamegraph.
pub fn record(
    env: &VariantEnv,
    v: &Variant,
    peer: &PeerSpec,
    ctx: &LaunchCtx,
    progress: &Progress,
) -> Result<ProfileInfo, String> {
    progress.set_message(format!("profiling {} in {}", peer.name, v.id()));
    let mut live =
        bring_up(env, v, peer, ctx).map_err(|nm| format!("{}: {}", nm.status, nm.reason))?;
    let data = env.work_dir.join(format!("perf-{}.data", live.server.port));
    let pids = process_tree(live.server.proc.pid())
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let argv: Vec<String> = ["perf", "record", "-e", "cpu-clock", "-g", "-p", &pids, "-o"]
        .iter()
        .map(|s| s.to_string())
        .chain([data.display().to_string()])
        .collect();
    let mut perf = Watched::spawn_in(Some(&env.client_cpus), &argv, &[], None)
        .map_err(|e| format!("cannot start perf record: {e}"))?;
    // perf record says nothing once attached; the server is idle until the client
    // starts, so the samples lost to attaching are idle ones.
    std::thread::sleep(Duration::from_millis(500));
    let args = client::load_args(
        v.service,
        &v.shape,
        live.server.port,
        sizing(env, v, &live),
        false,
    );
    let run = client::run(
        &env.ringway,
        Some(&env.client_cpus),
        &args,
        Duration::from_secs(120),
    );
    let _ = send_signal(perf.pid(), libc::SIGINT);
    let _ = perf.wait_timeout(Duration::from_secs(30));
    let _ = perf.stop(Duration::from_secs(2));
    stop_tree(&mut live.server);
    run?;
    let script = std::process::Command::new("perf")
        .args(["script", "-i"])
        .arg(&data)
        .output()
        .map_err(|e| format!("perf script: {e}"))?;
    let _ = std::fs::remove_file(&data);
    let (svg, samples) = flamegraph(&script.stdout, &format!("{} — {}", peer.name, v.id()))?;
    Ok(ProfileInfo {
        peer: peer.name.to_string(),
        variant: v.id(),
        samples,
        svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_perf_script_into_a_flamegraph() {
        // Two samples in the `perf script` format (comm pid time: period event: stack).
        let script = b"srv 42 1.000: 250000 cpu-clock:\n\
            \tffffffff81000000 tcp_sendmsg ([kernel.kallsyms])\n\
            \t55555555 main (/bin/srv)\n\n\
            srv 42 1.001: 250000 cpu-clock:\n\
            \t55555556 parse (/bin/srv)\n\
            \t55555555 main (/bin/srv)\n\n";
        let (svg, samples) = flamegraph(script, "test").unwrap();
        assert_eq!(samples, 2);
        assert!(svg.contains("<svg") && svg.contains("tcp_sendmsg") && svg.contains("parse"));
        assert!(flamegraph(b"", "empty").is_err());
    }

    #[test]
    fn default_profile_variant_is_s5_c50() {
        let cat = crate::suite::scenarios::catalogue();
        assert_eq!(variant_for(&cat, None).unwrap().id(), "S5 c50");
        assert_eq!(variant_for(&cat, Some("S8")).unwrap().id(), "S8 p16");
    }
}
