//! The bound on a whole call, and what a call that hits it reports.
//!
//! Each native request and host callback has its own bound; the call as a whole has
//! [`RunOptions::call_timeout`](super::RunOptions). When it passes, the call stops at once and
//! reports what it knows:
//! - nothing that changes state had been sent: a `timeout` error;
//! - a mutation, update, cancel or exec request may have been sent: `uncertain`, with the bound as
//!   the reason (mutations in `wait_error`, the others in `reason`);
//! - a mutation had been accepted and its wait was under way: `running` with the operation;
//! - a wait had already observed the outcome (a failure reported without the operation object,
//!   being read back): that outcome, unchanged.
//!
//! Nothing is resent: the executors record, before each request that may change something, the
//! result to report if the bound passes from then on.
use std::sync::Mutex;
use tokio::time::Instant;

use serde_json::{json, Value};

/// The result to report if the call's bound passes now (crate-internal).
#[derive(Debug, Default)]
pub(crate) struct Progress(Mutex<Option<Fallback>>);

#[derive(Debug)]
struct Fallback {
    result: Value,
    /// The top-level key that gets the reason; `None` for an outcome already observed.
    reason_at: Option<&'static str>,
    /// When set, `duration_ms` is measured from here when the bound passes (exec).
    started: Option<Instant>,
}

impl Progress {
    /// From now on, a call cut by its bound reports `result`, with the reason under `reason_at`.
    pub(crate) fn record(&self, result: Value, reason_at: &'static str) {
        self.store(Fallback {
            result,
            reason_at: Some(reason_at),
            started: None,
        });
    }

    /// From now on, a call cut by its bound reports `result` as it is: the outcome it holds
    /// was observed before the bound passed.
    pub(crate) fn record_observed(&self, result: Value) {
        self.store(Fallback {
            result,
            reason_at: None,
            started: None,
        });
    }

    /// As [`Progress::record`], with `duration_ms` measured from `started` when the bound passes.
    pub(crate) fn record_timed(&self, result: Value, reason_at: &'static str, started: Instant) {
        self.store(Fallback {
            result,
            reason_at: Some(reason_at),
            started: Some(started),
        });
    }

    fn store(&self, fallback: Fallback) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(fallback);
        }
    }

    /// The result to report for a call cut by its bound, if something may have been sent.
    pub(crate) fn take(&self, reason: &str) -> Option<Value> {
        let fallback = self.0.lock().ok()?.take()?;
        let mut result = fallback.result;
        if let Some(reason_at) = fallback.reason_at {
            result[reason_at] = json!(reason);
        }
        if let Some(started) = fallback.started {
            let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            result["duration_ms"] = json!(elapsed);
        }
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the bound on a whole call, and what a call
    //! that hits it reports); a promise of the whole `run()` or of the client against a fake Incus,
    //! seen through the public API, goes in `tests/integration`.

    use super::*;

    #[test]
    fn nothing_recorded_means_nothing_was_sent() {
        assert_eq!(Progress::default().take("late"), None);
    }

    #[test]
    fn the_last_recorded_result_gets_the_reason() {
        let progress = Progress::default();
        progress.record(
            json!({"status": "uncertain", "wait_error": null}),
            "wait_error",
        );
        progress.record(
            json!({"status": "running", "wait_error": null}),
            "wait_error",
        );
        assert_eq!(
            progress.take("late"),
            Some(json!({"status": "running", "wait_error": "late"}))
        );
    }

    #[test]
    fn an_observed_outcome_is_reported_unchanged() {
        let progress = Progress::default();
        let failed = json!({"status": "failed", "wait_error": "disk full"});
        progress.record_observed(failed.clone());
        assert_eq!(progress.take("late"), Some(failed));
    }
}
