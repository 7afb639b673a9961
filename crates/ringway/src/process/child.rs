//! [`Child`]: a running child process, waited for through its pidfd.

use std::io;
use std::process::{ExitStatus, Output};

use super::pidfd::{reap_in_background, PidFd};
use super::stdio::{read_to_end, ChildStderr, ChildStdin, ChildStdout};
use crate::signal::SignalKind;

/// A child process started by [`Command::spawn`](super::Command::spawn).
///
/// Waited for through a pidfd (no `SIGCHLD` handler, no other child's status touched).
/// **Dropping it never leaves a zombie**: a child still running then is reaped in the
/// background when it exits (by a task on the current core, or by the blocking pool
/// outside a runtime). With [`kill_on_drop`](super::Command::kill_on_drop) it is killed
/// first.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    /// `None` once reaped.
    pidfd: Option<PidFd>,
    status: Option<ExitStatus>,
    kill_on_drop: bool,
    /// The child's stdin, if it was piped.
    pub stdin: Option<ChildStdin>,
    /// The child's stdout, if it was piped.
    pub stdout: Option<ChildStdout>,
    /// The child's stderr, if it was piped.
    pub stderr: Option<ChildStderr>,
}

impl Child {
    pub(super) fn new(
        pid: u32,
        pidfd: PidFd,
        kill_on_drop: bool,
        stdio: (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>),
    ) -> Child {
        Child {
            pid,
            pidfd: Some(pidfd),
            status: None,
            kill_on_drop,
            stdin: stdio.0,
            stdout: stdio.1,
            stderr: stdio.2,
        }
    }

    /// The child's pid, or `None` once it has been reaped (the number may then belong
    /// to another process).
    pub fn id(&self) -> Option<u32> {
        self.status.is_none().then_some(self.pid)
    }

    /// Waits for the child to exit and returns its status. Closes the child's stdin
    /// first (a child that reads it to the end would otherwise wait forever). Cancel
    /// safe: dropping the future leaves the child to a later `wait`.
    ///
    /// # Errors
    ///
    /// What `waitid` answers; `ECHILD` if a wait of this child was dropped at the very
    /// moment it reaped the child (its status is lost then).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        if let Some(st) = self.status {
            return Ok(st);
        }
        let pidfd = self
            .pidfd
            .as_ref()
            .expect("a child not reaped has its pidfd");
        let st = pidfd.wait().await?;
        self.reaped(st);
        Ok(st)
    }

    /// The status if the child has exited (reaping it), `None` if it still runs.
    /// Never blocks.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(st) = self.status {
            return Ok(Some(st));
        }
        let pidfd = self
            .pidfd
            .as_ref()
            .expect("a child not reaped has its pidfd");
        let st = pidfd.try_reap()?;
        if let Some(st) = st {
            self.reaped(st);
        }
        Ok(st)
    }

    fn reaped(&mut self, st: ExitStatus) {
        self.status = Some(st);
        self.pidfd = None;
    }

    /// Sends `SIGKILL` and returns at once; [`wait`](Self::wait) for the status.
    ///
    /// # Errors
    ///
    /// `InvalidInput` if the child has already been reaped (there is nothing left to
    /// kill, and its pid may be another process's by now).
    pub fn start_kill(&mut self) -> io::Result<()> {
        self.send_signal(SignalKind::from_raw(libc::SIGKILL))
    }

    /// Kills the child (`SIGKILL`) and waits for it to go.
    ///
    /// # Errors
    ///
    /// As [`start_kill`](Self::start_kill) and [`wait`](Self::wait).
    pub async fn kill(&mut self) -> io::Result<ExitStatus> {
        self.start_kill()?;
        self.wait().await
    }

    /// Sends `signal` to the child, through its pidfd (never to a process that took
    /// its pid after it was reaped).
    ///
    /// # Errors
    ///
    /// `InvalidInput` if the child has already been reaped; otherwise what
    /// `pidfd_send_signal` answers (`EINVAL` for a number that is not a signal).
    pub fn send_signal(&mut self, signal: SignalKind) -> io::Result<()> {
        match &self.pidfd {
            Some(p) => p.send_signal(signal.as_raw()),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "ringway::process: cannot send signal {signal} to child {}: it has \
                     exited and been reaped",
                    self.pid
                ),
            )),
        }
    }

    /// Waits for the child while reading its piped stdout and stderr to their ends (at
    /// the same time: a child that fills one pipe while the other is not read would
    /// otherwise never exit). Streams that were not piped give empty vectors.
    pub async fn wait_with_output(mut self) -> io::Result<Output> {
        drop(self.stdin.take());
        let stderr = self
            .stderr
            .take()
            .map(|e| crate::spawn(async move { read_to_end(e.stream(), Vec::new()).await }));
        let stdout = match self.stdout.take() {
            Some(o) => read_to_end(o.stream(), Vec::new()).await?,
            None => Vec::new(),
        };
        let stderr = match stderr {
            Some(task) => task
                .await
                .map_err(|e| io::Error::other(format!("reading the child's stderr: {e}")))??,
            None => Vec::new(),
        };
        let status = self.wait().await?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let Some(pidfd) = self.pidfd.take() else {
            return;
        };
        if self.kill_on_drop {
            let _ = pidfd.send_signal(libc::SIGKILL);
        }
        match pidfd.try_reap() {
            Ok(Some(_)) => {}
            Ok(None) => reap_in_background(pidfd),
            Err(e) => tracing::warn!(pid = self.pid, error = %e, "could not reap a dropped child"),
        }
    }
}
