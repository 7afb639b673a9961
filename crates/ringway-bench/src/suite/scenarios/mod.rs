//! The scenarios S1–S15 of `docs/benchmarks.md` as concrete loads.
//!
//! Each scenario has one or more *variants* (S5 at 50 and at 1000 connections, S9 at
//! each offered rate); the default run takes the variant marked `default` of each of
//! S1–S9 (one of each seed's shape), `--full` takes them all. A variant names the
//! service it needs from a peer and the shape of the load `ringway load` puts on it.

mod catalogue;
mod notes;
pub mod shape;
pub mod variant;

pub use catalogue::{catalogue, OPEN_LOOP_DEFAULT, OPEN_LOOP_PERCENTS, S15_RATE};
pub use notes::{note, title, TITLES};
pub use shape::Shape;
pub use variant::{Chart, Variant};

/// Scenarios the default run leaves out even though they have default variants: they
/// need what a fresh clone does not have (S14, S15: a Python virtual environment with a
/// release build of ringway's loop). `--scenario S14` runs their default variants,
/// `--full` all of them.
pub const OPT_IN: &[&str] = &["S14", "S15"];

/// The suffix of a variant's name when it runs over the veth pair (`c50@veth`).
pub const VETH_SUFFIX: &str = "@veth";

/// Where a run's traffic goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// Loopback (`lo`), the default.
    Loopback,
    /// Two network namespaces joined by a veth pair, made by the suite (root only).
    Veth,
    /// Every variant on loopback and again over the veth, side by side.
    Both,
}

impl Net {
    /// Parses `loopback`, `veth` or `both`.
    pub fn parse(s: &str) -> Result<Net, String> {
        match s {
            "loopback" | "lo" => Ok(Net::Loopback),
            "veth" => Ok(Net::Veth),
            "both" => Ok(Net::Both),
            other => Err(format!("unknown --net {other:?} (loopback, veth or both)")),
        }
    }
}

/// The variants as `net` runs them: over the veth a variant's name carries
/// [`VETH_SUFFIX`]; with both, each loopback variant is followed by its veth twin.
pub fn on_net(variants: Vec<Variant>, net: Net) -> Vec<Variant> {
    let veth = |v: &Variant| Variant {
        name: format!("{}{VETH_SUFFIX}", v.name),
        title: format!("{} (over a veth pair)", v.title),
        ..v.clone()
    };
    match net {
        Net::Loopback => variants,
        Net::Veth => variants.iter().map(veth).collect(),
        Net::Both => variants.iter().flat_map(|v| [v.clone(), veth(v)]).collect(),
    }
}

