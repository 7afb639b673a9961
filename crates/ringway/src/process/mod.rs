//! Child processes: [`Command`] spawns, [`Child`] waits, kills and reads.
//!
//! The builder is std's (`std::process::Command` inside), so arguments, environment,
//! working directory and [`Stdio`] mean what they mean there, and the child starts
//! with the default signal mask and dispositions whatever the runtime blocks. What
//! differs is the waiting: each child gets a pidfd, and the core waits on it through
//! its driver (`IORING_OP_WAITID` on io_uring where the kernel has it, from 6.7; a poll
//! of the pidfd before that; readiness of the pidfd on epoll). There is no `SIGCHLD`
//! handler and no `waitpid(-1)`, so children that other code started are never reaped
//! by accident, and a dropped [`Child`] is still reaped: nothing is left a zombie.
//! Piped stdio are ringway streams: owned buffers in, `(result, buffer)` out.
//!
//! # Examples
//!
//! ```
//! use ringway::process::Command;
//!
//! #[ringway::main]
//! async fn main() -> std::io::Result<()> {
//!     let out = Command::new("echo").arg("hello").output().await?;
//!     assert!(out.status.success());
//!     assert_eq!(out.stdout, b"hello\n");
//!
//!     let err = Command::new("no-such-program").spawn().unwrap_err();
//!     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
//!     Ok(())
//! }
//! ```

mod child;
mod pidfd;
mod stdio;

pub use child::Child;
pub use std::process::{ExitStatus, Output, Stdio};
pub use stdio::{ChildStderr, ChildStdin, ChildStdout};

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use self::pidfd::PidFd;

/// A process to start: std's builder, with ringway's waiting. See the
/// [module docs](self).
#[derive(Debug)]
pub struct Command {
    inner: std::process::Command,
    kill_on_drop: bool,
    /// Set explicitly (so `output` keeps the caller's choice).
    stdio_set: [bool; 3],
}

impl Command {
    /// A command that runs `program` (looked up in `PATH` if it has no `/`).
    pub fn new<S: AsRef<OsStr>>(program: S) -> Command {
        Command {
            inner: std::process::Command::new(program),
            kill_on_drop: false,
            stdio_set: [false; 3],
        }
    }

    /// Adds an argument.
    pub fn arg<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        self.inner.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.inner.args(args);
        self
    }

    /// Sets an environment variable for the child.
    pub fn env<K: AsRef<OsStr>, V: AsRef<OsStr>>(&mut self, key: K, val: V) -> &mut Command {
        self.inner.env(key, val);
        self
    }

    /// Sets several environment variables for the child.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.inner.envs(vars);
        self
    }

    /// Removes an environment variable from the child's environment.
    pub fn env_remove<K: AsRef<OsStr>>(&mut self, key: K) -> &mut Command {
        self.inner.env_remove(key);
        self
    }

    /// Starts the child with an empty environment (plus what `env` adds).
    pub fn env_clear(&mut self) -> &mut Command {
        self.inner.env_clear();
        self
    }

    /// The child's working directory.
    pub fn current_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Command {
        self.inner.current_dir(dir);
        self
    }

    /// The child's stdin: [`Stdio::piped`] makes [`Child::stdin`] a ringway stream.
    pub fn stdin<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.inner.stdin(cfg);
        self.stdio_set[0] = true;
        self
    }

    /// The child's stdout: [`Stdio::piped`] makes [`Child::stdout`] a ringway stream.
    pub fn stdout<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.inner.stdout(cfg);
        self.stdio_set[1] = true;
        self
    }

    /// The child's stderr: [`Stdio::piped`] makes [`Child::stderr`] a ringway stream.
    pub fn stderr<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.inner.stderr(cfg);
        self.stdio_set[2] = true;
        self
    }

    /// Kill the child (`SIGKILL`) if its [`Child`] is dropped before it was reaped.
    /// Off by default: a dropped child runs on (and is reaped when it exits).
    pub fn kill_on_drop(&mut self, on: bool) -> &mut Command {
        self.kill_on_drop = on;
        self
    }

    /// Starts the child.
    ///
    /// # Errors
    ///
    /// What starting it failed with, the program named in the message: `NotFound` for a
    /// program that does not exist (`cannot run "nope": No such file or directory`),
    /// `PermissionDenied` for one that may not be run, and so on.
    pub fn spawn(&mut self) -> io::Result<Child> {
        let program = self.inner.get_program().to_owned();
        let named = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("ringway::process: cannot run {program:?}: {e}"),
            )
        };
        let mut child = self.inner.spawn().map_err(named)?;
        let pid = child.id();
        let stdio = (
            child
                .stdin
                .take()
                .map(|s| ChildStdin::new(OwnedFd::from(s))),
            child
                .stdout
                .take()
                .map(|s| ChildStdout::new(OwnedFd::from(s))),
            child
                .stderr
                .take()
                .map(|s| ChildStderr::new(OwnedFd::from(s))),
        );
        let pidfd = match PidFd::open(pid) {
            Ok(p) => p,
            Err(e) => {
                // Without a pidfd it cannot be waited for here: do not leave it
                // running unseen.
                let _ = child.kill();
                let _ = child.wait();
                return Err(named(e));
            }
        };
        // std's handle is dropped here: that neither waits nor kills.
        let stdio = (
            stdio.0.transpose()?,
            stdio.1.transpose()?,
            stdio.2.transpose()?,
        );
        Ok(Child::new(pid, pidfd, self.kill_on_drop, stdio))
    }

    /// Runs the child to its end and returns its status. Stdio are inherited unless
    /// set.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn) and [`Child::wait`].
    pub async fn status(&mut self) -> io::Result<ExitStatus> {
        self.spawn()?.wait().await
    }

    /// Runs the child to its end and collects what it wrote. Unless set, stdin is
    /// `/dev/null` and stdout and stderr are piped (std's defaults for `output`).
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn) and [`Child::wait_with_output`].
    pub async fn output(&mut self) -> io::Result<Output> {
        if !self.stdio_set[0] {
            self.inner.stdin(Stdio::null());
        }
        if !self.stdio_set[1] {
            self.inner.stdout(Stdio::piped());
        }
        if !self.stdio_set[2] {
            self.inner.stderr(Stdio::piped());
        }
        self.spawn()?.wait_with_output().await
    }

    /// The std builder inside, for settings this one does not name
    /// (`std::os::unix::process::CommandExt`: `uid`, `process_group`, `pre_exec`).
    pub fn as_std_mut(&mut self) -> &mut std::process::Command {
        &mut self.inner
    }
}

impl From<std::process::Command> for Command {
    fn from(inner: std::process::Command) -> Command {
        Command {
            inner,
            kill_on_drop: false,
            stdio_set: [false; 3],
        }
    }
}
