//! Who is measured: what a peer is to the suite ([`spec`]), every peer in one table
//! ([`list`], **add a peer there**), and the peers that need more than a command line:
//! nginx with its generated configuration ([`nginx`]), the Python loops of S14
//! ([`python`]) and the Python frameworks of S15 ([`frameworks`], whose environment the
//! suite makes).

pub mod frameworks;
pub mod list;
pub mod nginx;
pub mod python;
pub mod spec;

pub use list::{add_baseline, exe_dir, port_ready, registry, select, BASELINE_SUFFIX};
pub use spec::{Deviation, Endpoint, HttpWork, Launch, LaunchCtx, PeerSpec, PyServer, Service};
