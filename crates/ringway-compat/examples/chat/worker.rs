//! The worker process: a word filter the service runs beside itself (`sh -c COMMAND`,
//! by default a `sed` script), spawned with `ringway::process::Command`. Each message
//! goes to its stdin as one line and comes back filtered as one line on its stdout;
//! both pipes are ringway streams (owned buffers through the ring), and the process is
//! waited for through its pidfd (no `SIGCHLD` handler).
//!
//! A supervisor task on core 0 owns the process. Any core asks it through an `mpsc`
//! channel (`Send`, lock-free) and gets the answer on a `oneshot`. Requests are
//! pipelined: each is written as soon as it comes, and a reader task on the same core
//! hands the worker's lines to the requests in order (the queue between the two is
//! core-local, a `RefCell`). If the worker dies, the supervisor reaps it, starts a new
//! one (waiting longer after each quick death, up to 5 s) and sends it again what the
//! dead one had not answered (once: a message that kills two workers is dropped, its
//! sender told). At shutdown it closes the worker's stdin, lets it answer what it has,
//! and reaps it (killing it if it has not gone within a second).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::os::unix::process::CommandExt;
use std::pin::Pin;
use std::process::ExitStatus;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use ringway::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use ringway::sync::{mpsc, oneshot};

/// How long the first worker gets to answer its first line at start-up.
const START_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a worker gets to exit after its stdin is closed, before it is killed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(1);
/// A worker that dies sooner than this after it started makes the next start wait
/// twice as long (from 100 ms, at most 5 s).
const QUICK_DEATH: Duration = Duration::from_secs(1);

/// Asks the worker to filter messages; cheap to clone, usable on any core.
#[derive(Clone)]
pub(crate) struct Worker {
    requests: mpsc::UnboundedSender<Request>,
    status: Arc<Status>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("status", &self.status)
            .finish()
    }
}

/// What the supervisor publishes for `GET /worker` (read from any core).
#[derive(Debug, Default)]
pub(crate) struct Status {
    pid: AtomicU32,
    restarts: AtomicU64,
    filtered: AtomicU64,
}

impl Status {
    /// The running worker's pid (0 between a death and the next start), how many
    /// times a worker was started again, how many messages were filtered.
    pub(crate) fn read(&self) -> (u32, u64, u64) {
        (
            self.pid.load(Ordering::Relaxed),
            self.restarts.load(Ordering::Relaxed),
            self.filtered.load(Ordering::Relaxed),
        )
    }
}

/// Why a message was not filtered.
#[derive(Debug)]
pub(crate) enum FilterError {
    /// The supervisor has stopped (shutdown).
    Stopped,
    /// The message was sent to two workers and both died.
    Dropped,
}

enum Request {
    Filter(Job),
    Stop,
}

struct Job {
    line: String,
    reply: oneshot::Sender<String>,
    /// Workers this job was sent to that died before answering.
    lost: u8,
}

/// How the supervisor ended.
#[derive(Debug)]
pub(crate) struct Summary {
    /// Workers started again after a death.
    pub(crate) restarts: u64,
    /// Messages filtered.
    pub(crate) filtered: u64,
}

impl Worker {
    /// Starts the worker (on this core, which will supervise it) and checks that it
    /// answers a line: a command that does not run, or does not answer, is an error
    /// here rather than a service that cannot post.
    pub(crate) async fn start(
        command: String,
    ) -> io::Result<(Worker, ringway::JoinHandle<Summary>)> {
        let mut first = Process::spawn(&command)?;
        let answered = ringway::time::timeout(START_TIMEOUT, first.probe()).await;
        let refused = match answered {
            Ok(Ok(true)) => None,
            Ok(Ok(false)) => Some("closed its stdout without answering".to_string()),
            Ok(Err(e)) => Some(format!("could not be talked to: {e}")),
            Err(_) => Some(format!("did not answer within {START_TIMEOUT:?}")),
        };
        if let Some(why) = refused {
            let pid = first.pid;
            let status = first.stop().await;
            return Err(io::Error::other(format!(
                "the worker {command:?} (pid {pid}) {why}; it ended with {}",
                describe(&status)
            )));
        }
        let status = Arc::new(Status::default());
        status.pid.store(first.pid, Ordering::Relaxed);
        let (requests, inbox) = mpsc::unbounded_channel();
        let supervisor = ringway::spawn(supervise(command, first, inbox, status.clone()));
        Ok((Worker { requests, status }, supervisor))
    }

