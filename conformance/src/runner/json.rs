//! `--format json`: one JSON object per line, schema `incus-conformance-events/1`.
//!
//! The events and their fields are documented once, in the crate README ("`--format json`");
//! the schema is stable: fields are only ever added, never renamed or removed. Test events of
//! parallel trials interleave; each line is written whole.

use std::io::Write;
use std::sync::Mutex;

use serde_json::json;

use super::record::Record;

/// The schema name written in the `suite started` event.
pub(crate) const SCHEMA: &str = "incus-conformance-events/1";

/// Totals for the closing `suite finished` event.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    pub(crate) expected_failures: u64,
    pub(crate) stale_expected_failures: u64,
    pub(crate) ignored: u64,
    pub(crate) filtered_out: u64,
    pub(crate) unknown_baseline_entries: Vec<String>,
    pub(crate) duration_ms: u64,
    pub(crate) clauses: std::collections::BTreeMap<String, super::clause_report::ClauseTally>,
}

impl Summary {
    /// Whether the run is a success.
    pub(crate) fn ok(&self) -> bool {
        self.failed == 0
            && self.stale_expected_failures == 0
            && self.unknown_baseline_entries.is_empty()
    }
}

/// Writes events, one whole line at a time.
pub(crate) struct EventSink {
    out: Mutex<Box<dyn Write + Send>>,
}

impl EventSink {
    /// Events to standard output.
    pub(crate) fn stdout() -> Self {
        Self::new(Box::new(std::io::stdout()))
    }

    pub(crate) fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            out: Mutex::new(out),
        }
    }

    pub(crate) fn suite_started(&self, test_count: usize) {
        self.emit(&json!({
            "type": "suite", "event": "started", "schema": SCHEMA, "test_count": test_count,
        }));
    }

    pub(crate) fn test_started(&self, name: &str) {
        self.emit(&json!({"type": "test", "event": "started", "name": name}));
    }

    pub(crate) fn test_finished(&self, record: &Record) {
        self.emit(&json!({
            "type": "test",
            "event": record.outcome.word(),
            "name": record.name,
            "clauses": record.clauses,
            "duration_ms": millis(record.duration),
            "message": record.outcome.message(),
        }));
    }

    pub(crate) fn suite_finished(&self, summary: &Summary) {
        self.emit(&json!({
            "type": "suite",
            "event": "finished",
            "result": if summary.ok() { "ok" } else { "failed" },
            "passed": summary.passed,
            "failed": summary.failed,
            "expected_failures": summary.expected_failures,
            "stale_expected_failures": summary.stale_expected_failures,
            "ignored": summary.ignored,
            "filtered_out": summary.filtered_out,
            "unknown_baseline_entries": summary.unknown_baseline_entries,
            "duration_ms": summary.duration_ms,
            "clauses": summary.clauses,
        }));
    }

    fn emit(&self, event: &serde_json::Value) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        // A closed stdout must not abort the run; the exit code still tells the result.
        let _ = writeln!(out, "{event}").and_then(|()| out.flush());
    }
}

/// Whole milliseconds, saturating.
pub(crate) fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
