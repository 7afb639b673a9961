//! Spawning, watching and stopping the processes of a round.
//!
//! Servers and the client run as separate processes pinned to disjoint cores with
//! `taskset -c CPU` (which execs the program, so the pid we get is the program's own).
//! Their output is read line by line on helper threads and handed over through a channel,
//! so that the harness can wait for a line such as `listening on` with a timeout.
//! Stopping is by pid only: SIGTERM, then SIGKILL after a grace period, then reaping.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// An event from a watched process's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// One line, without its newline.
    Line(Stream, String),
    /// The stream reached end of file (the process closed it, usually by exiting).
    Eof(Stream),
}

/// Why waiting for a line did not produce it.
#[derive(Debug)]
pub enum WaitError {
    /// The timeout passed first.
    Timeout,
    /// Both output streams closed without the line appearing.
    Closed,
}

/// How many stderr lines to keep for error messages.
const STDERR_TAIL_LINES: usize = 20;

/// A child process whose stdout and stderr are read on helper threads.
#[derive(Debug)]
pub struct Watched {
    child: Child,
    events: Receiver<Event>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    open_streams: usize,
    reaped: Option<ExitStatus>,
}

/// Builds the argv that runs `argv` pinned to `cpu` (or unpinned for `None`).
pub fn pinned_argv(cpu: Option<usize>, argv: &[String]) -> Vec<String> {
    pinned_argv_list(cpu.map(|c| c.to_string()).as_deref(), argv)
}

/// Builds the argv that runs `argv` pinned to the CPU list `cpus` (or unpinned).
pub fn pinned_argv_list(cpus: Option<&str>, argv: &[String]) -> Vec<String> {
    let mut full = Vec::with_capacity(argv.len() + 3);
    if let Some(cpus) = cpus {
        full.push("taskset".to_string());
        full.push("-c".to_string());
        full.push(cpus.to_string());
    }
    full.extend(argv.iter().cloned());
    full
}

fn forward<R: Read + Send + 'static>(
    reader: R,
    stream: Stream,
    tx: Sender<Event>,
    tail: Option<Arc<Mutex<VecDeque<String>>>>,
) {
    thread::spawn(move || {
        let mut reader = BufReader::new(reader);
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = line.trim_end_matches(['\n', '\r']).to_string();
                    if let Some(tail) = &tail {
                        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                        if tail.len() == STDERR_TAIL_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(text.clone());
                    }
                    // The receiver may be gone (the harness gave up): keep draining anyway
                    // so that the child never blocks on a full pipe.
                    let _ = tx.send(Event::Line(stream, text));
                }
            }
        }
        let _ = tx.send(Event::Eof(stream));
    });
}

impl Watched {
    /// Spawns `argv` (pinned to `cpu` if given) with stdin closed and stdout/stderr watched.
    pub fn spawn(cpu: Option<usize>, argv: &[String]) -> io::Result<Watched> {
        let cpus = cpu.map(|c| c.to_string());
        Watched::spawn_in(cpus.as_deref(), argv, &[], None)
    }

    /// Spawns `argv` pinned to the `taskset -c` list `cpus` (`0`, `0-1`, `0,2`) if given,
    /// with extra environment variables and an optional working directory.
    pub fn spawn_in(
        cpus: Option<&str>,
        argv: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
    ) -> io::Result<Watched> {
        let full = pinned_argv_list(cpus, argv);
        let (program, args) = full
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command line"))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn()?;
        let (tx, rx) = mpsc::channel();
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        forward(stdout, Stream::Stdout, tx.clone(), None);
        forward(stderr, Stream::Stderr, tx, Some(Arc::clone(&tail)));
        Ok(Watched {
            child,
            events: rx,
            stderr_tail: tail,
            open_streams: 2,
            reaped: None,
        })
    }

    /// The child's pid (the program's own: `taskset` execs it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Next output event, waiting at most until `deadline`.
    pub fn next_event(&mut self, deadline: Instant) -> Result<Event, WaitError> {
        if self.open_streams == 0 {
            return Err(WaitError::Closed);
        }
        let timeout = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(timeout) {
            Ok(ev) => {
                if let Event::Eof(_) = ev {
                    self.open_streams -= 1;
                }
                Ok(ev)
            }
            Err(RecvTimeoutError::Timeout) => Err(WaitError::Timeout),
            Err(RecvTimeoutError::Disconnected) => {
                self.open_streams = 0;
                Err(WaitError::Closed)
            }
        }
    }

