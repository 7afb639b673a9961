//! The connection state machine: receive, decode every complete request with the
//! connection's [`RequestDecoder`], run the handler on a view of the bytes where they
//! lie, append each response to one output buffer, send the whole batch in one
//! operation, repeat. Limits and timeouts are enforced here, and any framing error ends
//! the connection after its error response: nothing after bytes that could not be
//! framed is ever looked at.
//!
//! Per request on the common path (a head, no body or a body already received, a
//! response written in place) nothing is allocated and no timer is touched: the
//! handler reads the head where it was received, the output buffer is lent by the
//! core's pool for as long as there is something to send, and the connection's one
//! timer ([`Deadline`]) is left armed between requests.
//!
//! The phases, one function each (hyper's `proto/h1/dispatch.rs` lays its dispatcher
//! out the same way): read heads and run handlers for every request whole in the input
//! ([`Conn::answer_batch`]; a body that must be streamed:
//! [`Conn::exchange_streamed`]), write the batch's responses in one send
//! ([`Conn::try_write`]), flush a send still in flight ([`Conn::flush_at`],
//! [`Conn::finish_sends`]), wait for input ([`Conn::poll_wait`], [`Conn::waited`]),
//! close ([`Conn::end`]: lingering, or at once). [`Conn::serve`] runs them in a loop.
//!
//! The size rule. A plain connection's task is the [`Conn`] and the state of `serve`'s
//! future, idle or not, and every line of it is read at every request: at a thousand
//! connections each is a cache miss. So the task is kept within ten 64-byte lines
//! (`server::tests::connection_task_size` holds it): what a request awaits on the
//! common path (the send's start, the wait for input) is polled in `serve`'s own state
//! through a poll function, never a future of its own; what is rare and large (a
//! streamed exchange or body, a flush behind a send in flight, the close) runs in a
//! heap block (`Box::pin`, or a [`FutureBox`] reused per core); and state read only
//! sometimes is boxed (the access log) or kept in the shared [`ServerState`].

use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use ringway::io::Pipe;

use crate::body_reader::{streamed, BodyReader, Fail};
use crate::buffers::PooledBuf;
use crate::deadline::{coarse_now, nanos, Deadline, Elapsed};
use crate::decoder::{Event, Next, RequestDecoder};
use crate::error::{ErrorClass, HttpError};
use crate::framing::BodyKind;
use crate::future_box::FutureBox;
use crate::handler::ViewHandler;
use crate::head::RawHead;
use crate::input::Input;
use crate::log::CoreLog;
use crate::response::{
    encode_error, push_hex, PendingBody, ReqInfo, Responder, StreamFraming, Written, CONTINUE,
};
use crate::select::{race, Either};
use crate::server_state::ServerState;
use crate::shutdown::{Watch, Watching as _};
use crate::transport::Transport;
use crate::view::{RequestView, ViewBody};

/// Bytes moved per splice: the default capacity of a pipe.
const SPLICE_CHUNK: usize = 64 * 1024;

/// The serve loop's `head_since` while no head is awaited (no clock reading is this).
const NO_HEAD: u64 = u64::MAX;

/// How long a closing connection reads and discards what the peer still sends.
const LINGER_NS: u64 = 2_000_000_000;

/// What the read-head and run-handler phases left the connection with.
enum Batch {
    /// Serve on: every request whole in the input was answered; the input is `empty`,
    /// or holds the start of the next.
    Open { empty: bool },
    /// Send what is pending, then close politely.
    Close,
    /// Drop the connection now.
    Abort,
}

/// What the client sent that a stopping connection has not read (see
/// [`Conn::poll_waiting`]).
enum Waiting {
    /// Nothing: the connection closes.
    Nothing,
    /// Delivered bytes, now in the input.
    Taken,
    /// Bytes still in the socket: the connection waits for them.
    InSocket,
}

/// How a connection ends ([`Conn::serve`] says, [`Conn::end`] does it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// At once: an I/O failure, or a peer that does not take its responses.
    Abort,
    /// Politely: what is pending goes out, our side shuts down, and what the peer
    /// still sends is read and discarded for a while (nginx's lingering close), so
    /// that unread input cannot turn the close into a reset.
    Linger,
    /// The peer sent its end of stream: what is pending goes out, then the close.
    AfterSends,
}

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
    /// The send timeout of a background send has come: is it still in flight?
    SendDue,
}

/// A connection's access log.
struct ConnLog {
    core: Rc<CoreLog>,
    /// The start of this connection's lines (the peer's address, then ` - - [`),
    /// formatted once.
    host: Box<[u8]>,
}

