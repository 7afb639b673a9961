//! The access log: one common-log-format line per answered request.
//!
//! A serving core never writes to the log's sink (standard output by default) itself:
//! a write can block (a full pipe, a paused terminal), and a blocked core stops serving.
//! Each core formats its lines into a buffer of its own, without allocating (the date
//! comes from the per-core cache, refreshed once per second), and hands the buffer over
//! to the server's log thread when it holds 32 KiB, or 50 ms after its first line
//! (a per-core flusher task), and when the core stops. The log thread writes the
//! batches in order. At most [`QUEUED`] batches wait for it: when the sink does not
//! keep up, further batches are dropped and their lines counted
//! ([`StatsSnapshot::log_dropped`](crate::StatsSnapshot::log_dropped)), so memory stays
//! bounded and requests keep being served.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Poll, Waker};
use std::time::Duration;

use http::Version;

use crate::date::with_log_date;
use crate::stats::Stats;

/// A core hands its lines over once it holds this many bytes.
const HANDOFF_AT: usize = 32 * 1024;
/// ... or this long after its first line.
const FLUSH_AFTER: Duration = Duration::from_millis(50);
/// Batches waiting for the log thread, at most (each about [`HANDOFF_AT`] bytes).
pub(crate) const QUEUED: usize = 8;

/// A batch of lines for the log thread.
struct Batch {
    bytes: Vec<u8>,
    lines: u64,
}

/// One server's access log: the log thread and what the cores share with it.
pub(crate) struct AccessLog {
    tx: Mutex<Option<SyncSender<Batch>>>,
    /// Empty buffers coming back from the log thread, for the cores to reuse.
    free: Mutex<Vec<Vec<u8>>>,
    stats: Arc<Stats>,
    written: AtomicU64,
    /// Lines handed over and not yet written or dropped by the log thread.
    pending: AtomicU64,
    /// Set when `close` gave up waiting: the pending lines were counted as dropped.
    abandoned: AtomicBool,
    /// Set by the log thread when it has written everything and stopped.
    finished: (Mutex<bool>, Condvar),
}

impl AccessLog {
    /// Starts the log thread writing to `sink`; dropped lines are counted in `stats`.
    pub(crate) fn start(
        sink: Box<dyn Write + Send>,
        stats: Arc<Stats>,
    ) -> std::io::Result<Arc<AccessLog>> {
        let (tx, rx) = sync_channel(QUEUED);
        let log = Arc::new(AccessLog {
            tx: Mutex::new(Some(tx)),
            free: Mutex::new(Vec::new()),
            stats,
            written: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            abandoned: AtomicBool::new(false),
            finished: (Mutex::new(false), Condvar::new()),
        });
        let for_thread = log.clone();
        std::thread::Builder::new()
            .name("ringway-log".into())
            .spawn(move || for_thread.write_batches(rx, sink))?;
        Ok(log)
    }

    fn write_batches(&self, rx: Receiver<Batch>, mut sink: Box<dyn Write + Send>) {
        let mut broken = false;
        for mut batch in rx {
            let ok = !broken
                && sink
                    .write_all(&batch.bytes)
                    .and_then(|()| sink.flush())
                    .is_ok();
            if !self.abandoned.load(Relaxed) {
                let lines = batch.lines;
                let _ = self
                    .pending
                    .fetch_update(Relaxed, Relaxed, |p| Some(p.saturating_sub(lines)));
                if ok {
                    self.written.fetch_add(batch.lines, Relaxed);
                } else {
                    self.stats.log_dropped(batch.lines);
                }
            }
            // A closed or failing sink: everything from here on is dropped.
            broken = !ok;
            batch.bytes.clear();
            if let Ok(mut free) = self.free.lock() {
                if free.len() < QUEUED {
                    free.push(batch.bytes);
                }
            }
        }
        let (done, cv) = &self.finished;
        if let Ok(mut d) = done.lock() {
            *d = true;
        }
        cv.notify_all();
    }

