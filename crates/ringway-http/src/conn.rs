//! The connection state machine: read, parse every complete request, run the handler,
//! append each response to one output buffer, send the whole batch in one operation,
//! repeat. Bodies are framed here (Content-Length or chunked), limits and timeouts are
//! enforced here, and any framing error ends the connection after its error response:
//! the parser never looks for "the next request" in bytes it could not frame.

use std::future::{pending, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use http::{Method, Request};
use ringway::io::Pipe;
use ringway::time::timeout;

use crate::body::Body;
use crate::body_reader::{streamed, BodyReader, Fail, Framing};
use crate::chunked::Decoded;
use crate::error::{ErrorClass, HttpError};
use crate::framing::BodyKind;
use crate::handler::Handler;
use crate::head::{parse_head, Head, HeadGate, Parsed};
use crate::input::Input;
use crate::response::{
    encode, encode_error, push_hex, PendingBody, ReqInfo, StreamFraming, CONTINUE,
};
use crate::select::{race, Either};
use crate::server::Shared;
use crate::shutdown::Watch;
use crate::transport::Transport;

/// Bytes moved per splice: the default capacity of a pipe.
const SPLICE_CHUNK: usize = 64 * 1024;

/// What to do after one exchange.
enum Step {
    /// Serve the next request.
    Next,
    /// Send what is pending, then close politely.
    Close,
    /// Drop the connection now (I/O failure).
    Abort,
}

/// What waiting for input gave.
enum Wait {
    Data,
    Eof,
    Timeout,
    Down,
    Failed(io::Error),
}

/// One connection.
pub(crate) struct Conn<T: Transport, H: Handler> {
    t: T,
    input: Input,
    out: Vec<u8>,
    shared: Arc<Shared>,
    handler: Rc<H>,
    watch: Watch,
    served: u64,
    peer: Option<SocketAddr>,
    gate: HeadGate,
    /// For splicing file bodies to the socket; made at the first one.
    pipe: Option<Pipe>,
}

use std::sync::Arc;

impl<T: Transport, H: Handler> Conn<T, H> {
    pub fn new(
        t: T,
        shared: Arc<Shared>,
        handler: Rc<H>,
        watch: Watch,
        peer: Option<SocketAddr>,
    ) -> Self {
        Conn {
            t,
            input: Input::default(),
            out: Vec::with_capacity(4096),
            shared,
            handler,
            watch,
            served: 0,
            peer,
            gate: HeadGate::default(),
            pipe: None,
        }
    }

    /// Serves the connection to its end.
    pub async fn run(mut self) {
        if self.serve().await {
            self.linger().await;
        }
    }

    /// The main loop; true if the connection should be closed politely.
    async fn serve(&mut self) -> bool {
        let cfg_header = self.shared.cfg.header_timeout;
        let cfg_idle = self.shared.cfg.idle_timeout;
        // The first request's head is due within the header timeout of the accept; a
        // later one within the header timeout of the turn its first bytes were seen
        // waiting (set lazily: a head that parses at once never reads the clock).
        let mut head_deadline = Some(Instant::now() + cfg_header);
        loop {
            let mut close = false;
            while !self.input.is_empty() {
                if !self.gate.should_parse(self.input.bytes(), &self.shared.cfg) {
                    break;
                }
                match parse_head(self.input.bytes(), &self.shared.cfg) {
                    Err(e) => {
                        self.refuse(&e);
                        close = true;
                        break;
                    }
                    Ok(Parsed::Partial) => break,
                    Ok(Parsed::Complete(head, n)) => {
                        head_deadline = None;
                        self.gate.reset();
                        self.input.consume(n);
                        match self.exchange(*head).await {
                            Step::Next => {}
                            Step::Close => {
                                close = true;
                                break;
                            }
                            Step::Abort => return false,
                        }
                    }
                }
            }
            if !self.out.is_empty() && !self.flush().await {
                return false;
            }
            if self.shared.cfg.access_log {
                crate::log::flush();
            }
            if close {
                return true;
            }
            let idle = self.input.is_empty() && head_deadline.is_none();
            if self.input.is_empty() && self.watch.is_down() {
                return true;
            }
            self.input.settle();
            if head_deadline.is_none() && !self.input.is_empty() {
                head_deadline = Some(Instant::now() + cfg_header);
            }
            // Idle between requests (the common wait): a plain timeout, no clock read.
            let limit = match head_deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => cfg_idle,
            };
            match self.wait_input(limit, self.input.is_empty()).await {
                Wait::Data => {}
                Wait::Eof => return false,
                Wait::Down => return true,
                Wait::Timeout if idle => {
                    self.shared.stats.idle_closed();
                    return true;
                }
                Wait::Timeout => {
                    self.refuse(&HttpError::new(ErrorClass::HeaderTimeout, "head too slow"));
                    let _ = self.flush().await;
                    return true;
                }
                Wait::Failed(e) => {
                    self.io_failed(&e);
                    return false;
                }
            }
        }
    }

    /// Reads the body, runs the handler, appends the response.
    async fn exchange(&mut self, head: Head) -> Step {
        self.served += 1;
        let cfg = &self.shared.cfg;
        let keep = head.keep_alive
            && self.served < cfg.max_requests_per_connection
            && !self.watch.is_down();
        // A body already whole in the input goes to the handler as one piece; anything
        // else is streamed to it as it arrives.
        let mut reader = None;
        let body = match head.body {
            BodyKind::None => Body::empty(),
            BodyKind::Length(n) if n > cfg.max_body_size => {
                self.refuse(&HttpError::new(
                    ErrorClass::PayloadTooLarge,
                    "body too large",
                ));
                return Step::Close;
            }
            BodyKind::Length(n) if self.input.bytes().len() as u64 >= n => {
                let b = Bytes::copy_from_slice(&self.input.bytes()[..n as usize]);
                self.input.consume(n as usize);
                Body::full(b)
            }
            kind => {
                let (body, r) = streamed(kind, cfg);
                reader = Some(r);
                body
            }
        };
        if let Some(r) = &reader {
            // If the body still has to arrive, pending responses leave first (they are
            // earlier in the pipeline), with `100 Continue` if the client waits for it.
            // A body already whole in the input needs no wait: the batch stays whole.
            if !r.complete_in(self.input.bytes()) {
                if head.expect_continue {
                    self.out.extend_from_slice(CONTINUE);
                }
                if !self.out.is_empty() && !self.flush().await {
                    return Step::Abort;
                }
            }
        }
        let Head {
            method,
            uri,
            version,
            headers,
            ..
        } = head;
        let is_head = method == Method::HEAD;
        let log = self
            .shared
            .cfg
            .access_log
            .then(|| (method.clone(), uri.to_string()));
        let mut req = Request::new(body);
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.version_mut() = version;
        *req.headers_mut() = headers;
        let handler = self.handler.clone();
        let (resp, failed) = match reader.as_mut() {
            None => (handler.call(req).await, None),
            Some(r) => {
                let mut call = pin!(handler.call(req));
                let mut failed = None;
                let early = {
                    let pump = pin!(self.pump(r, true));
                    match race(call.as_mut(), pump).await {
                        Either::Left(resp) => Some(resp),
                        Either::Right(Ok(())) => None,
                        Either::Right(Err(f)) => {
                            failed = Some(f);
                            None
                        }
                    }
                };
                let resp = match early {
                    Some(resp) => resp,
                    None => call.await,
                };
                // Whatever the handler left unread is still read (and framed), so the
                // next request starts where it should.
                if failed.is_none() {
                    if let Err(f) = self.pump(r, false).await {
                        failed = Some(f);
                    }
                }
                (resp, failed)
            }
        };
        match failed {
            None => {}
            Some(Fail::Abort) => return Step::Abort,
            Some(Fail::Http(e)) => {
                self.refuse(&e);
                return Step::Close;
            }
        }
        let status = resp.status().as_u16();
        let close = !keep || self.watch.is_down();
        let (pending, close, mut sent) = encode(
            &mut self.out,
            resp,
            ReqInfo {
                head: is_head,
                version,
                close,
            },
            self.shared.cfg.server_name.as_deref(),
        );
        self.shared.stats.request();
        if let Some(p) = pending {
            match self.send_stream(p).await {
                Some(n) => sent = n,
                None => return Step::Abort,
            }
        }
        if let Some((m, t)) = log {
            crate::log::line(self.peer, Some((&m, &t, version)), status, sent);
        }
        if close {
            Step::Close
        } else {
            Step::Next
        }
    }

    /// Reads body bytes into the reader's pipe until the body ends. With `pace`, stops
    /// reading while the handler has not taken what is queued. Cancel-safe between
    /// awaits: all state is in `r` and the input.
    async fn pump(&mut self, r: &mut BodyReader, pace: bool) -> Result<(), Fail> {
        let max = self.shared.cfg.max_body_size;
        loop {
            if r.done {
                return Ok(());
            }
            if pace {
                poll_fn(|cx| r.pipe.poll_space(cx)).await;
            }
            let bytes = self.input.bytes();
            let (used, data, finished) = match &mut r.framing {
                Framing::Length(left) => {
                    let take = (bytes.len() as u64).min(*left) as usize;
                    *left -= take as u64;
                    (take, 0..take, *left == 0)
                }
                Framing::Chunked(dec) => match dec.decode(bytes) {
                    Err(e) => {
                        r.fail();
                        return Err(Fail::Http(e));
                    }
                    Ok((n, Decoded::Data(a, b))) => (n, a..b, false),
                    Ok((n, Decoded::Done)) => (n, 0..0, true),
                    Ok((n, Decoded::NeedMore)) => (n, 0..0, false),
                },
            };
            if !data.is_empty() {
                r.received += data.len() as u64;
                if r.received > max {
                    r.fail();
                    return Err(Fail::Http(HttpError::new(
                        ErrorClass::PayloadTooLarge,
                        "body too large",
                    )));
                }
                // Nobody left to read it: frame it, drop it.
                if Rc::strong_count(&r.pipe) > 1 {
                    r.pipe.push(Bytes::copy_from_slice(&bytes[data]));
                }
            }
            self.input.consume(used);
            if finished {
                r.done = true;
                r.pipe.finish(false);
                return Ok(());
            }
            if used == 0 || self.input.is_empty() {
                if let Err(f) = self.wait_body().await {
                    r.fail();
                    return Err(f);
                }
            }
        }
    }

    /// Waits for body bytes within the body timeout.
    async fn wait_body(&mut self) -> Result<(), Fail> {
        self.input.settle();
        match self.wait_input(self.shared.cfg.body_timeout, false).await {
            Wait::Data => Ok(()),
            Wait::Eof | Wait::Down => Err(Fail::Abort),
            Wait::Timeout => Err(Fail::Http(HttpError::new(
                ErrorClass::BodyTimeout,
                "body too slow",
            ))),
            Wait::Failed(e) => {
                self.io_failed(&e);
                Err(Fail::Abort)
            }
        }
    }

    /// Waits for input for at most `left` (and for shutdown, if `watch_down`).
    async fn wait_input(&mut self, left: std::time::Duration, watch_down: bool) -> Wait {
        let watch = &self.watch;
        let down = async move {
            if watch_down {
                watch.down().await
            } else {
                pending::<()>().await
            }
        };
        match timeout(left, race(self.t.recv(&mut self.input), down)).await {
            Err(_) => Wait::Timeout,
            Ok(Either::Right(())) => Wait::Down,
            Ok(Either::Left(Ok(0))) => Wait::Eof,
            Ok(Either::Left(Ok(_))) => Wait::Data,
            Ok(Either::Left(Err(e))) => Wait::Failed(e),
        }
    }

    /// Sends the output buffer in one operation (bounded by the send timeout).
    async fn flush(&mut self) -> bool {
        let buf = std::mem::take(&mut self.out);
        match timeout(self.shared.cfg.send_timeout, self.t.send(buf)).await {
            Ok((Ok(()), mut b)) => {
                b.clear();
                self.out = b;
                true
            }
            Ok((Err(e), _)) => {
                self.io_failed(&e);
                false
            }
            Err(_) => {
                self.shared.stats.send_timeout();
                false
            }
        }
    }

    /// Streams a body after its head; returns the body bytes sent, `None` on failure.
    async fn send_stream(&mut self, p: PendingBody) -> Option<u64> {
        let PendingBody {
            mut stream,
            framing,
        } = p;
        if let StreamFraming::Length(n) = framing {
            let big = self.shared.cfg.splice_min.is_some_and(|min| n >= min);
            if let (true, Some(sock)) = (big, self.t.splice_target()) {
                if let Some((file, start, end)) = stream.file_region() {
                    if end - start == n {
                        return self.splice_body(file, start, end, sock).await;
                    }
                }
            }
        }
        let mut sent = 0u64;
        loop {
            match poll_fn(|cx| stream.as_mut().poll_chunk(cx)).await {
                Some(Ok(chunk)) => {
                    if chunk.is_empty() {
                        continue;
                    }
                    match framing {
                        StreamFraming::Length(n) => {
                            if sent + chunk.len() as u64 > n {
                                return None;
                            }
                            self.out.extend_from_slice(&chunk);
                        }
                        StreamFraming::Chunked => {
                            push_hex(&mut self.out, chunk.len() as u64);
                            self.out.extend_from_slice(b"\r\n");
                            self.out.extend_from_slice(&chunk);
                            self.out.extend_from_slice(b"\r\n");
                        }
                        StreamFraming::Close => self.out.extend_from_slice(&chunk),
                    }
                    sent += chunk.len() as u64;
                    if !self.flush().await {
                        return None;
                    }
                }
                Some(Err(_)) => return None,
                None => {
                    match framing {
                        StreamFraming::Length(n) if n != sent => return None,
                        StreamFraming::Chunked => self.out.extend_from_slice(b"0\r\n\r\n"),
                        _ => {}
                    }
                    return Some(sent);
                }
            }
        }
    }

    /// Sends the head pending in the output, then `start..end` of `file` with splice
    /// (file -> pipe -> socket, in pipe-sized chunks; each step bounded by the send
    /// timeout). Returns the body bytes sent, `None` on failure.
    async fn splice_body(
        &mut self,
        file: &ringway::fs::File,
        start: u64,
        end: u64,
        sock: std::os::fd::RawFd,
    ) -> Option<u64> {
        if !self.out.is_empty() && !self.flush().await {
            return None;
        }
        if self.pipe.is_none() {
            match Pipe::new() {
                Ok(p) => self.pipe = Some(p),
                Err(e) => {
                    self.io_failed(&e);
                    return None;
                }
            }
        }
        let pipe = self.pipe.as_ref().expect("made above");
        let limit = self.shared.cfg.send_timeout;
        let mut pos = start;
        while pos < end {
            let want = (end - pos).min(SPLICE_CHUNK as u64) as usize;
            let mut left = match pipe.splice_from_file(file, pos, want).await {
                // The file shrank under us: the promised length cannot be kept.
                Ok(0) => return None,
                Ok(n) => n,
                Err(e) => {
                    self.io_failed(&e);
                    return None;
                }
            };
            pos += left as u64;
            while left > 0 {
                match timeout(limit, pipe.splice_to(&sock, left)).await {
                    Ok(Ok(0)) => return None,
                    Ok(Ok(m)) => left -= m,
                    Ok(Err(e)) => {
                        self.io_failed(&e);
                        return None;
                    }
                    Err(_) => {
                        self.shared.stats.send_timeout();
                        return None;
                    }
                }
            }
        }
        self.shared.stats.spliced(end - start);
        Some(end - start)
    }

    /// Appends the error response for `e` and counts it.
    fn refuse(&mut self, e: &HttpError) {
        tracing::debug!(error = %e, "refusing request");
        self.shared.stats.error(e.class);
        encode_error(
            &mut self.out,
            e.status(),
            self.shared.cfg.server_name.as_deref(),
        );
        if self.shared.cfg.access_log {
            crate::log::line(self.peer, None, e.status(), 0);
        }
    }

    fn io_failed(&self, e: &io::Error) {
        if e.kind() == io::ErrorKind::InvalidData {
            self.shared.stats.tls_error();
        } else {
            self.shared.stats.io_error();
        }
    }

    /// Closes politely: end our direction, then read and discard for a short while so
    /// that unread input does not turn the close into a reset that destroys the last
    /// response in flight.
    async fn linger(&mut self) {
        if self.shared.cfg.access_log {
            crate::log::flush();
        }
        self.t.close_write().await;
        let deadline = Instant::now() + std::time::Duration::from_secs(2);
        let mut discarded = 0usize;
        while discarded < 1 << 20 {
            self.input = Input::default();
            let left = deadline.saturating_duration_since(Instant::now());
            match self.wait_input(left, false).await {
                Wait::Data => discarded += self.input.bytes().len(),
                _ => break,
            }
        }
    }
}
