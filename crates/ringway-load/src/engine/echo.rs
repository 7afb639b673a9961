//! One echo connection: send `k` messages back to back (fixed-size, or framed with a
//! random 1–100-byte payload), then check every byte that comes back against what was
//! sent, timing each message from its intended send time.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use super::core_phase::CorePhase;
use super::http::{Flight, Outcome};
use crate::conn::Conn;
use crate::error::RequestFailure;
use crate::rng::Rng;

/// What each message is.
pub(super) enum Messages {
    /// The same `size` bytes every time (`one` is one message).
    Fixed {
        /// One message.
        one: Bytes,
    },
    /// A 2-byte big-endian length then that many random bytes (1–100).
    Framed(Rng),
}

/// An echo connection.
pub(super) struct EchoConn {
    conn: Conn,
    messages: Messages,
    /// Bytes sent and not yet echoed, in order.
    expected: Vec<u8>,
    /// How many of `expected` came back.
    matched: usize,
    /// End offset in `expected` of each message in flight.
    marks: VecDeque<(usize, Flight)>,
}

impl EchoConn {
    /// Wraps a connection.
    pub(super) fn new(conn: Conn, messages: Messages) -> Self {
        EchoConn {
            conn,
            messages,
            expected: Vec::new(),
            matched: 0,
            marks: VecDeque::new(),
        }
    }

    /// Sends `k` messages and waits until all came back intact.
    pub(super) async fn exchange(
        &mut self,
        phase: &CorePhase,
        k: usize,
        intended: Option<Instant>,
    ) -> Outcome {
        self.expected.clear();
        self.matched = 0;
        let sent = Instant::now();
        let intended = intended.unwrap_or(sent);
        for _ in 0..k {
            match &mut self.messages {
                Messages::Fixed { one } => self.expected.extend_from_slice(one),
                Messages::Framed(rng) => {
                    let len = rng.range(1, 100) as usize;
                    self.expected.extend_from_slice(&(len as u16).to_be_bytes());
                    let at = self.expected.len();
                    self.expected.resize(at + len, 0);
                    rng.fill(&mut self.expected[at..]);
                }
            }
            self.marks
                .push_back((self.expected.len(), Flight { intended, sent }));
        }
        let bytes = match (&self.messages, k) {
            (Messages::Fixed { one }, 1) => one.clone(),
            _ => Bytes::copy_from_slice(&self.expected),
        };
        let len = bytes.len() as u64;
        if self.conn.send(bytes).await.is_err() {
            phase.fail(RequestFailure::Write, k);
            self.marks.clear();
            return Outcome::Failed;
        }
        phase.stats.borrow_mut().bytes_written += len;
        let result = ringway::time::timeout(phase.plan.timeout, self.receive(phase)).await;
        let outcome = match result {
            Ok(Ok(())) => Outcome::Open,
            Ok(Err(class)) => {
                phase.fail(class, self.marks.len());
                Outcome::Failed
            }
            Err(_) => {
                phase.fail(RequestFailure::Timeout, self.marks.len());
                Outcome::Failed
            }
        };
        self.marks.clear();
        outcome
    }

    async fn receive(&mut self, phase: &CorePhase) -> Result<(), RequestFailure> {
        while !self.marks.is_empty() {
            let chunk = match self.conn.recv().await {
                Err(_) | Ok(None) => return Err(RequestFailure::Read),
                Ok(Some(c)) => c,
            };
            let now = Instant::now();
            phase.stats.borrow_mut().bytes_read += chunk.len() as u64;
            let end = self.matched + chunk.len();
            if end > self.expected.len() || self.expected[self.matched..end] != *chunk {
                return Err(RequestFailure::Body);
            }
            self.matched = end;
            while let Some(&(mark, f)) = self.marks.front() {
                if mark > self.matched {
                    break;
                }
                self.marks.pop_front();
                phase.complete(f.intended, f.sent, now, None, true);
            }
        }
        Ok(())
    }
}
