//! The smoke run of `ringway bench`: two peers (ringway on io_uring and the floor), a
//! second per scenario, every scenario of the default run. It checks what a user gets
//! from the main command: the terminal table with its headline, a `results.json` with a
//! row per peer and scenario with non-zero req/s and the fields the issue names, and an
//! HTML report that parses and holds a chart per scenario.
//!
//! The binaries are this profile's debug builds (slow, but this is about the plumbing,
//! not the figures); `ringway` is built by the test with the cargo that runs it.

mod common;
use common::{profile_dir, ringway_binary};
use std::collections::BTreeSet;
use std::process::Command;

const SCENARIOS: &[&str] = &["S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9"];
const PEERS: &[&str] = &["ringway-uring", "floor"];

#[test]
fn smoke_run_writes_the_table_the_json_and_the_report() {
    let ringway = ringway_binary();
    // The helper binaries the suite starts must sit beside `ringway`.
    for bin in ["http-floor", "echo-floor"] {
        assert!(profile_dir().join(bin).is_file(), "{bin} not built");
    }
    let out = std::env::temp_dir().join(format!("ringway-bench-smoke-{}", std::process::id()));
    let run = Command::new(&ringway)
        .args(["bench", "--peers", &PEERS.join(",")])
        .args([
            "--rounds",
            "1",
            "--duration",
            "1",
            "--warmup",
            "0.2",
            "--no-progress",
            // The counted instructions (valgrind) of debug builds would take minutes.
            "--no-counted",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "ringway bench failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("== Headline: ringway/uring against the best peer"),
        "{stdout}"
    );
    assert!(stdout.contains("== S5 c50"), "{stdout}");

    // results.json: a row per peer and scenario, non-zero req/s, the named fields.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(json["meta"].is_object());
    assert!(json["meta"]["kernel"]
        .as_str()
        .is_some_and(|k| !k.is_empty()));
    let rows = json["rows"].as_array().unwrap();
    let mut seen = BTreeSet::new();
    for r in rows {
        for key in [
            "peer",
            "scenario",
            "rps",
            "latency_us",
            "errors",
            "cpu_us_per_req",
            "syscalls_per_req",
            "ratio_to_ringway",
        ] {
            assert!(r.get(key).is_some(), "row without {key}: {r}");
        }
        for key in ["p50", "p99", "max"] {
            assert!(
                r["latency_us"][key].as_f64().is_some(),
                "latency without {key}: {r}"
            );
        }
        if r["rps"].as_f64().unwrap() > 0.0 {
            seen.insert((
                r["peer"].as_str().unwrap().to_string(),
                r["scenario"].as_str().unwrap().to_string(),
            ));
        }
    }
    for peer in PEERS {
        for s in SCENARIOS {
            assert!(
                seen.contains(&(peer.to_string(), s.to_string())),
                "no row with req/s for {peer} in {s}; not measured: {}",
                json["not_measured"]
            );
        }
    }
    let ringway_s5 = rows
        .iter()
        .find(|r| r["peer"] == "ringway-uring" && r["scenario"] == "S5")
        .unwrap();
    assert_eq!(ringway_s5["ratio_to_ringway"].as_f64(), Some(1.0));

    // The headline's verdicts (from paired rounds), the capacity at a latency bound of
    // both peers, every round's host-stall record.
    let headline = json["headline"].as_array().unwrap();
    let s5 = headline
        .iter()
        .find(|h| h["scenario"] == "S5")
        .expect("a headline for S5");
    // The floor is not a peer to beat: no best peer here, the floor beside, paired.
    assert!(s5["best"].is_null(), "{s5}");
    assert!(s5["floor"].as_f64().is_some(), "{s5}");
    // Paired with the floor in their one round, unless the host took that round from
    // either (a contended or unclean round is never ranked, so it pairs with nothing).
    let rounds = json["rounds"].as_array().unwrap();
    let usable = |peer: &str| {
        rounds.iter().any(|r| {
            r["peer"] == peer
                && r["scenario"] == "S5"
                && r["ok"] == true
                && r["clean"] == true
                && r["contended"] == false
                && r["stalled"] == false
        })
    };
    if usable("ringway-uring") && usable("floor") {
        assert_eq!(s5["floor_paired"]["pairs"].as_u64(), Some(1), "{s5}");
    } else {
        println!("S5's round was contended, unclean or stalled: no pair to check ({s5})");
        assert!(
            s5["floor_paired"].is_null() || s5["floor_paired"]["pairs"].as_u64() <= Some(1),
            "{s5}"
        );
    }
    for h in headline {
        assert!(
            h.get("verdict").is_some() && h.get("timed").is_some(),
            "{h}"
        );
    }
    let capacity = json["capacity"].as_array().unwrap();
    for peer in PEERS {
        let c = capacity.iter().find(|c| c["peer"] == *peer);
        assert!(
            c.is_some_and(|c| c["steps"].as_u64().unwrap_or(0) >= 1),
            "no capacity steps for {peer}: {capacity:?}"
        );
    }
    for r in json["rounds"].as_array().unwrap() {
        assert!(
            r["stalled"].is_boolean() && r["steal_ms"].is_number(),
            "{r}"
        );
    }

    // report.html: well-formed, a chart (an inline SVG) per scenario, the headline first.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc =
        roxmltree::Document::parse_with_options(&html, opts).expect("the report is well-formed");
    for s in SCENARIOS {
        let charts = doc
            .descendants()
            .filter(|n| {
                n.attribute("class") == Some("chart") && n.attribute("data-scenario") == Some(*s)
            })
            .filter(|n| n.children().any(|c| c.tag_name().name() == "svg"))
            .count();
        assert!(charts >= 1, "no chart for {s}");
    }
    let first_h2 = doc
        .descendants()
        .find(|n| n.tag_name().name() == "h2")
        .unwrap();
    assert_eq!(first_h2.attribute("id"), Some("headline"));
    assert!(
        doc.descendants()
            .any(|n| n.attribute("id") == Some("capacity")),
        "the capacity section"
    );
    std::fs::remove_dir_all(&out).unwrap();
}
