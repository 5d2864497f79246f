//! Durable state for `--state-dir`: one file, replaced whole and atomically, and a committer
//! that groups the changes of many requests into one write.
//!
//! A commit writes the whole state to `state.json.tmp`, fsyncs it, renames it over
//! `state.json` and fsyncs the directory. A process killed at any moment leaves either the
//! previous file or the new one, never a mix: a rename within a directory is atomic, and the
//! data is on disk before the name points at it. A stale `state.json.tmp` is removed at start.
//!
//! Changes are counted by a mark (see `App::mark`) that only grows. Whoever must not answer
//! before its change is durable waits ([`Durability::wait`]) for a commit whose mark is at least
//! the mark it saw after its change. One thread commits: it takes the latest state (with its
//! mark) once per round, so every request that waited during a write is covered by the next
//! one (group commit). Changes that nobody waits for (an operation's work, exec writing files)
//! are committed within [`IDLE_CHECK`] as well.
//!
//! Why one whole file rather than an append-only log: the state's changes are Rust code on
//! plain data, not records, so a log would have to compute a difference between two states per
//! commit, which costs about what serialising the state costs; and the whole file gives the
//! atomicity and the format's version check for free. The measured cost is in STATE.md
//! ("Persistence").
//!
//! This module knows nothing of the app: it is given a function that reads the mark and one
//! that takes the state as bytes with its mark.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// The state's file in the directory.
pub(crate) const FILE: &str = "state.json";
/// Where a commit writes before the rename.
const TEMP: &str = "state.json.tmp";
/// How often the committer looks for changes that nobody waits for.
pub(crate) const IDLE_CHECK: Duration = Duration::from_millis(50);

/// The state directory.
#[derive(Debug)]
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    /// Opens (creates) the directory, removes a stale temporary file, and reads the state file
    /// if there is one.
    pub(crate) fn open(dir: &Path) -> std::io::Result<(Self, Option<Vec<u8>>)> {
        std::fs::create_dir_all(dir)?;
        match std::fs::remove_file(dir.join(TEMP)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let existing = match std::fs::read(dir.join(FILE)) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok((
            Self {
                dir: dir.to_path_buf(),
            },
            existing,
        ))
    }

    /// Replaces the state file with `bytes`, durably and atomically.
    pub(crate) fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let temp = self.dir.join(TEMP);
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, self.dir.join(FILE))?;
        File::open(&self.dir)?.sync_all()
    }
}

/// The last commit: its mark, or why the last attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Committed {
    mark: u64,
    error: Option<String>,
}

/// What the committer is asked to do.
#[derive(Debug, Default)]
struct Asked {
    /// The highest mark somebody waits for.
    mark: u64,
    /// Stop after one last commit.
    stop: bool,
}

/// The committer and its waiters.
#[derive(Debug)]
pub(crate) struct Durability {
    asked: Mutex<Asked>,
    wake: Condvar,
    committed: watch::Sender<Committed>,
    store: Mutex<Store>,
}

/// Reads the current mark.
pub(crate) type MarkFn = Box<dyn Fn() -> u64 + Send>;
/// Takes the state as bytes with its mark (`None`: the fake is gone).
pub(crate) type CaptureFn = Box<dyn Fn() -> Option<(u64, Vec<u8>)> + Send>;

impl Durability {
    /// Starts the committer thread; `committed` is the mark of what the file holds now.
    pub(crate) fn start(
        store: Store,
        committed: u64,
        mark: MarkFn,
        capture: CaptureFn,
    ) -> std::io::Result<Arc<Self>> {
        let durability = Arc::new(Self {
            asked: Mutex::new(Asked::default()),
            wake: Condvar::new(),
            committed: watch::Sender::new(Committed {
                mark: committed,
                error: None,
            }),
            store: Mutex::new(store),
        });
        let weak = Arc::downgrade(&durability);
        std::thread::Builder::new()
            .name("fake-incus-commit".into())
            .spawn(move || {
                while let Some(durability) = weak.upgrade() {
                    if !durability.round(&mark, &capture) {
                        return;
                    }
                }
            })?;
        Ok(durability)
    }

    /// One round: waits until a commit is asked for, something changed or a stop; commits.
    /// Returns false once stopped.
    fn round(&self, mark: &MarkFn, capture: &CaptureFn) -> bool {
        let last = self.committed.borrow().mark;
        let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        let (asked, _) = self
            .wake
            .wait_timeout_while(asked, IDLE_CHECK, |a| a.mark <= last && !a.stop)
            .unwrap_or_else(PoisonError::into_inner);
        let stop = asked.stop;
        drop(asked);
        if mark() > last && !stop {
            self.commit(capture);
        }
        !stop
    }

