//! One HTTP connection of the engine: send `k` requests back to back, then read until
//! their `k` responses are framed, timing each from its intended send time.

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use super::core_phase::CorePhase;
use crate::conn::Conn;
use crate::error::RequestFailure;
use ringway_http::client::{CompleteResponse, ResponseParser};

/// How an exchange ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The connection can carry more requests.
    Open,
    /// The server closed it (after answering everything): reconnect.
    Closed,
    /// Failed: the errors are counted; drop the connection.
    Failed,
}

/// A request on the wire.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flight {
    /// When it was meant to leave (open loop), else when it left.
    pub intended: Instant,
    /// When it left.
    pub sent: Instant,
}

/// An HTTP connection with its framing state.
pub(super) struct HttpConn {
    conn: Conn,
    parser: ResponseParser,
    /// Bytes received but not yet used (a head split across reads).
    carry: Vec<u8>,
    inflight: VecDeque<Flight>,
}

impl HttpConn {
    /// Wraps a connection; bodies are compared with `expect` if given.
    pub(super) fn new(conn: Conn, expect: Option<Rc<[u8]>>) -> Self {
        HttpConn {
            conn,
            parser: ResponseParser::new(expect),
            carry: Vec::new(),
            inflight: VecDeque::new(),
        }
    }

    /// Sends `k` requests (URLs from `first` on) and waits for their responses.
    pub(super) async fn exchange(
        &mut self,
        phase: &CorePhase,
        first: usize,
        k: usize,
        intended: Option<Instant>,
    ) -> Outcome {
        let bytes = phase.request_bytes(first, k);
        let len = bytes.len() as u64;
        let sent = Instant::now();
        if self.conn.send(bytes).await.is_err() {
            phase.fail(RequestFailure::Write, k);
            return Outcome::Failed;
        }
        phase.stats.borrow_mut().bytes_written += len;
        let intended = intended.unwrap_or(sent);
        self.inflight
            .extend(std::iter::repeat(Flight { intended, sent }).take(k));
        let result = ringway::time::timeout(phase.plan.timeout, self.receive(phase)).await;
        let outcome = match result {
            Ok(Ok(true)) => Outcome::Closed,
            Ok(Ok(false)) => Outcome::Open,
            Ok(Err(class)) => {
                phase.fail(class, self.inflight.len());
                Outcome::Failed
            }
            Err(_) => {
                phase.fail(RequestFailure::Timeout, self.inflight.len());
                Outcome::Failed
            }
        };
        self.inflight.clear();
        outcome
    }

    /// Reads until every request in flight is answered. `Ok(true)`: the connection is
    /// finished (the server closed or said `Connection: close`).
    async fn receive(&mut self, phase: &CorePhase) -> Result<bool, RequestFailure> {
        while !self.inflight.is_empty() {
            match self.conn.recv().await {
                Err(_) => return Err(RequestFailure::Read),
                Ok(None) => {
                    match self.parser.eof() {
                        Ok(Some(done)) => self.complete(phase, &done, Instant::now()),
                        Ok(None) => {}
                        Err(_) => return Err(RequestFailure::Framing),
                    }
                    return if self.inflight.is_empty() {
                        Ok(true)
                    } else {
                        Err(RequestFailure::Read)
                    };
                }
                Ok(Some(chunk)) => {
                    phase.stats.borrow_mut().bytes_read += chunk.len() as u64;
                    if self.process(phase, &chunk)? {
                        return if self.inflight.is_empty() {
                            Ok(true)
                        } else {
                            Err(RequestFailure::Read)
                        };
                    }
                }
            }
        }
        Ok(false)
    }

    /// Frames what arrived, in place when nothing is carried over. `Ok(true)` when a
    /// response ended the connection.
    fn process(&mut self, phase: &CorePhase, data: &[u8]) -> Result<bool, RequestFailure> {
        // Every response completed by these bytes arrived now: one clock read for all.
        let now = Instant::now();
        if self.carry.is_empty() {
            let (used, closed) = self.parse(phase, data, now)?;
            if !closed {
                self.carry.extend_from_slice(&data[used..]);
            }
            Ok(closed)
        } else {
            let mut carry = std::mem::take(&mut self.carry);
            carry.extend_from_slice(data);
            let (used, closed) = self.parse(phase, &carry, now)?;
            carry.drain(..used);
            self.carry = carry;
            Ok(closed)
        }
    }

    fn parse(
        &mut self,
        phase: &CorePhase,
        data: &[u8],
        now: Instant,
    ) -> Result<(usize, bool), RequestFailure> {
        let mut pos = 0;
        while pos < data.len() {
            if self.inflight.is_empty() {
                // Bytes nobody asked for: the framing is lost.
                return Err(RequestFailure::Framing);
            }
            let (used, done) = self
                .parser
                .feed(&data[pos..], phase.plan.head)
                .map_err(|_| RequestFailure::Framing)?;
            pos += used;
            match done {
                Some(d) => {
                    self.complete(phase, &d, now);
                    if d.close {
                        return Ok((pos, true));
                    }
                }
                None if used == 0 => break,
                None => {}
            }
        }
        Ok((pos, false))
    }

    fn complete(&mut self, phase: &CorePhase, d: &CompleteResponse, now: Instant) {
        let f = self
            .inflight
            .pop_front()
            .expect("a response answers a request");
        let ok = d.body_ok != Some(false);
        phase.complete(f.intended, f.sent, now, Some(d.status), ok);
    }
}
