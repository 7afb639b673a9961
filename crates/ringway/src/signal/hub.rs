//! What every listener of one signal shares, process-wide, and the handler that keeps
//! a signal from reaching a thread that does not block it.
//!
//! A signalfd only sees a signal that is *pending*: blocked in the thread it went to,
//! or, for one sent to the process, blocked in every thread. Each listener's signalfd
//! read takes a pending signal away from all the others, so whichever read gets it
//! counts it here and wakes every listener of that signal, on whatever core
//! (`Hub::deliver`); each listener compares the count with the one it saw last.
//!
//! A thread ringway does not know of (the test harness's, a library's) may not block
//! the signal. The kernel would run the signal's action there: the default action of
//! `SIGINT` ends the process. So registering a signal also installs [`reroute`] as its
//! handler: in such a thread it blocks the signal there for good and sends it again to
//! the process, where it stays pending for the signalfds. The handler runs at most
//! once per thread and signal; threads that block it (every thread that called
//! [`signal`](super::signal), and the cores and blocking threads started after it:
//! threads inherit the mask) never run it.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use atomic_waker::AtomicWaker;

/// Signal numbers run from 1 to `SIGRTMAX` (64 on Linux).
const SLOTS: usize = 65;

static HUBS: [Hub; SLOTS] = [const { Hub::new() }; SLOTS];

/// Serialises handler installation (`sigaction` is once per signal).
static INSTALL: Mutex<()> = Mutex::new(());

/// The listeners of one signal and how many times it has come.
pub(super) struct Hub {
    /// Signals of this number read by any listener since the process started.
    delivered: AtomicU64,
    /// The handler is installed.
    installed: AtomicBool,
    /// Every live listener; dead ones are swept at the next delivery.
    listeners: Mutex<Vec<Weak<Listener>>>,
}

/// One listener's side of the hub: the waker of the task that waits on it.
#[derive(Debug, Default)]
pub(super) struct Listener {
    pub(super) waker: AtomicWaker,
}

impl Hub {
    const fn new() -> Hub {
        Hub {
            delivered: AtomicU64::new(0),
            installed: AtomicBool::new(false),
            listeners: Mutex::new(Vec::new()),
        }
    }

    /// The hub of `signum` (already checked to be a catchable signal number).
    pub(super) fn of(signum: i32) -> &'static Hub {
        &HUBS[signum as usize]
    }

    /// How many signals of this number have been read so far.
    pub(super) fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Acquire)
    }

    /// A new listener, woken at every delivery from now on.
    pub(super) fn listen(&self) -> Arc<Listener> {
        let l = Arc::new(Listener::default());
        self.lock().push(Arc::downgrade(&l));
        l
    }

    /// `count` signals were read: every listener hears of it.
    pub(super) fn deliver(&self, count: u64) {
        self.delivered.fetch_add(count, Ordering::AcqRel);
        self.lock().retain(|l| match l.upgrade() {
            Some(l) => {
                l.waker.wake();
                true
            }
            None => false,
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Weak<Listener>>> {
        self.listeners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Installs [`reroute`] for `signum`, once per process.
    pub(super) fn install(&self, signum: i32) -> io::Result<()> {
        if self.installed.load(Ordering::Acquire) {
            return Ok(());
        }
        let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        if self.installed.load(Ordering::Acquire) {
            return Ok(());
        }
        // SAFETY: `action` is plain data, initialised before use; `reroute` is an
        // `extern "C"` handler of the three-argument form SA_SIGINFO announces, and does
        // only async-signal-safe work.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = reroute as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signum, &action, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        self.installed.store(true, Ordering::Release);
        Ok(())
    }
}

/// The handler of every registered signal; runs only in a thread that does not block
/// it. It blocks the signal in that thread from the handler's return on (the mask the
/// kernel restores then is the one in `context`) and sends it again to the process,
/// where it waits, pending, for a signalfd read. While the handler runs the signal is
/// blocked here, so the kernel gives the new one to another thread that does not block
/// it (which does the same) or keeps it pending.
extern "C" fn reroute(signum: libc::c_int, _: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `ucontext_t` as the third argument of an
    // SA_SIGINFO handler; `sigaddset`, `kill` and `getpid` are async-signal-safe, and
    // errno is put back as it was so that the interrupted code sees no change.
    unsafe {
        let errno = *libc::__errno_location();
        let uc = context.cast::<libc::ucontext_t>();
        libc::sigaddset(&mut (*uc).uc_sigmask, signum);
        libc::kill(libc::getpid(), signum);
        *libc::__errno_location() = errno;
    }
}

/// Blocks `signum` in the calling thread (threads it starts from now on inherit that).
pub(super) fn block_here(signum: i32) -> io::Result<()> {
    // SAFETY: `set` is plain data initialised by sigemptyset; the call changes only this
    // thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signum);
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
    }
    Ok(())
}