    /// The worker's answer for `text` (newlines become spaces: one message, one line).
    pub(crate) async fn filter(&self, text: &str) -> Result<String, FilterError> {
        let (reply, answer) = oneshot::channel();
        let line = text.replace(['\n', '\r'], " ");
        self.requests
            .send(Request::Filter(Job {
                line,
                reply,
                lost: 0,
            }))
            .map_err(|_| FilterError::Stopped)?;
        answer.await.map_err(|_| FilterError::Dropped)
    }

    /// What `GET /worker` shows.
    pub(crate) fn status(&self) -> &Status {
        &self.status
    }

    /// Stops the supervisor after every request sent before this one is answered, and
    /// waits for it to reap its worker.
    pub(crate) async fn stop(&self, supervisor: ringway::JoinHandle<Summary>) -> Summary {
        let _ = self.requests.send(Request::Stop);
        supervisor.await.expect("the supervisor does not panic")
    }
}

/// One running worker: the child, its stdin, and the reader task that answers the
/// pending requests from its stdout.
struct Process {
    pid: u32,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Option<Lines>,
    pending: Rc<RefCell<VecDeque<Job>>>,
    reader: Option<ringway::JoinHandle<()>>,
    started: Instant,
}

impl Process {
    fn spawn(command: &str) -> io::Result<Process> {
        let mut command_line = Command::new("sh");
        command_line
            .args(["-c", command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        // A process group of its own: a ctrl-c at the terminal signals the whole
        // foreground group, and the worker must outlive it long enough to answer what
        // is in flight; the service stops it, in order.
        command_line.as_std_mut().process_group(0);
        let mut child = command_line
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start the worker: {e}")))?;
        let pid = child.id().expect("a child just spawned has a pid");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        Ok(Process {
            pid,
            child,
            stdin,
            lines: Some(Lines::new(stdout)),
            pending: Rc::default(),
            reader: None,
            started: Instant::now(),
        })
    }

    /// Sends one line and reads one back: whether it answered.
    async fn probe(&mut self) -> io::Result<bool> {
        let stdin = self.stdin.as_mut().expect("not yet closed");
        stdin.write_all(b"ready?\n".to_vec()).await.0?;
        let lines = self.lines.as_mut().expect("the reader has not started");
        Ok(lines.next().await?.is_some())
    }

    /// Starts the reader task: each line the worker writes answers the oldest pending
    /// request. It ends when the worker closes its stdout (exit, or death).
    fn start_reader(&mut self, status: Arc<Status>) {
        let mut lines = self.lines.take().expect("started once");
        let pending = self.pending.clone();
        self.reader = Some(ringway::spawn(async move {
            while let Ok(Some(line)) = lines.next().await {
                let Some(job) = pending.borrow_mut().pop_front() else {
                    eprintln!("chat: the worker wrote a line nobody asked for: {line:?}");
                    continue;
                };
                status.filtered.fetch_add(1, Ordering::Relaxed);
                let _ = job.reply.send(line); // the asker may have given up (timeout)
            }
        }));
    }

    /// Writes a request's line; the job waits in `pending` for its answer.
    async fn send(&mut self, job: Job) -> io::Result<()> {
        let line = format!("{}\n", job.line).into_bytes();
        self.pending.borrow_mut().push_back(job);
        let stdin = self.stdin.as_mut().expect("not yet closed");
        stdin.write_all(line).await.0
    }

    /// Closes stdin, lets the worker answer what it has and exit, kills it if it
    /// outstays `EXIT_TIMEOUT`, and reaps it.
    async fn stop(mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        let deadline = Instant::now() + EXIT_TIMEOUT;
        if let Some(reader) = self.reader.take() {
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = ringway::time::timeout(left, reader).await;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match ringway::time::timeout(left, self.child.wait()).await {
            Ok(status) => status,
            Err(_) => self.child.kill().await,
        }
    }
}

/// Lines from the worker's stdout, read through the ring into one reused buffer.
struct Lines {
    stdout: ChildStdout,
    /// Bytes read and not yet returned as lines.
    held: Vec<u8>,
    /// The read buffer, between reads.
    spare: Option<Vec<u8>>,
}

impl Lines {
    fn new(stdout: ChildStdout) -> Lines {
        Lines {
            stdout,
            held: Vec::new(),
            spare: Some(Vec::with_capacity(4096)),
        }
    }

    /// The next line (without its `\n`), or `None` at end of file.
    async fn next(&mut self) -> io::Result<Option<String>> {
        loop {
            if let Some(at) = self.held.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.held.drain(..=at).collect();
                return Ok(Some(String::from_utf8_lossy(&line[..at]).into_owned()));
            }
            let mut buf = self.spare.take().unwrap_or_default();
            buf.clear();
            let (read, buf) = self.stdout.read(buf).await;
            let n = read?;
            self.held.extend_from_slice(&buf[..n]);
            self.spare = Some(buf);
            if n == 0 {
                return Ok(None);
            }
        }
    }
}

/// What woke the supervisor.
enum Event {
    Request(Option<Request>),
    WorkerGone,
}

/// Runs workers until asked to stop; see the module docs.
async fn supervise(
    command: String,
    first: Process,
    mut inbox: mpsc::UnboundedReceiver<Request>,
    status: Arc<Status>,
) -> Summary {
    let mut process = first;
    process.start_reader(status.clone());
    let mut wait = Duration::from_millis(100);
    // Requests a dead worker took and did not answer, to send again first.
    let mut again: VecDeque<Job> = VecDeque::new();
    loop {
        while let Some(job) = again.pop_front() {
            if process.send(job).await.is_err() {
                break; // the new worker is dead too: the reader tells the loop below
            }
        }
        let event = poll_fn(|cx| {
            let reader = process.reader.as_mut().expect("started");
            if Pin::new(reader).poll(cx).is_ready() {
                return Poll::Ready(Event::WorkerGone);
            }
            inbox.poll_recv(cx).map(Event::Request)
        })
        .await;
        match event {
            Event::Request(Some(Request::Filter(job))) => {
                // A failed write means the worker died; its reader ends and says so.
                let _ = process.send(job).await;
            }
            Event::Request(Some(Request::Stop) | None) => {
                let pid = process.pid;
                let exit = process.stop().await;
                status.pid.store(0, Ordering::Relaxed);
                println!("worker pid {pid} reaped: {}", describe(&exit));
                let (_, restarts, filtered) = status.read();
                return Summary { restarts, filtered };
            }
            Event::WorkerGone => {
                process.reader = None;
                let pid = process.pid;
                let lived = process.started.elapsed();
                // What it took and did not answer goes first, in the order it came, then
                // what still waited to be sent again. A job lost twice is dropped (its
                // asker sees the reply channel close).
                let mut lost: VecDeque<Job> = process.pending.borrow_mut().drain(..).collect();
                lost.retain_mut(|job| {
                    job.lost += 1;
                    job.lost < 2
                });
                lost.append(&mut again);
                again = lost;
                let exit = process.stop().await;
                status.pid.store(0, Ordering::Relaxed);
                eprintln!(
                    "chat: worker pid {pid} died ({}) after {lived:?}; starting another",
                    describe(&exit)
                );
                println!("worker pid {pid} reaped: {}", describe(&exit));
                wait = if lived < QUICK_DEATH {
                    (wait * 2).min(Duration::from_secs(5))
                } else {
                    Duration::from_millis(100)
                };
                let Some(next) = start_again(&command, wait, &mut inbox, &mut again).await else {
                    let (_, restarts, filtered) = status.read();
                    return Summary { restarts, filtered };
                };
                process = next;
                status.pid.store(process.pid, Ordering::Relaxed);
                status.restarts.fetch_add(1, Ordering::Relaxed);
                process.start_reader(status.clone());
            }
        }
    }
}

/// Waits `wait`, then starts a worker, trying again (each time waiting twice as long,
/// at most 5 s) until one starts. Requests that come meanwhile join `again`, behind
/// the ones the dead worker left; a stop ends the wait (`None`: the jobs still waiting
/// are dropped, and their askers told).
async fn start_again(
    command: &str,
    mut wait: Duration,
    inbox: &mut mpsc::UnboundedReceiver<Request>,
    again: &mut VecDeque<Job>,
) -> Option<Process> {
    loop {
        let mut sleep = std::pin::pin!(ringway::time::sleep(wait));
        let stopped = poll_fn(|cx| loop {
            match inbox.poll_recv(cx) {
                Poll::Ready(Some(Request::Filter(job))) => again.push_back(job),
                Poll::Ready(Some(Request::Stop) | None) => return Poll::Ready(true),
                Poll::Pending => return sleep.as_mut().poll(cx).map(|()| false),
            }
        })
        .await;
        if stopped {
            again.clear();
            return None;
        }
        match Process::spawn(command) {
            Ok(p) => return Some(p),
            Err(e) => {
                wait = (wait * 2).min(Duration::from_secs(5));
                eprintln!("chat: {e}; trying again in {wait:?}");
            }
        }
    }
}

fn describe(status: &io::Result<ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("error {e}"),
    }
}