    /// Takes the state and writes it; publishes the result.
    fn commit(&self, capture: &CaptureFn) {
        let began = std::time::Instant::now();
        let Some((mark, bytes)) = capture() else {
            return;
        };
        let captured = began.elapsed();
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        if self.stopped() {
            // `finish` wrote the last state (newer than this capture) and the file may belong
            // to the next fake on this directory already: no write after the stop.
            return;
        }
        let result = store.write(&bytes);
        drop(store);
        tracing::debug!(
            mark,
            bytes = bytes.len(),
            capture_us = captured.as_micros() as u64,
            write_us = (began.elapsed() - captured).as_micros() as u64,
            "state committed"
        );
        self.committed.send_modify(|committed| match result {
            Ok(()) => {
                committed.mark = committed.mark.max(mark);
                committed.error = None;
            }
            Err(e) => {
                tracing::error!(error = %e, "the state could not be written");
                committed.error = Some(format!("writing the state failed: {e}"));
            }
        });
        if self.committed.borrow().error.is_some() {
            // Not a hot loop on a full disk: the next try comes after a pause.
            std::thread::sleep(IDLE_CHECK);
        }
    }

    /// Waits until everything up to `mark` is on disk. An error when the commit that should
    /// have covered it failed.
    pub(crate) async fn wait(&self, mark: u64) -> Result<(), String> {
        let mut rx = self.committed.subscribe();
        if rx.borrow_and_update().mark >= mark {
            return Ok(());
        }
        {
            let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
            asked.mark = asked.mark.max(mark);
        }
        self.wake.notify_one();
        loop {
            {
                let committed = rx.borrow_and_update();
                if committed.mark >= mark {
                    return Ok(());
                }
                if let Some(error) = &committed.error {
                    return Err(error.clone());
                }
            }
            if rx.changed().await.is_err() {
                return Err("the state's committer stopped".into());
            }
        }
    }

    /// Commits once more, now, in this thread, and stops the committer (the fake is stopping).
    /// When it returns, nothing more is written: the stop is set under the file's lock, so a
    /// commit the committer thread was making is on disk before this last one, and none comes
    /// after it (a fake started next on the same directory is alone with the file).
    pub(crate) fn finish(&self, capture: impl FnOnce() -> Option<(u64, Vec<u8>)>) {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stop = true;
        if let Some((mark, bytes)) = capture() {
            if let Err(e) = store.write(&bytes) {
                tracing::error!(error = %e, "the state could not be written at stop");
            } else {
                self.committed.send_modify(|c| c.mark = c.mark.max(mark));
            }
        }
        drop(store);
        self.wake.notify_one();
    }

    /// Whether [`Durability::finish`] ran.
    fn stopped(&self) -> bool {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let (store, existing) = Store::open(dir.path()).unwrap();
        assert!(existing.is_none());
        store.write(b"one").unwrap();
        store.write(b"two").unwrap();
        assert_eq!(std::fs::read(dir.path().join(FILE)).unwrap(), b"two");
        assert!(!dir.path().join(TEMP).exists());
        std::fs::write(dir.path().join(TEMP), b"half a wri").unwrap();
        let (_, existing) = Store::open(dir.path()).unwrap();
        assert_eq!(
            existing.as_deref(),
            Some(&b"two"[..]),
            "a stale temporary file is ignored"
        );
        assert!(!dir.path().join(TEMP).exists(), "and removed");
    }

    #[tokio::test]
    async fn a_waiter_returns_once_a_commit_covers_its_mark() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path()).unwrap();
        let counter = Arc::new(AtomicU64::new(0));
        let (read, take) = (Arc::clone(&counter), Arc::clone(&counter));
        let durability = Durability::start(
            store,
            0,
            Box::new(move || read.load(Ordering::SeqCst)),
            Box::new(move || {
                let mark = take.load(Ordering::SeqCst);
                Some((mark, mark.to_string().into_bytes()))
            }),
        )
        .unwrap();
        counter.store(3, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(10), durability.wait(3))
            .await
            .expect("committed in time")
            .unwrap();
        assert_eq!(std::fs::read(dir.path().join(FILE)).unwrap(), b"3");
        counter.store(4, Ordering::SeqCst);
        durability.finish(|| Some((4, b"4".to_vec())));
        assert_eq!(std::fs::read(dir.path().join(FILE)).unwrap(), b"4");
        durability.wait(4).await.unwrap();
    }

    #[test]
    fn nothing_is_written_after_finish_even_by_a_commit_that_captured_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path()).unwrap();
        let (entered, in_capture) = std::sync::mpsc::channel();
        let (go, released) = std::sync::mpsc::channel::<()>();
        let released = Mutex::new(released);
        let durability = Durability::start(
            store,
            0,
            Box::new(|| 1),
            Box::new(move || {
                // The committer took the old state, and is held here until the fake stopped.
                let _ = entered.send(());
                let _ = released
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(10));
                Some((1, b"old".to_vec()))
            }),
        )
        .unwrap();
        in_capture
            .recv_timeout(Duration::from_secs(10))
            .expect("the committer captures");
        durability.finish(|| Some((2, b"new".to_vec())));
        go.send(()).unwrap();
        // The committer's round ends once it lets its reference go.
        let bound = std::time::Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&durability) > 1 {
            assert!(std::time::Instant::now() < bound, "the committer stops");
            std::thread::yield_now();
        }
        assert_eq!(std::fs::read(dir.path().join(FILE)).unwrap(), b"new");
        assert!(!dir.path().join(TEMP).exists());
    }
}