/// Picks the variants: `--scenario` names scenarios (`S5`) or variants (`S5:c1000`),
/// comma-separated; without it, the default variants, or all with `full`.
pub fn select(
    all: &[Variant],
    selection: Option<&str>,
    full: bool,
) -> Result<Vec<Variant>, String> {
    let Some(selection) = selection else {
        return Ok(all
            .iter()
            .filter(|v| full || (v.default && !OPT_IN.contains(&v.scenario)))
            .cloned()
            .collect());
    };
    let mut out: Vec<Variant> = Vec::new();
    for item in selection
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let upper = item.to_ascii_uppercase();
        let (scenario, name) = match upper.split_once(':') {
            Some((s, _)) => (s.to_string(), Some(&item[s.len() + 1..])),
            None => (upper.clone(), None),
        };
        let matching: Vec<&Variant> = all
            .iter()
            .filter(|v| v.scenario == scenario)
            .filter(|v| match name {
                Some(n) => v.name.eq_ignore_ascii_case(n),
                None => {
                    full || v.default || !all.iter().any(|o| o.scenario == v.scenario && o.default)
                }
            })
            .collect();
        if matching.is_empty() {
            let known: Vec<String> = all
                .iter()
                .map(|v| format!("{}:{}", v.scenario, v.name))
                .collect();
            return Err(format!(
                "unknown scenario {item:?}; known: S1..S14, or one variant of: {}",
                known.join(", ")
            ));
        }
        for m in matching {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
    }
    // Keep scenario order whatever the order asked.
    out.sort_by_key(|v| all.iter().position(|a| a == v));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::registry::spec::{PyServer, Service};

    #[test]
    fn default_run_has_one_variant_of_each_of_s1_to_s9_and_s9_sweeps() {
        let all = catalogue();
        let def = select(&all, None, false).unwrap();
        for s in ["S1", "S2", "S3", "S4", "S5", "S6", "S8"] {
            assert_eq!(def.iter().filter(|v| v.scenario == s).count(), 1, "{s}");
        }
        // Issue 28: a regression in 16 KiB echo or a connection per request shows on
        // the main job.
        let ids: Vec<String> = def.iter().map(Variant::id).collect();
        for id in ["S7 64B", "S7 16KiB", "S10 x1", "S9 capacity"] {
            assert!(ids.iter().any(|i| i == id), "{id} not in {ids:?}");
        }
        let s9: Vec<&Variant> = def.iter().filter(|v| v.scenario == "S9").collect();
        assert_eq!(
            s9.len(),
            OPEN_LOOP_DEFAULT.len() + 1,
            "the rates and the capacity"
        );
        assert!(def
            .iter()
            .all(|v| !matches!(v.scenario, "S11" | "S12" | "S13" | "S14" | "S15")));
        let full = select(&all, None, true).unwrap();
        assert_eq!(full.len(), all.len());
        for s in ["S10", "S11", "S12", "S13", "S14", "S15"] {
            assert!(full.iter().any(|v| v.scenario == s), "{s}");
        }
    }

    #[test]
    fn selection_by_scenario_and_variant() {
        let all = catalogue();
        let one = select(&all, Some("s5:c1000"), false).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].id(), "S5 c1000");
        let s5 = select(&all, Some("S8,S5"), false).unwrap();
        let ids: Vec<String> = s5.iter().map(Variant::id).collect();
        assert_eq!(ids, ["S5 c50", "S8 p16"], "default variant, scenario order");
        let s5_full = select(&all, Some("S5"), true).unwrap();
        assert_eq!(s5_full.len(), 2);
        let s11 = select(&all, Some("S11"), false).unwrap();
        assert_eq!(
            s11.len(),
            2,
            "a scenario with no default variant runs all of them"
        );
        let err = select(&all, Some("S99"), false).unwrap_err();
        assert!(err.contains("unknown scenario"), "{err}");
    }

    #[test]
    fn s14_selects_the_python_variants_outside_the_default_run() {
        let all = catalogue();
        let s14 = select(&all, Some("s14"), false).unwrap();
        let ids: Vec<String> = s14.iter().map(Variant::id).collect();
        assert_eq!(
            ids,
            [
                "S14 protocol-64B",
                "S14 protocol-1KiB",
                "S14 streams-1KiB",
                "S14 http-2writes"
            ]
        );
        let shapes: Vec<(Service, Shape)> = s14.iter().map(|v| (v.service, v.shape)).collect();
        assert_eq!(
            shapes,
            [
                (
                    Service::Python(PyServer::Protocol),
                    Shape::Echo {
                        conns: 10,
                        size: 64
                    }
                ),
                (
                    Service::Python(PyServer::Protocol),
                    Shape::Echo {
                        conns: 10,
                        size: 1024
                    }
                ),
                (
                    Service::Python(PyServer::Streams),
                    Shape::Echo {
                        conns: 10,
                        size: 1024
                    }
                ),
                (
                    Service::Python(PyServer::TwoWriteHttp),
                    Shape::Closed {
                        conns: 10,
                        pipeline: 1
                    }
                ),
            ]
        );
        // Every S14 variant is a Python service, and only S14 asks for one.
        for v in &all {
            assert_eq!(
                v.scenario == "S14",
                matches!(v.service, Service::Python(_)),
                "{}",
                v.id()
            );
        }
        let full = select(&all, Some("S14"), true).unwrap();
        assert_eq!(
            full.len(),
            all.iter().filter(|v| v.scenario == "S14").count()
        );
        assert!(full.len() > s14.len());
        let one = select(&all, Some("S14:buffered-1kib"), false).unwrap();
        assert_eq!(one[0].service, Service::Python(PyServer::Buffered));
        let mixed = select(&all, Some("S14,S5"), false).unwrap();
        assert_eq!(mixed.first().unwrap().id(), "S5 c50", "scenario order");
    }

    #[test]
    fn titles_cover_every_scenario() {
        for v in catalogue() {
            assert!(!title(v.scenario).is_empty(), "{}", v.scenario);
        }
    }
}