    /// Hands a batch to the log thread without waiting; returns the buffer to fill next.
    fn hand_over(&self, bytes: Vec<u8>, lines: u64) -> Vec<u8> {
        let fresh = self.free.lock().ok().and_then(|mut f| f.pop());
        self.pending.fetch_add(lines, Relaxed);
        let sent = match self.tx.lock().ok().as_ref().and_then(|t| t.as_ref()) {
            Some(tx) => tx.try_send(Batch { bytes, lines }),
            None => Err(TrySendError::Disconnected(Batch { bytes, lines })),
        };
        match sent {
            Ok(()) => fresh.unwrap_or_else(|| Vec::with_capacity(HANDOFF_AT + 512)),
            Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) => {
                self.pending.fetch_sub(b.lines, Relaxed);
                self.stats.log_dropped(b.lines);
                let mut bytes = b.bytes;
                bytes.clear();
                bytes
            }
        }
    }

    /// Stops taking batches and waits up to `limit` for the log thread to write what
    /// it has. Lines it could not write by then (a stalled sink) count as dropped.
    pub(crate) fn close(&self, limit: Duration) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let (done, cv) = &self.finished;
        let Ok(guard) = done.lock() else { return };
        let (guard, _) = cv
            .wait_timeout_while(guard, limit, |finished| !*finished)
            .unwrap_or_else(|e| e.into_inner());
        if !*guard && !self.abandoned.swap(true, Relaxed) {
            self.stats.log_dropped(self.pending.swap(0, Relaxed));
            tracing::warn!("access log: the sink did not take the last lines in {limit:?}");
        }
    }

    /// Lines written so far.
    #[cfg(test)]
    pub(crate) fn written(&self) -> u64 {
        self.written.load(Relaxed)
    }
}

/// One core's share of an access log: the lines it gathered since the last handover.
pub(crate) struct CoreLog {
    log: Arc<AccessLog>,
    buf: RefCell<Vec<u8>>,
    lines: Cell<u64>,
    /// The flusher task, waiting for a first line.
    flusher: RefCell<Option<Waker>>,
}

impl CoreLog {
    pub(crate) fn new(log: Arc<AccessLog>) -> Rc<CoreLog> {
        Rc::new(CoreLog {
            log,
            buf: RefCell::new(Vec::with_capacity(HANDOFF_AT + 512)),
            lines: Cell::new(0),
            flusher: RefCell::new(None),
        })
    }

    /// Appends one line: `host - - [date] "METHOD target VERSION" status bytes`
    /// (`"-"` for a request that could not be parsed, `-` for no body bytes). `start` is
    /// `host - - [` for the connection's peer, formatted once per connection.
    pub(crate) fn line(
        &self,
        start: &[u8],
        req: Option<(&str, &str, Version)>,
        status: u16,
        bytes: u64,
    ) {
        let mut b = self.buf.borrow_mut();
        let (method, target) =
            req.map_or((&[][..], &[][..]), |(m, t, _)| (m.as_bytes(), t.as_bytes()));
        // One reservation for the whole line (an escaped byte takes four), so that the
        // appends below never grow the buffer one by one.
        b.reserve(start.len() + method.len() + 4 * target.len() + 96);
        b.extend_from_slice(start);
        // The date and what follows it, as one fixed-size copy.
        let mut dated = [0u8; 29];
        with_log_date(|d| dated[..26].copy_from_slice(d));
        match req {
            Some((_, _, version)) => {
                dated[26..].copy_from_slice(b"] \"");
                b.extend_from_slice(&dated);
                b.extend_from_slice(method);
                b.push(b' ');
                push_escaped(&mut b, target);
                b.extend_from_slice(match version {
                    Version::HTTP_10 => b" HTTP/1.0\" ",
                    _ => b" HTTP/1.1\" ",
                });
            }
            None => {
                b.extend_from_slice(&dated[..26]);
                b.extend_from_slice(b"] \"-\" ");
            }
        }
        // The status (three digits), the body bytes and the newline, as one copy.
        let mut tail = [0u8; 26];
        let s = status.min(999);
        tail[..4].copy_from_slice(&[
            b'0' + (s / 100) as u8,
            b'0' + (s / 10 % 10) as u8,
            b'0' + (s % 10) as u8,
            b' ',
        ]);
        let end = if bytes == 0 {
            tail[4] = b'-';
            5
        } else {
            4 + crate::wire::put_dec(&mut tail[4..], bytes)
        };
        tail[end] = b'\n';
        b.extend_from_slice(&tail[..end + 1]);
        let first = self.lines.get() == 0;
        self.lines.set(self.lines.get() + 1);
        let full = b.len() >= HANDOFF_AT;
        drop(b);
        if full {
            self.hand_over();
        } else if first {
            if let Some(w) = self.flusher.borrow_mut().take() {
                w.wake();
            }
        }
    }

    /// Hands the lines gathered so far to the log thread.
    pub(crate) fn hand_over(&self) {
        let lines = self.lines.replace(0);
        if lines == 0 {
            return;
        }
        let mut b = self.buf.borrow_mut();
        let full = std::mem::take(&mut *b);
        *b = self.log.hand_over(full, lines);
    }

