//! `spawn_blocking`: a process-wide pool of threads for work that blocks (DNS, file
//! metadata, CPU-heavy jobs), so it never stalls a core's loop.
//!
//! Threads start on demand up to [`MAX_THREADS`] and exit after [`IDLE`] without work.
//! The job's result reaches the awaiting task through its `JoinHandle`, whose waker
//! (from another thread) goes through the owning core's inject queue.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use super::task::{JoinError, JoinHandle, JoinState};

const MAX_THREADS: usize = 64;
const IDLE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    state: Mutex<PoolState>,
    cv: Condvar,
}

struct PoolState {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        state: Mutex::new(PoolState {
            jobs: VecDeque::new(),
            threads: 0,
            idle: 0,
        }),
        cv: Condvar::new(),
    })
}

/// Runs `f` on the blocking pool and returns a handle to await its result. Works inside
/// or outside a runtime (the handle is an ordinary future). A panic in `f` becomes
/// `JoinError::Panicked`.
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let state = JoinState::new();
    let s = state.clone();
    let job: Job = Box::new(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        s.finish(r.map_err(JoinError::Panicked));
    });
    let p = pool();
    let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
    st.jobs.push_back(job);
    if st.idle == 0 && st.threads < MAX_THREADS {
        st.threads += 1;
        let spawned = std::thread::Builder::new()
            .name("ringway-blocking".into())
            .spawn(worker);
        if spawned.is_err() {
            st.threads -= 1;
            if st.threads == 0 {
                // No thread could be started: run it here rather than never.
                let job = st.jobs.pop_back().expect("just pushed");
                drop(st);
                job();
                return JoinHandle::new(state, None);
            }
        }
    } else {
        p.cv.notify_one();
    }
    drop(st);
    JoinHandle::new(state, None)
}

fn worker() {
    let p = pool();
    let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(job) = st.jobs.pop_front() {
            drop(st);
            job();
            st = p.state.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        st.idle += 1;
        let (guard, res) =
            p.cv.wait_timeout(st, IDLE)
                .unwrap_or_else(|e| e.into_inner());
        st = guard;
        st.idle -= 1;
        if res.timed_out() && st.jobs.is_empty() {
            st.threads -= 1;
            return;
        }
    }
}
