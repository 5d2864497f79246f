//! Per-trial outcomes, recorded as each trial finishes (libtest-mimic only returns totals).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::json::EventSink;

/// What happened to one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The rule held.
    Passed,
    /// The rule did not hold.
    Failed(String),
    /// The rule did not hold, and the baseline says so.
    ExpectedFailure(String),
    /// The baseline lists the test, but it passed: the entry is stale.
    StaleExpectedFailure,
}

impl Outcome {
    /// The stable word used in reports.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::ExpectedFailure(_) => "expected_failure",
            Outcome::StaleExpectedFailure => "stale_expected_failure",
        }
    }

    /// The failure message, if any.
    pub(crate) fn message(&self) -> Option<String> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed(m) | Outcome::ExpectedFailure(m) => Some(m.clone()),
            Outcome::StaleExpectedFailure => Some(STALE_MESSAGE.to_owned()),
        }
    }

    /// Whether the run must fail because of this outcome.
    pub(crate) fn fails_run(&self) -> bool {
        matches!(self, Outcome::Failed(_) | Outcome::StaleExpectedFailure)
    }
}

/// The message of a stale baseline entry.
pub(crate) const STALE_MESSAGE: &str =
    "listed in the expected failures but passed: remove it from the baseline";

/// One finished trial.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) name: String,
    pub(crate) clauses: Vec<String>,
    pub(crate) outcome: Outcome,
    pub(crate) duration: Duration,
}

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