/// One connection.
pub(crate) struct Conn<T: Transport, H: ViewHandler> {
    t: T,
    input: Input,
    /// Responses not yet sent; lent by the core's pool only while there are some.
    out: Option<PooledBuf>,
    shared: Arc<ServerState>,
    handler: Rc<H>,
    watch: Watch,
    /// The access log, when it is on (boxed: eight bytes of every connection's state,
    /// which is read from memory at every request when there are many).
    log: Option<Box<ConnLog>>,
    served: u64,
    decoder: RequestDecoder,
    timer: Deadline,
    /// While a background send may be in flight: when it must have ended (coarse ns).
    send_deadline: Option<u64>,
    /// For splicing file bodies to the socket; made at the first one.
    pipe: Option<Pipe>,
}

impl<T: Transport, H: ViewHandler> Conn<T, H> {
    pub(crate) fn new(
        t: T,
        shared: Arc<ServerState>,
        handler: Rc<H>,
        watch: Watch,
        log: Option<Rc<CoreLog>>,
        peer: Option<SocketAddr>,
    ) -> Self {
        let log = log.map(|core| {
            let host = match peer {
                Some(p) => format!("{} - - [", p.ip()).into_bytes().into_boxed_slice(),
                None => Box::from(&b"- - - ["[..]),
            };
            Box::new(ConnLog { core, host })
        });
        let timer = Deadline::new(shared.tick);
        Conn {
            t,
            input: Input::default(),
            out: None,
            shared,
            handler,
            watch,
            log,
            served: 0,
            decoder: RequestDecoder::new(),
            timer,
            send_deadline: None,
            pipe: None,
        }
    }

    /// Serves the connection to its end. (By `&mut self`: an `async fn` that takes
    /// `self` by value keeps two copies of it in its state.) A plain connection's task
    /// makes these two calls itself: a future of this function's in the task would add
    /// its own state (two pointers, a tag) to every connection's.
    pub(crate) async fn run(&mut self) {
        let ending = self.serve().await;
        FutureBox::new(self.end(ending)).await;
    }

    /// Ends the connection the way [`serve`](Self::serve) said (`ending`). Once per
    /// connection, and larger than the loop: callers put its future in a heap block, so
    /// that its state is not part of every connection's.
    pub(crate) async fn end(&mut self, ending: Ending) {
        if ending == Ending::Linger {
            self.linger().await;
        } else if ending == Ending::AfterSends {
            // The peer has closed its side: nothing more can come, nothing waits
            // unread in the socket (the receive read up to its end), so the close
            // cannot turn into a reset; only the responses still going out must leave
            // first. No shutdown, no lingering: the socket closes when dropped.
            self.finish_sends().await;
        } else if self.send_deadline.is_some() {
            // Dropped while a send may be in flight: the driver would keep the socket
            // until the send ends, which a peer that does not read never lets happen.
            let ended = poll_fn(|cx| Poll::Ready(self.t.poll_flush(cx).is_ready())).await;
            if !ended {
                self.t.abort();
            }
        }
    }

    /// Serves requests until the connection should end; true if it should end politely
    /// (see [`end`](Self::end)). One turn of the loop is one batch, its phases in order:
    /// read heads and run handlers for every request whole in the input
    /// ([`answer_batch`](Self::answer_batch)), write the batch's responses in one send
    /// ([`try_write`](Self::try_write)), wait for input ([`poll_wait`](Self::poll_wait)), and act
    /// on what the wait gave ([`waited`](Self::waited)). Flushing a send still in flight
    /// ([`flush`](Self::flush)) and closing ([`end`](Self::end)) are the two others.
    pub(crate) async fn serve(&mut self) -> Ending {
        // The first request's head is due within the header timeout of the accept; a
        // later one within the header timeout of the moment its first bytes were seen
        // waiting (a head that arrives whole is never waited for). (`NO_HEAD` while no
        // head is awaited: eight bytes of every connection's state less than an
        // `Option`. The timeouts are read from the shared state where they are used:
        // copies kept here would live in every connection's state.)
        let mut head_since = coarse_now();
        loop {
            let batch = self.answer_batch(&mut head_since).await;
            if let Batch::Abort = batch {
                return Ending::Abort;
            }
            // One reading of the clock for the send's deadline and the wait's.
            let now = coarse_now();
            if self.out.as_ref().is_some_and(|b| !b.is_empty()) {
                // Started right here when nothing is in flight (no future: its state
                // would be part of every connection's, written at every request), else
                // by `flush_at`, in a reused heap block.
                let ok = match poll_fn(|cx| Poll::Ready(self.try_write(cx))).await {
                    Some(started) => self.sent(Ok(started), now + self.shared.send_ns),
                    None => FutureBox::new(self.flush_at(now)).await,
                };
                if !ok {
                    return Ending::Abort;
                }
            }
            let Batch::Open { empty } = batch else {
                return Ending::Linger;
            };
            debug_assert_eq!(empty, self.input.is_empty());
            // Whether the wait ends when the server stops: while no request is pending.
            let mut stop_ends = empty;
            if empty && self.watch.is_down() {
                match poll_fn(|cx| Poll::Ready(self.poll_waiting(cx))).await {
                    Waiting::Nothing => return Ending::Linger,
                    Waiting::Taken => continue,
                    Waiting::InSocket => stop_ends = false,
                }
            }
            let idle = stop_ends && head_since == NO_HEAD;
            self.input.settle();
            let deadline = if idle {
                now + self.shared.idle_ns
            } else {
                if head_since == NO_HEAD {
                    head_since = now;
                }
                head_since + self.shared.header_ns
            };
            // (Settling keeps what is unconsumed: still empty or not.)
            let wait = if T::POLL_RECV {
                // Polled in this loop's own state, not by a future of its own (its
                // state would be part of every connection's). The closure holds the
                // connection by one pointer and its own values (a closure borrowing
                // each field apart is written, and read back, at every wait).
                let this = &mut *self;
                let mut now = Some(now);
                poll_fn(move |cx| this.poll_wait(cx, stop_ends, &mut now, deadline)).await
            } else {
                // (TLS.) In a reused heap block: this future holds the transport's
                // receive future, which would otherwise be part of every connection's
                // state (a plain one's too: this branch is laid out for every `T`).
                let watch = stop_ends.then_some(&self.watch);
                let until = Until {
                    deadline,
                    send_deadline: self.send_deadline,
                };
                let (t, input, timer) = (&mut self.t, &mut self.input, &mut self.timer);
                FutureBox::new(wait_input(t, input, timer, watch, now, until)).await
            };
            if !matches!(wait, Wait::Data) {
                if let Some(ending) = self.waited(wait, idle).await {
                    return ending;
                }
            }
        }
    }

