//! What one finished trial leaves behind: its outcome, clauses and duration.

use std::time::Duration;

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