    /// This core's flusher: hands lines over [`FLUSH_AFTER`] the first one; runs until
    /// dropped.
    pub(crate) async fn flusher(self: Rc<Self>) {
        loop {
            poll_fn(|cx| {
                if self.lines.get() > 0 {
                    Poll::Ready(())
                } else {
                    *self.flusher.borrow_mut() = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await;
            ringway::time::sleep(FLUSH_AFTER).await;
            self.hand_over();
        }
    }
}

/// Appends a target, with `"` and `\` escaped as `\x22` and `\x5C` (as nginx does), so
/// that the quoted request field of the line cannot be broken by what a client sent.
/// A target holds only visible ASCII (the scanner checked), so nothing else needs it.
fn push_escaped(out: &mut Vec<u8>, target: &[u8]) {
    if !needs_escape(target) {
        out.extend_from_slice(target);
        return;
    }
    for &b in target {
        match b {
            b'"' => out.extend_from_slice(b"\\x22"),
            b'\\' => out.extend_from_slice(b"\\x5C"),
            _ => out.push(b),
        }
    }
}

/// Whether `target` holds a `"` or a `\`, eight bytes per step: a target is short, and
/// two `memchr` calls cost more than the scan itself (callgrind: 110 instructions for
/// `/plaintext`, against about 20 this way).
fn needs_escape(target: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Non-zero when some byte of `x` is zero (exact for the bytes that matter: a
    // borrow only propagates above a zero byte, which is already flagged).
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut words = target.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if has_zero(x ^ (ONES * b'"' as u64)) | has_zero(x ^ (ONES * b'\\' as u64)) != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b == b'"' || b == b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink the test reads.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_are_formatted_and_reach_the_sink_at_close() {
        let sink = Shared::default();
        let stats = Arc::new(Stats::default());
        let log = AccessLog::start(Box::new(sink.clone()), stats.clone()).unwrap();
        let core = CoreLog::new(log.clone());
        core.line(
            b"10.0.0.200 - - [",
            Some(("GET", "/a\"b", Version::HTTP_11)),
            200,
            13,
        );
        core.line(b"- - - [", None, 400, 0);
        core.hand_over();
        log.close(Duration::from_secs(5));
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("10.0.0.200 - - ["), "{text}");
        assert!(
            lines[0].ends_with(" +0000] \"GET /a\\x22b HTTP/1.1\" 200 13"),
            "{text}"
        );
        assert!(lines[1].starts_with("- - - [") && lines[1].ends_with("] \"-\" 400 -"));
        assert_eq!((log.written(), stats.snapshot().log_dropped), (2, 0));
    }

    /// A sink that never returns: the log thread blocks in it, the queue fills, and
    /// further batches are dropped and counted, never waited for.
    #[test]
    fn the_escape_check_finds_a_quote_or_backslash_at_any_position() {
        for len in 0..40 {
            let clean = vec![b'a'; len];
            assert!(!needs_escape(&clean), "len {len}");
            // Bytes next to the two that matter ('!' 0x21, '#' 0x23, '[' 0x5B, ']' 0x5D)
            // and the high bit must not be taken for them.
            let near: Vec<u8> = (0..len).map(|i| b"!#[]~\x7f"[i % 6]).collect();
            assert!(!needs_escape(&near), "len {len}");
            for at in 0..len {
                for bad in [b'"', b'\\'] {
                    let mut t = clean.clone();
                    t[at] = bad;
                    assert!(needs_escape(&t), "len {len} at {at}");
                }
            }
        }
    }

    #[test]
    fn a_line_carries_a_large_byte_count_and_escapes_a_backslash() {
        let sink = Shared::default();
        let stats = Arc::new(Stats::default());
        let log = AccessLog::start(Box::new(sink.clone()), stats).unwrap();
        let core = CoreLog::new(log.clone());
        let target = "/0123456789abcdef\\x";
        core.line(
            b"::1 - - [",
            Some(("POST", target, Version::HTTP_10)),
            999,
            u64::MAX,
        );
        core.hand_over();
        log.close(Duration::from_secs(5));
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.ends_with(
                " +0000] \"POST /0123456789abcdef\\x5Cx HTTP/1.0\" 999 18446744073709551615\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_stalled_sink_drops_and_counts_instead_of_blocking() {
        struct Stalled(std::sync::mpsc::Receiver<()>);
        impl Write for Stalled {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                let _ = self.0.recv();
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (release, stalled) = std::sync::mpsc::channel();
        let stats = Arc::new(Stats::default());
        let log = AccessLog::start(Box::new(Stalled(stalled)), stats.clone()).unwrap();
        let core = CoreLog::new(log.clone());
        let batches = QUEUED as u64 + 5;
        for _ in 0..batches {
            core.line(b"- - - [", Some(("GET", "/", Version::HTTP_11)), 200, 1);
            core.hand_over();
        }
        // One batch is in the sink's hands, QUEUED wait, the rest were dropped.
        let dropped = stats.snapshot().log_dropped;
        assert!(dropped >= batches - QUEUED as u64 - 1, "{dropped}");
        log.close(Duration::from_millis(100));
        drop(release);
    }
}
