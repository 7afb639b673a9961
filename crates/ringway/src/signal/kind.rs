//! [`SignalKind`]: which signal, and which ones a stream cannot be made of.

use std::fmt;
use std::io;

/// A signal number, as [`signal`](super::signal) takes it.
///
/// The named constructors cover the signals a service listens for; [`from_raw`]
/// takes any number, and [`signal`](super::signal) says clearly which cannot be
/// listened for.
///
/// [`from_raw`]: SignalKind::from_raw
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SignalKind(i32);

impl SignalKind {
    /// Any signal by number (`libc::SIGUSR1`, a real-time signal, ...).
    pub const fn from_raw(signum: i32) -> SignalKind {
        SignalKind(signum)
    }
    /// The number.
    pub const fn as_raw(self) -> i32 {
        self.0
    }
    /// `SIGINT`: ctrl-c at a terminal.
    pub const fn interrupt() -> SignalKind {
        SignalKind(libc::SIGINT)
    }
    /// `SIGTERM`: the polite request to stop (`kill`, systemd, Kubernetes).
    pub const fn terminate() -> SignalKind {
        SignalKind(libc::SIGTERM)
    }
    /// `SIGHUP`: the terminal went away; by custom, reload the configuration.
    pub const fn hangup() -> SignalKind {
        SignalKind(libc::SIGHUP)
    }
    /// `SIGQUIT`: ctrl-\ at a terminal.
    pub const fn quit() -> SignalKind {
        SignalKind(libc::SIGQUIT)
    }
    /// `SIGUSR1`.
    pub const fn user_defined1() -> SignalKind {
        SignalKind(libc::SIGUSR1)
    }
    /// `SIGUSR2`.
    pub const fn user_defined2() -> SignalKind {
        SignalKind(libc::SIGUSR2)
    }
    /// `SIGCHLD`: a child stopped or exited. (`ringway::process` does not need it: it
    /// waits through pidfds.)
    pub const fn child() -> SignalKind {
        SignalKind(libc::SIGCHLD)
    }
    /// `SIGPIPE`: a write to a pipe or socket whose reader is gone.
    pub const fn pipe() -> SignalKind {
        SignalKind(libc::SIGPIPE)
    }
    /// `SIGALRM`.
    pub const fn alarm() -> SignalKind {
        SignalKind(libc::SIGALRM)
    }
    /// `SIGWINCH`: the terminal's size changed.
    pub const fn window_change() -> SignalKind {
        SignalKind(libc::SIGWINCH)
    }

    /// The signal's name (`"SIGINT"`), or `None` for a number without one here.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            libc::SIGHUP => "SIGHUP",
            libc::SIGINT => "SIGINT",
            libc::SIGQUIT => "SIGQUIT",
            libc::SIGILL => "SIGILL",
            libc::SIGTRAP => "SIGTRAP",
            libc::SIGABRT => "SIGABRT",
            libc::SIGBUS => "SIGBUS",
            libc::SIGFPE => "SIGFPE",
            libc::SIGKILL => "SIGKILL",
            libc::SIGUSR1 => "SIGUSR1",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGUSR2 => "SIGUSR2",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGALRM => "SIGALRM",
            libc::SIGTERM => "SIGTERM",
            libc::SIGCHLD => "SIGCHLD",
            libc::SIGCONT => "SIGCONT",
            libc::SIGSTOP => "SIGSTOP",
            libc::SIGTSTP => "SIGTSTP",
            libc::SIGTTIN => "SIGTTIN",
            libc::SIGTTOU => "SIGTTOU",
            libc::SIGURG => "SIGURG",
            libc::SIGXCPU => "SIGXCPU",
            libc::SIGXFSZ => "SIGXFSZ",
            libc::SIGVTALRM => "SIGVTALRM",
            libc::SIGPROF => "SIGPROF",
            libc::SIGWINCH => "SIGWINCH",
            libc::SIGIO => "SIGIO",
            libc::SIGPWR => "SIGPWR",
            libc::SIGSYS => "SIGSYS",
            _ => return None,
        })
    }

    /// `Ok` if a stream can be made of this signal; otherwise the error
    /// [`signal`](super::signal) returns, which says why.
    pub(super) fn check(self) -> io::Result<()> {
        let why = match self.0 {
            libc::SIGKILL | libc::SIGSTOP => {
                "cannot be caught, blocked or ignored (the kernel \
                                              acts on it without asking the process)"
            }
            libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGTRAP => {
                "is raised by a fault in the thread that caused it, which must not go on \
                 running: it cannot be delivered later as a stream"
            }
            n if n < 1 || n > libc::SIGRTMAX() => "is not a signal number on this system",
            // 32 and 33 sit below SIGRTMIN: the C library keeps them for its threads.
            n if n > libc::SIGSYS && n < libc::SIGRTMIN() => {
                "is reserved by the C library for its own threads"
            }
            _ => return Ok(()),
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("ringway::signal: signal {self} {why}"),
        ))
    }
}

impl fmt::Display for SignalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

impl fmt::Debug for SignalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignalKind({self})")
    }
}

impl From<i32> for SignalKind {
    fn from(signum: i32) -> SignalKind {
        SignalKind(signum)
    }
}