    /// The read-head and run-handler phases for every request whole in the input, served
    /// from one view of it; what they used is consumed once, when the batch ends (a
    /// request per receive at low load, many pipelined ones at high load). Responses are
    /// appended to the output, not sent. The handler's future is awaited right here (a
    /// function of its own around it would be one more future per request).
    async fn answer_batch(&mut self, head_since: &mut u64) -> Batch {
        let mut batch = self.input.bytes();
        let mut used = 0;
        // Each request's head is scanned straight into this one place (set once per
        // batch, not per request).
        let mut raw = RawHead::EMPTY;
        let outcome = loop {
            let input = &batch[used..];
            if input.is_empty() {
                break Batch::Open { empty: true };
            }
            // Read a head.
            match self.decoder.next_head(input, &self.shared.cfg, &mut raw) {
                Ok(Next::Head) => {}
                Ok(Next::NeedMore) => break Batch::Open { empty: false },
                Err(e) => {
                    self.refuse(&e);
                    break Batch::Close;
                }
                // Bodies are read by `exchange_streamed`: the decoder is between requests.
                Ok(Next::InBody) => return Batch::Abort,
            }
            *head_since = NO_HEAD;
            self.served += 1;
            let (mut info, whole) = prepare(&raw, input.len(), self.served, &self.shared);
            if !info.more && self.watch.is_down() {
                info.more = next_is_waiting(&mut self.t);
            }
            // Run the handler: on a view of the head and body where they lie in the
            // input (the common case), or with the body streamed to it.
            let Some(n) = whole else {
                self.input.consume(used);
                // Rare and large: boxed, so that the state every connection carries
                // while idle stays small. It reads the input itself.
                match Box::pin(self.exchange_streamed(&raw, info)).await {
                    Step::Next => {}
                    Step::Close => return Batch::Close,
                    Step::Abort => return Batch::Abort,
                }
                (batch, used) = (self.input.bytes(), 0);
                continue;
            };
            if n > 0 && !whole_body(&mut self.decoder, &input[raw.len..], n, &self.shared) {
                return Batch::Abort;
            }
            let view = RequestView::new(input, &raw, ViewBody::Whole(&input[raw.len..raw.len + n]));
            let out = self.out.get_or_insert_with(PooledBuf::take);
            let res = Responder::new(out, info, self.watch.response_context());
            // Taken apart at once: only what the log needs is kept while a body streams.
            let Written {
                status,
                body_len,
                close,
                pending,
            } = self.handler.call(view, res).await;
            let sent = match pending {
                None => body_len,
                // Rare and large (splice, streamed chunks): boxed, as above.
                Some(p) => {
                    let Some(sent) = Box::pin(self.send_stream(p)).await else {
                        return Batch::Abort;
                    };
                    // (Looked at again: sending does not touch it.)
                    batch = self.input.bytes();
                    sent
                }
            };
            let step = self.finish(&raw, status, close, sent, &batch[used..]);
            used += raw.len + n;
            match step {
                Step::Next => {}
                Step::Close => break Batch::Close,
                Step::Abort => return Batch::Abort,
            }
        };
        // (A pool buffer consumed to its end goes back to the ring here.)
        self.input.consume(used);
        outcome
    }

