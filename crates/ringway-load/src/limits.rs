//! Raising the open-file limit: thousands of connections need thousands of fds, and the
//! default soft limit (often 1024) would turn `-c 10000` into connect errors. The soft
//! limit is raised to the hard one, as far as the system allows, before a run.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft limit in force.
pub(crate) fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct into `lim`, which is live and sized for it.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads one live rlimit struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            return want.rlim_cur;
        }
    }
    lim.rlim_cur
}
