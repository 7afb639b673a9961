//! A connection of either protocol, opened and timed the same way.

use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;

use super::core_phase::CorePhase;
use super::echo::{EchoConn, Messages};
use super::http::{HttpConn, Outcome};
use super::plan::Mode;
use crate::conn::Conn;
use crate::error::RequestFailure;
use crate::rng::Rng;
use crate::stats::record;

/// An open connection, HTTP or echo.
pub(super) enum Session {
    /// HTTP/1.1.
    Http(HttpConn),
    /// Raw echo.
    Echo(EchoConn),
}

impl Session {
    /// Connects to target `t` (counting the connection and its connect time). On
    /// failure the error is counted as one failed attempt; if this core never managed
    /// to connect, the run is marked as unable to start.
    pub(super) async fn connect(phase: &CorePhase, t: usize, slot: usize) -> Option<Session> {
        let plan = &phase.plan;
        let target = &plan.targets[t];
        let t0 = Instant::now();
        let conn = match Conn::connect(target.addr, plan.tls[t].as_ref(), plan.timeout).await {
            Ok(c) => c,
            Err(e) => {
                phase.fail(RequestFailure::Connect, 1);
                if !phase.ever_connected.get() {
                    phase
                        .fatal
                        .borrow_mut()
                        .get_or_insert_with(|| format!("{}: {e}", target.addr));
                }
                return None;
            }
        };
        phase.ever_connected.set(true);
        {
            let mut s = phase.stats.borrow_mut();
            record(&mut s.connect, t0.elapsed());
            s.connections += 1;
        }
        Some(match plan.mode {
            Mode::Http => {
                let expect: Option<Rc<[u8]>> = plan.expect.as_deref().map(Rc::from);
                Session::Http(HttpConn::new(conn, expect))
            }
            Mode::Echo(size) => {
                let one: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
                Session::Echo(EchoConn::new(
                    conn,
                    Messages::Fixed {
                        one: Bytes::from(one),
                    },
                ))
            }
            Mode::Framed(seed) => {
                let conns = phase.stats.borrow().connections;
                let rng = Rng::new(seed ^ ((slot as u64) << 32) ^ conns);
                Session::Echo(EchoConn::new(conn, Messages::Framed(rng)))
            }
        })
    }

    /// Sends `k` requests (or echo messages) and waits for every answer.
    pub(super) async fn exchange(
        &mut self,
        phase: &CorePhase,
        first: usize,
        k: usize,
        intended: Option<Instant>,
    ) -> Outcome {
        match self {
            Session::Http(h) => h.exchange(phase, first, k, intended).await,
            Session::Echo(e) => e.exchange(phase, k, intended).await,
        }
    }
}