    /// Waits until a line of `stream` satisfies `pred` and returns it.
    pub fn wait_for_line(
        &mut self,
        stream: Stream,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, WaitError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_event(deadline)? {
                Event::Line(s, line) if s == stream && pred(&line) => return Ok(line),
                _ => {}
            }
        }
    }

    /// The last lines the child wrote to stderr, joined for an error message.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join(" | ")
    }

    /// Non-blocking check whether the child has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(st) = self.reaped {
            return Ok(Some(st));
        }
        let st = self.child.try_wait()?;
        self.reaped = st;
        Ok(st)
    }

    /// Waits for the child to exit for at most `timeout`.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.try_wait()? {
                return Ok(Some(st));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits (at most `timeout`) for the child to exit and reaps it with `wait4`, which
    /// also returns the CPU time (user + system, all its threads) it used over its life.
    /// `Ok(None)` if it is still running at the timeout.
    pub fn wait_with_cpu(
        &mut self,
        timeout: Duration,
    ) -> io::Result<Option<(ExitStatus, Duration)>> {
        use std::os::unix::process::ExitStatusExt;
        if self.reaped.is_some() {
            return Err(io::Error::other("already reaped: its CPU time is gone"));
        }
        let pid = libc::pid_t::try_from(self.pid())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
        let deadline = Instant::now() + timeout;
        loop {
            let mut status = 0;
            // SAFETY: rusage is plain data, fully written by wait4 on success.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: valid out pointers; `pid` is our own unreaped child (std's `Child`
            // has not waited for it: `reaped` is None), so nothing else reaps it.
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if r == pid {
                let st = ExitStatus::from_raw(status);
                self.reaped = Some(st);
                let tv = |t: libc::timeval| {
                    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
                };
                return Ok(Some((st, tv(usage.ru_utime) + tv(usage.ru_stime))));
            }
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// Sends `signal` to the child, unless it has already been reaped.
    pub fn signal(&mut self, signal: libc::c_int) -> io::Result<()> {
        if self.try_wait()?.is_some() {
            return Ok(());
        }
        send_signal(self.pid(), signal)
    }

    /// SIGTERM, then SIGKILL if the child is still alive after `grace`; always reaps it.
    pub fn stop(&mut self, grace: Duration) -> io::Result<ExitStatus> {
        self.signal(libc::SIGTERM)?;
        if let Some(st) = self.wait_timeout(grace)? {
            return Ok(st);
        }
        self.signal(libc::SIGKILL)?;
        let st = self.child.wait()?;
        self.reaped = Some(st);
        Ok(st)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            let _ = self.stop(Duration::from_secs(2));
        }
    }
}

/// Sends `signal` to process `pid`.
pub fn send_signal(pid: u32, signal: libc::c_int) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill(2) takes no pointers and has no memory-safety preconditions. (That the
    // pid still names our own unreaped child is a correctness matter the callers check.)
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pinning_prefixes_taskset() {
        assert_eq!(
            pinned_argv(Some(1), &argv(&["srv", "--bind", "x"])),
            argv(&["taskset", "-c", "1", "srv", "--bind", "x"])
        );
        assert_eq!(pinned_argv(None, &argv(&["srv"])), argv(&["srv"]));
    }

    #[test]
    fn waits_for_a_line_and_sees_stderr() {
        let mut w = Watched::spawn(
            None,
            &argv(&[
                "sh",
                "-c",
                "echo noise; echo oops >&2; echo 'listening on 1.2.3.4:5'",
            ]),
        )
        .unwrap();
        let line = w
            .wait_for_line(
                Stream::Stdout,
                |l| l.starts_with("listening on"),
                Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(line, "listening on 1.2.3.4:5");
        let st = w.wait_timeout(Duration::from_secs(10)).unwrap().unwrap();
        assert!(st.success());
        // Drain what is left so the stderr tail is complete.
        while w
            .next_event(Instant::now() + Duration::from_secs(5))
            .is_ok()
        {}
        assert_eq!(w.stderr_tail(), "oops");
    }

    #[test]
    fn wait_with_cpu_reports_the_childs_cpu_time() {
        let mut w = Watched::spawn(
            None,
            &argv(&[
                "sh",
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
            ]),
        )
        .unwrap();
        let (st, cpu) = w.wait_with_cpu(Duration::from_secs(60)).unwrap().unwrap();
        assert!(st.success());
        assert!(cpu > Duration::from_millis(1), "a busy loop used {cpu:?}");
        assert!(w.try_wait().unwrap().is_some(), "reaped");
        let mut sleeper = Watched::spawn(None, &argv(&["sleep", "30"])).unwrap();
        assert!(sleeper
            .wait_with_cpu(Duration::from_millis(20))
            .unwrap()
            .is_none());
        sleeper.stop(Duration::from_secs(2)).unwrap();
    }

    #[test]
    fn missing_line_reports_closed_then_stop_kills_a_sleeper() {
        let mut w = Watched::spawn(None, &argv(&["sh", "-c", "echo hi"])).unwrap();
        let err = w
            .wait_for_line(Stream::Stdout, |l| l == "never", Duration::from_secs(10))
            .unwrap_err();
        assert!(matches!(err, WaitError::Closed));

        let mut sleeper = Watched::spawn(None, &argv(&["sleep", "30"])).unwrap();
        let err = sleeper
            .wait_for_line(Stream::Stdout, |_| true, Duration::from_millis(50))
            .unwrap_err();
        assert!(matches!(err, WaitError::Timeout));
        let started = Instant::now();
        let st = sleeper.stop(Duration::from_secs(2)).unwrap();
        assert!(!st.success(), "killed by SIGTERM");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "SIGTERM was enough"
        );
    }
}
