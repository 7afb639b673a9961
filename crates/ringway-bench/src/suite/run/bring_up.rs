//! Bringing a peer up for a variant: started on the server cores, its response checked,
//! warmed up; and stopping it with everything it started.

use crate::measure::launch::{self, LaunchSpec, RunningServer, KILL_GRACE};
use crate::measure::procstat::process_tree;
use crate::peers::canned::App;
use crate::suite::registry::{Launch, LaunchCtx, PeerSpec, Service};
use crate::suite::results::NotMeasured;
use crate::suite::run::client::{self, Sizing};
use crate::suite::run::conformance;
use crate::suite::run::env::{limit, Live, VariantEnv};
use crate::suite::scenarios::{Shape, Variant};

/// The pause after each chunk of `ringway serve --hello`'s slow reader in S13's
/// `mix-upload` (`RINGWAY_SLOW_UPLOAD_MS`).
const SLOW_UPLOAD_MS: &str = "10";

/// The record of a peer not measured in `v`.
pub fn not_measured(v: &Variant, peer: &str, status: &str, reason: String) -> NotMeasured {
    NotMeasured {
        peer: peer.to_string(),
        scenario: v.scenario.to_string(),
        variant: v.name.clone(),
        status: status.to_string(),
        reason,
    }
}

/// Stops a server and anything it started (nginx's workers), by pid.
pub fn stop_tree(server: &mut RunningServer) {
    let tree = process_tree(server.proc.pid());
    let _ = server.proc.stop(KILL_GRACE);
    for pid in tree.into_iter().skip(1) {
        // Only processes that descend from our own child: nginx workers whose master
        // was killed before it could stop them.
        let _ = crate::measure::process::send_signal(pid, libc::SIGKILL);
    }
}

/// Starts, checks and warms up one peer; `Err` says why it is not measured.
pub fn bring_up(
    env: &VariantEnv,
    v: &Variant,
    peer: &PeerSpec,
    ctx: &LaunchCtx,
) -> Result<Live, NotMeasured> {
    let spec = match (peer.launch)(ctx, v.service) {
        Launch::Run(mut spec) => {
            if let Shape::Hostile { upload_mb: 1.., .. } = v.shape {
                // S13 mix-upload: `ringway serve --hello` reads `/upload-slow` one chunk
                // every 10 ms (other peers ignore the variable).
                spec.env
                    .push(("RINGWAY_SLOW_UPLOAD_MS".into(), SLOW_UPLOAD_MS.into()));
            }
            LaunchSpec {
                prefix: ctx.server_prefix.clone(),
                ..spec
            }
        }
        Launch::NotApplicable(why) => {
            return Err(not_measured(v, peer.name, "not applicable", why.into()))
        }
        Launch::Unavailable(why) => return Err(not_measured(v, peer.name, "unavailable", why)),
    };
    let mut server = launch::start(&spec, Some(&env.server_cpus))
        .map_err(|e| not_measured(v, peer.name, "failed to start", e))?;
    let check = match v.service {
        Service::Http(app) => {
            conformance::check_http(server.addr(), app, peer.deviations).map(|c| Some(c.size))
        }
        Service::Python(p) if p.is_http() => {
            conformance::check_http(server.addr(), App::Hello, peer.deviations)
                .map(|c| Some(c.size))
        }
        Service::Echo | Service::Python(_) => conformance::check_echo(server.addr()).map(|_| None),
        Service::Asgi(endpoint) => conformance::check_asgi(server.addr(), endpoint).map(Some),
        // The TLS server is the same program as the plain one, checked in the HTTP
        // scenarios; the load's own framing checks every response here.
        Service::Tls => Ok(None),
    };
    let response_bytes = match check {
        Ok(size) => size,
        Err(e) => {
            stop_tree(&mut server);
            return Err(not_measured(v, peer.name, "failed conformance", e));
        }
    };
    let mut live = Live {
        peer: peer.clone(),
        server,
        warmup_rps: None,
        response_bytes,
    };
    let sizing = Sizing {
        seconds: env.warmup,
        warmup_rps: None,
        rate: None,
    };
    let args = client::load_args(v.service, &v.shape, live.server.port, sizing, true);
    match client::run(&env.ringway, Some(&env.client_cpus), &args, limit(env)) {
        Ok(run) => live.warmup_rps = Some(run.report.rps),
        Err(e) => {
            stop_tree(&mut live.server);
            return Err(not_measured(v, peer.name, "failed warm-up", e));
        }
    }
    Ok(live)
}
