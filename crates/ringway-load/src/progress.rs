//! The progress bar: on stderr, only when stderr is a terminal, drawn from a thread of
//! its own that reads the cores' counters, so the request path never waits for it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A running progress bar; [`Progress::finish`] removes it.
pub(crate) struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar if `wanted` and stderr is a terminal: by requests if `requests` is
    /// known, else by time.
    pub(crate) fn start(
        wanted: bool,
        counters: Vec<Arc<AtomicU64>>,
        requests: Option<u64>,
        duration: Option<Duration>,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if !wanted || !std::io::stderr().is_terminal() {
            return Progress { stop, thread: None };
        }
        let flag = stop.clone();
        let thread = thread::spawn(move || {
            let (bar, by_time) = match (requests, duration) {
                (Some(n), _) => (ProgressBar::new(n), false),
                (None, Some(d)) => (ProgressBar::new(d.as_millis() as u64), true),
                (None, None) => (ProgressBar::new_spinner(), false),
            };
            let template = if by_time {
                "{bar:40} {elapsed}/{duration} {msg}"
            } else {
                "{bar:40} {pos}/{len} {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            let t0 = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let done: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                let secs = t0.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!("{done} requests, {:.0} req/s", done as f64 / secs));
                if by_time {
                    bar.set_position(t0.elapsed().as_millis() as u64);
                } else {
                    bar.set_position(done);
                }
                thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Progress {
            stop,
            thread: Some(thread),
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