    /// The write phase: starts sending the batch's responses (the output, not empty) in
    /// one background send, if nothing is in flight: what starting it gave. `None` (the
    /// output kept) if a send is in flight: then [`flush_at`](Self::flush_at) waits for
    /// it.
    #[inline]
    fn try_write(&mut self, cx: &mut Context<'_>) -> Option<io::Result<()>> {
        let buf = self.out.take()?;
        match self.t.try_send(cx, buf) {
            Ok(started) => Some(started),
            Err(buf) => {
                self.out = Some(buf);
                None
            }
        }
    }

    /// One poll of the wait phase for a transport that polls its receive
    /// ([`Transport::POLL_RECV`]): input, then shutdown (if `stop_ends` the wait), then
    /// the deadline (and a background send's, once it has come). The first poll uses
    /// the caller's reading of the clock (`now`), later ones read it.
    #[inline]
    fn poll_wait(
        &mut self,
        cx: &mut Context<'_>,
        stop_ends: bool,
        now: &mut Option<u64>,
        deadline: u64,
    ) -> Poll<Wait> {
        match self.t.poll_recv(cx, &mut self.input) {
            Poll::Ready(r) => Poll::Ready(received(r)),
            Poll::Pending => {
                let watch = stop_ends.then_some(&self.watch);
                let until = Until {
                    deadline,
                    send_deadline: self.send_deadline,
                };
                poll_wait_rest(cx, watch, &mut self.timer, now, until)
            }
        }
    }

    /// What a wait that gave no input (`wait`) means: `None` to serve on (a background
    /// send that has ended), else how to end. `idle`: no request was pending.
    async fn waited(&mut self, wait: Wait, idle: bool) -> Option<Ending> {
        match wait {
            Wait::Data => None,
            Wait::SendDue => self.send_due().await,
            // The serve loop looks at what is waiting before it closes (see
            // `poll_waiting`).
            Wait::Down => None,
            // The peer is done sending, maybe not reading: what was sent in the
            // background still goes out before the close.
            Wait::Eof => Some(Ending::AfterSends),
            Wait::Timeout if idle => {
                self.shared.stats.idle_closed();
                Some(Ending::Linger)
            }
            Wait::Timeout => {
                self.refuse(&HttpError::new(ErrorClass::HeaderTimeout, "head too slow"));
                // Rare: boxed, so that its state is not part of every connection's.
                let _ = Box::pin(self.flush()).await;
                Some(Ending::Linger)
            }
            Wait::Failed(e) => {
                self.io_failed(&e);
                Some(Ending::Abort)
            }
        }
    }

    /// When the server stops with no request pending: what the client sent that the
    /// connection has not read yet. Bytes the receive has delivered are taken into the
    /// input here; bytes still in the socket are only looked at (`FIONREAD`). Either way
    /// they reached the server before the connection closes, and are answered.
    #[cold]
    fn poll_waiting(&mut self, cx: &mut Context<'_>) -> Waiting {
        let mut taken = false;
        if T::POLL_RECV {
            // Until the end of the input, a failed receive, or nothing more delivered.
            while let Poll::Ready(Ok(1..)) = self.t.poll_recv(cx, &mut self.input) {
                taken = true;
            }
        }
        if taken {
            Waiting::Taken
        } else if self.t.bytes_waiting() {
            Waiting::InSocket
        } else {
            Waiting::Nothing
        }
    }

    /// The send timeout of a background send has come: ended by now (`None`: serve on),
    /// or too slow, the peer does not take what it asked (`Some(Ending::Abort)`).
    async fn send_due(&mut self) -> Option<Ending> {
        match poll_fn(|cx| Poll::Ready(self.t.poll_flush(cx))).await {
            Poll::Ready(Ok(())) => {
                self.send_deadline = None;
                None
            }
            Poll::Ready(Err(e)) => {
                self.io_failed(&e);
                Some(Ending::Abort)
            }
            Poll::Pending => {
                self.shared.stats.send_timeout();
                self.t.abort();
                Some(Ending::Abort)
            }
        }
    }

    /// Answers a request whose body must be read as it arrives (see `serve` for the
    /// others): runs the handler with the body streamed to it, appends the response.
    async fn exchange_streamed(&mut self, raw: &RawHead, info: ReqInfo) -> Step {
        let (mut written, head) = match self.answer_streamed(raw, info).await {
            Ok(answered) => answered,
            Err(step) => return step,
        };
        let mut sent = written.body_len;
        if let Some(p) = written.pending.take() {
            match Box::pin(self.send_stream(p)).await {
                Some(n) => sent = n,
                None => return Step::Abort,
            }
        }
        self.finish(raw, written.status, written.close, sent, &head)
    }

