//! Progress lines on standard error during long runs, so that a quiet or JSON run still
//! shows that it is alive.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::recorder::Recorder;

/// How often a progress line is printed.
pub(crate) const INTERVAL: Duration = Duration::from_secs(5);

/// A background ticker; stopping it (or dropping it) ends the thread.
pub(crate) struct Progress {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts printing `progress: done/total ...` every `interval` until stopped.
    pub(crate) fn start(recorder: Arc<Recorder>, total: usize, interval: Duration) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let started = Instant::now();
        let thread = std::thread::spawn(move || loop {
            match stopped.recv_timeout(interval) {
                Err(RecvTimeoutError::Timeout) => {
                    let (done, failed) = recorder.progress();
                    eprintln!(
                        "progress: {done}/{total} trials finished, {failed} failed, {:.1}s elapsed",
                        started.elapsed().as_secs_f64()
                    );
                }
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        });
        Self {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
