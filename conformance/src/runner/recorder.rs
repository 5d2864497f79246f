//! Per-trial outcomes, collected as each trial finishes (libtest-mimic only returns totals).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::json::EventSink;
use super::record::Record;

/// Collects records from the worker threads and forwards them to the event sink.
pub(crate) struct Recorder {
    records: Mutex<Vec<Record>>,
    finished: AtomicUsize,
    failed: AtomicUsize,
    events: Option<EventSink>,
}

impl Recorder {
    pub(crate) fn new(events: Option<EventSink>) -> Self {
        Self {
            records: Mutex::new(Vec::new()),
            finished: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            events,
        }
    }

    /// Called when a trial starts.
    pub(crate) fn started(&self, name: &str) {
        if let Some(events) = &self.events {
            events.test_started(name);
        }
    }

    /// Called when a trial finishes.
    pub(crate) fn finished(&self, record: Record) {
        if let Some(events) = &self.events {
            events.test_finished(&record);
        }
        if record.outcome.fails_run() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        self.finished.fetch_add(1, Ordering::Relaxed);
        self.records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(record);
    }

    /// (finished, failed) so far, for progress lines.
    pub(crate) fn progress(&self) -> (usize, usize) {
        (
            self.finished.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }

    /// The records so far, sorted by test name.
    pub(crate) fn records(&self) -> Vec<Record> {
        let mut records = self
            .records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        records.sort_by(|a, b| a.name.cmp(&b.name));
        records
    }

    /// The event sink, to write the summary.
    pub(crate) fn events(&self) -> Option<&EventSink> {
        self.events.as_ref()
    }
}