    /// After a response was written (`status`; its body, `sent` bytes, too; `close` if
    /// the connection closes after it): counts and logs the exchange. `head` starts with
    /// the request's head (in the input, or a copy).
    fn finish(&self, raw: &RawHead, status: u16, close: bool, sent: u64, head: &[u8]) -> Step {
        self.shared.stats.request();
        if let Some(log) = &self.log {
            // SAFETY: `head` starts with the bytes `raw` was scanned from.
            let req = unsafe {
                (
                    raw.method_unchecked(head),
                    raw.target_unchecked(head),
                    raw.version,
                )
            };
            log.core.line(&log.host, Some(req), status, sent);
        }
        if close {
            Step::Close
        } else {
            Step::Next
        }
    }

    /// The handler with a body streamed to it as it arrives. The head is copied out of
    /// the input (which the body's bytes go through); it is returned for the log.
    async fn answer_streamed(
        &mut self,
        raw: &RawHead,
        info: ReqInfo,
    ) -> Result<(Written, PooledBuf), Step> {
        let mut head = PooledBuf::take();
        head.extend_from_slice(&self.input.bytes()[..raw.len]);
        self.input.consume(raw.len);
        let len = match raw.body {
            BodyKind::Length(n) => Some(n),
            _ => None,
        };
        let (body, mut reader) = streamed(len);
        // If the body still has to arrive, pending responses leave first (they are
        // earlier in the pipeline), with `100 Continue` if the client waits for it.
        // A body already whole in the input needs no wait: the batch stays whole.
        let complete = self
            .decoder
            .body()
            .is_some_and(|b| b.is_complete_in(self.input.bytes()));
        if !complete {
            if raw.expect_continue {
                self.out
                    .get_or_insert_with(PooledBuf::take)
                    .extend_from_slice(CONTINUE);
            }
            if !self.flush().await {
                return Err(Step::Abort);
            }
        }
        let mut body_io = BodyIo {
            t: &mut self.t,
            input: &mut self.input,
            decoder: &mut self.decoder,
            timer: &mut self.timer,
            shared: &self.shared,
        };
        let mut failed = None;
        // Where this request's response starts in the output. It stays there, unsent,
        // until the body is framed to its end (nothing below flushes): so a framing
        // error found after the handler answered can still take its place, and the
        // request gets one response, the error's (issue 27: a 200 then a 400 for one
        // request is a response desync).
        let mark = self.out.as_ref().map_or(0, |o| o.len());
        let written = {
            let out = self.out.get_or_insert_with(PooledBuf::take);
            let view = RequestView::new(&head, raw, ViewBody::Streamed(body));
            let res = Responder::new(out, info, self.watch.response_context());
            let mut call = pin!(self.handler.call(view, res));
            let early = {
                let pump = pin!(body_io.pump(&mut reader, true));
                match race(call.as_mut(), pump).await {
                    Either::Left(w) => Some(w),
                    Either::Right(Ok(())) => None,
                    Either::Right(Err(f)) => {
                        failed = Some(f);
                        None
                    }
                }
            };
            match (early, &failed) {
                (Some(w), _) => Some(w),
                (None, None) => Some(call.await),
                // The handler's unfinished response is dropped (and leaves nothing).
                (None, Some(_)) => None,
            }
        };
        // Whatever the handler left unread is still read (and framed), so the next
        // request starts where it should.
        if failed.is_none() {
            if let Err(f) = body_io.pump(&mut reader, false).await {
                failed = Some(f);
            }
        }
        let written = self.streamed_outcome(written, failed, mark)?;
        Ok((written, head))
    }

    /// What a streamed exchange comes to once its body has been read to its end or
    /// failed (`failed`): the handler's response (`written`), or, if the body's framing
    /// failed, the error's in its place (the handler's, from `mark` in the output on, is
    /// withdrawn: one response per request), and the connection closes.
    fn streamed_outcome(
        &mut self,
        written: Option<Written>,
        failed: Option<Fail>,
        mark: usize,
    ) -> Result<Written, Step> {
        match (written, failed) {
            (Some(w), None) => Ok(w),
            (_, Some(Fail::Http(e))) => {
                // The handler's response (whole, or a head whose streamed body is
                // dropped here) is withdrawn: the error's is the only one.
                if let Some(out) = self.out.as_mut() {
                    debug_assert!(out.len() >= mark, "a response left before its body ended");
                    out.truncate(mark);
                }
                self.refuse(&e);
                Err(Step::Close)
            }
            (_, Some(Fail::Abort)) | (None, None) => Err(Step::Abort),
        }
    }

    /// Starts sending what is in the output buffer in one background send (waiting,
    /// within the send timeout, for the one in flight to end); the buffer goes back to
    /// the pool once sent. False if the connection must be dropped.
    async fn flush(&mut self) -> bool {
        self.flush_at(coarse_now()).await
    }

    /// [`flush`](Self::flush) with the coarse clock read just before (`now`). (The
    /// serve loop starts the send itself in the common case: see `Transport::try_send`.)
    async fn flush_at(&mut self, now: u64) -> bool {
        let Some(buf) = self.out.take() else {
            return true;
        };
        if buf.is_empty() {
            return true;
        }
        let send_ns = self.shared.send_ns;
        // The one in flight has had its time already.
        let deadline = self.send_deadline.unwrap_or(now + send_ns);
        let mut batch = BatchSend::new(now, deadline);
        let sent = {
            let (mut send, timer) = (pin!(self.t.send(buf)), &mut self.timer);
            poll_fn(|cx| batch.poll(send.as_mut(), cx, timer)).await
        };
        self.sent(sent, batch.started + send_ns)
    }

    /// After a send started (`due`: when it must have ended) or failed to: false if the
    /// connection must be dropped.
    fn sent(&mut self, sent: Result<io::Result<()>, Elapsed>, due: u64) -> bool {
        let ok = self.send_ended(sent);
        if ok {
            self.send_deadline = Some(due);
        }
        ok
    }

    /// After a send (or the wait for one) ended: false, counted, if it failed or ran
    /// out of time (the connection must be dropped).
    #[inline]
    fn send_ended(&mut self, sent: Result<io::Result<()>, Elapsed>) -> bool {
        match sent {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                io_failed(&self.shared, &e);
                false
            }
            Err(Elapsed) => {
                self.shared.stats.send_timeout();
                self.t.abort();
                false
            }
        }
    }

    /// Waits, within the send timeout, until no send is in flight (before the socket is
    /// spliced into or closed). False if the connection must be dropped.
    async fn finish_sends(&mut self) -> bool {
        let Some(deadline) = self.send_deadline else {
            return true;
        };
        let mut now = Some(coarse_now());
        let (t, timer) = (&mut self.t, &mut self.timer);
        let ended = poll_fn(|cx| {
            if let Poll::Ready(r) = t.poll_flush(cx) {
                return Poll::Ready(Ok(r));
            }
            let now = now.take().unwrap_or_else(coarse_now);
            timer.poll_timer(cx, now, deadline).map(Err)
        })
        .await;
        self.send_deadline = None;
        self.send_ended(ended)
    }

    /// Streams a body after its head; returns the body bytes sent, `None` on failure.
    async fn send_stream(&mut self, p: Box<PendingBody>) -> Option<u64> {
        let PendingBody {
            mut stream,
            framing,
        } = *p;
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
                    let out = self.out.get_or_insert_with(PooledBuf::take);
                    match framing {
                        StreamFraming::Length(n) => {
                            if sent + chunk.len() as u64 > n {
                                return None;
                            }
                            out.extend_from_slice(&chunk);
                        }
                        StreamFraming::Chunked => {
                            push_hex(out, chunk.len() as u64);
                            out.extend_from_slice(b"\r\n");
                            out.extend_from_slice(&chunk);
                            out.extend_from_slice(b"\r\n");
                        }
                        StreamFraming::Close => out.extend_from_slice(&chunk),
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
                        StreamFraming::Chunked => self
                            .out
                            .get_or_insert_with(PooledBuf::take)
                            .extend_from_slice(b"0\r\n\r\n"),
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
        // The head goes first, and all of it before the body is spliced in.
        if !self.flush().await || !self.finish_sends().await {
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
        let send_ns = nanos(self.shared.cfg.send_timeout);
        let mut pos = start;
        while pos < end {
            let want = (end - pos).min(SPLICE_CHUNK as u64) as usize;
            let mut left = match pipe.splice_from_file(file, pos, want).await {
                // The file shrank under us: the promised length cannot be kept.
                Ok(0) => return None,
                Ok(n) => n,
                Err(e) => {
                    io_failed(&self.shared, &e);
                    return None;
                }
            };
            pos += left as u64;
            while left > 0 {
                let now = coarse_now();
                match self
                    .timer
                    .run(now, now + send_ns, pipe.splice_to(&sock, left))
                    .await
                {
                    Ok(Ok(0)) => return None,
                    Ok(Ok(m)) => left -= m,
                    Ok(Err(e)) => {
                        io_failed(&self.shared, &e);
                        return None;
                    }
                    Err(Elapsed) => {
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
        let out = self.out.get_or_insert_with(PooledBuf::take);
        encode_error(out, e.status(), &self.watch.response_context().prefix);
        if let Some(log) = &self.log {
            log.core.line(&log.host, None, e.status(), 0);
        }
    }

    fn io_failed(&self, e: &io::Error) {
        io_failed(&self.shared, e);
    }

    /// Closes politely: end our direction, then read and discard for a short while so
    /// that unread input does not turn the close into a reset that destroys the last
    /// response in flight.
    async fn linger(&mut self) {
        // Every response out before the write side closes.
        if !self.finish_sends().await {
            return;
        }
        self.t.close_write().await;
        let deadline = coarse_now() + LINGER_NS;
        let mut discarded = 0usize;
        while discarded < 1 << 20 {
            self.input.clear();
            let now = coarse_now();
            let until = Until {
                deadline,
                send_deadline: None,
            };
            let wait = wait_input(
                &mut self.t,
                &mut self.input,
                &mut self.timer,
                None,
                now,
                until,
            );
            match wait.await {
                Wait::Data => discarded += self.input.bytes().len(),
                _ => break,
            }
        }
        self.input.clear();
    }
}

impl<T: Transport, H: ViewHandler> Drop for Conn<T, H> {
    fn drop(&mut self) {
        // Counted once per connection, not per request: see `StatsSnapshot::requests_read`.
        self.shared.stats.read(self.served);
        // Counted in by the accept loop (`OpenConnections::enter`).
        self.shared.open.leave();
    }
}

/// What shapes the response to the request whose head `raw` is at the start of the
/// input (`available` bytes), the connection's `served`th; and the length of its body
/// if the body is already whole in the input (`Some(0)` without one). (Not a method:
/// the serve loop holds the input borrowed meanwhile.)
#[inline]
fn prepare(
    raw: &RawHead,
    available: usize,
    served: u64,
    shared: &ServerState,
) -> (ReqInfo, Option<usize>) {
    let keep_alive = raw.keep_alive && served < shared.cfg.max_requests_per_connection;
    let whole = match raw.body {
        BodyKind::None => Some(0),
        BodyKind::Length(n) if (available - raw.len) as u64 >= n => Some(n as usize),
        _ => None,
    };
    let info = ReqInfo {
        head: raw.is_head,
        version: raw.version,
        close: !keep_alive,
        // (Known for a body whole in the input only: a streamed one is the last
        // request a stopping server answers.)
        more: whole.is_some_and(|n| available > raw.len + n),
    };
    (info, whole)
}

/// Whether a stopping server's connection has the client's next request waiting in its
/// socket (then the response to the last one read still keeps the connection open, and
/// that request is answered too). Out of the way of the common path, which never asks.
#[cold]
#[inline(never)]
fn next_is_waiting<T: Transport>(t: &mut T) -> bool {
    t.bytes_waiting()
}

/// Runs a body that is whole in `body` (`n` bytes) through the decoder, which ends it.
/// False if the decoder disagrees (it cannot, for a `Content-Length` body).
fn whole_body(decoder: &mut RequestDecoder, body: &[u8], n: usize, shared: &ServerState) -> bool {
    let cfg = &shared.cfg;
    matches!(decoder.decode(body, cfg), Ok((used, Event::Data(0, end))) if used == n && end == n)
        && matches!(decoder.decode(&body[n..], cfg), Ok((0, Event::BodyEnd)))
}

fn io_failed(shared: &ServerState, e: &io::Error) {
    if e.kind() == io::ErrorKind::InvalidData {
        shared.stats.tls_error();
    } else {
        shared.stats.io_error();
    }
}

/// The state of a batch's send, bounded by `deadline` (on the coarse clock): the send
/// started at `now` if it started at the first poll (no send in flight), else the
/// clock is read again when it does (`started`). Polled by a `poll_fn` in the caller's
/// own state (the serve loop per request, [`Conn::flush_at`] elsewhere): a future of
/// its own, `async fn` or not, costs a poll call more, as measured.
struct BatchSend {
    now: u64,
    deadline: u64,
    first: bool,
    /// When the send started (known once it has).
    started: u64,
}

impl BatchSend {
    fn new(now: u64, deadline: u64) -> BatchSend {
        BatchSend {
            now,
            deadline,
            first: true,
            started: now,
        }
    }

    /// One poll of the send `send`, with `timer` for the deadline.
    #[inline]
    fn poll<S: Future<Output = io::Result<()>>>(
        &mut self,
        send: Pin<&mut S>,
        cx: &mut Context<'_>,
        timer: &mut Deadline,
    ) -> Poll<Result<io::Result<()>, Elapsed>> {
        if let Poll::Ready(r) = send.poll(cx) {
            if !self.first {
                self.started = coarse_now();
            }
            return Poll::Ready(Ok(r));
        }
        let at = if self.first { self.now } else { coarse_now() };
        self.first = false;
        timer.poll_timer(cx, at, self.deadline).map(Err)
    }
}

/// What a finished receive means for the wait.
#[inline]
fn received(r: io::Result<usize>) -> Wait {
    match r {
        Ok(0) => Wait::Eof,
        Ok(_) => Wait::Data,
        Err(e) => Wait::Failed(e),
    }
}

/// When a wait for input ends without input.
#[derive(Clone, Copy)]
struct Until {
    /// The wait's own deadline (on the coarse clock).
    deadline: u64,
    /// While a background send may be in flight: when it must have ended. Looked at only
    /// once it has come (looking registers for the send's end: a wake-up nobody needs
    /// otherwise).
    send_deadline: Option<u64>,
}

/// The rest of one poll of a wait for input once the receive is pending: shutdown
/// (with a `watch`), then the deadlines. The first poll uses the caller's reading of
/// the clock (`now`), later ones read it.
#[inline]
fn poll_wait_rest(
    cx: &mut Context<'_>,
    watch: Option<&Watch>,
    timer: &mut Deadline,
    now: &mut Option<u64>,
    until: Until,
) -> Poll<Wait> {
    if watch.is_some_and(|w| w.poll_down(cx).is_ready()) {
        return Poll::Ready(Wait::Down);
    }
    let now = now.take().unwrap_or_else(coarse_now);
    let Until {
        deadline,
        send_deadline,
    } = until;
    let wait_for = send_deadline.map_or(deadline, |s| s.min(deadline));
    match timer.poll_timer(cx, now, wait_for) {
        Poll::Pending => Poll::Pending,
        Poll::Ready(Elapsed) if now < deadline => Poll::Ready(Wait::SendDue),
        Poll::Ready(Elapsed) => Poll::Ready(Wait::Timeout),
    }
}

/// Waits for input until `until` (`now`: the coarse clock, read just before) and, with
/// a `watch`, until shutdown begins. One poll function for the three, so a wake-up
/// costs one poll of each, not a stack of futures. (The serve loop of a transport that
/// polls its receive polls [`Conn::poll_wait`] instead, in its own state.)
async fn wait_input<T: Transport>(
    t: &mut T,
    input: &mut Input,
    timer: &mut Deadline,
    watch: Option<&Watch>,
    now: u64,
    until: Until,
) -> Wait {
    let mut now = Some(now);
    if T::POLL_RECV {
        return poll_fn(|cx| match t.poll_recv(cx, input) {
            Poll::Ready(r) => Poll::Ready(received(r)),
            Poll::Pending => poll_wait_rest(cx, watch, timer, &mut now, until),
        })
        .await;
    }
    let mut recv = pin!(t.recv(input));
    poll_fn(|cx| match recv.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(received(r)),
        Poll::Pending => poll_wait_rest(cx, watch, timer, &mut now, until),
    })
    .await
}

/// What reading a request body borrows from its connection (all but the output and
/// the handler, which the handler's response holds meanwhile).
struct BodyIo<'c, T: Transport> {
    t: &'c mut T,
    input: &'c mut Input,
    decoder: &'c mut RequestDecoder,
    timer: &'c mut Deadline,
    shared: &'c ServerState,
}

impl<T: Transport> BodyIo<'_, T> {
    /// Decodes body bytes into the reader's pipe until the body ends. With `pace`, stops
    /// reading while the handler has not taken what is queued. Cancel-safe between
    /// awaits: all state is in `r`, the decoder and the input.
    async fn pump(&mut self, r: &mut BodyReader, pace: bool) -> Result<(), Fail> {
        loop {
            if r.done {
                return Ok(());
            }
            if pace {
                poll_fn(|cx| r.queue.poll_space(cx)).await;
            }
            let bytes = self.input.bytes();
            let (used, wait) = match self.decoder.decode(bytes, &self.shared.cfg) {
                Err(e) => {
                    r.fail();
                    return Err(Fail::Http(e));
                }
                Ok((n, Event::Data(a, b))) => {
                    // Nobody left to read it: frame it, drop it.
                    if r.has_reader() {
                        r.queue.push(Bytes::copy_from_slice(&bytes[a..b]));
                    }
                    // Decode again before waiting: the body may end right here.
                    (n, false)
                }
                Ok((n, Event::BodyEnd)) => {
                    self.input.consume(n);
                    r.finish();
                    return Ok(());
                }
                Ok((n, Event::NeedMore)) => (n, true),
                Ok((_, Event::Head(_))) => {
                    r.fail();
                    return Err(Fail::Abort);
                }
            };
            self.input.consume(used);
            if wait {
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
        let now = coarse_now();
        let deadline = now + nanos(self.shared.cfg.body_timeout);
        let until = Until {
            deadline,
            send_deadline: None,
        };
        match wait_input(self.t, self.input, self.timer, None, now, until).await {
            Wait::Data => Ok(()),
            // No send deadline was given, so none is due.
            Wait::Eof | Wait::Down | Wait::SendDue => Err(Fail::Abort),
            Wait::Timeout => Err(Fail::Http(HttpError::new(
                ErrorClass::BodyTimeout,
                "body too slow",
            ))),
            Wait::Failed(e) => {
                io_failed(self.shared, &e);
                Err(Fail::Abort)
            }
        }
    }
}
