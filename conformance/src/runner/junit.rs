//! `--junit FILE`: a JUnit XML report for CI systems, one test case per trial.
//!
//! Test cases are grouped in one suite, `incus-conformance`; the class name is the clause id
//! (`area::clause`), so CI systems group results per clause. Expected failures are reported as
//! skipped with the failure message; stale baseline entries as failures.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::record::{Outcome, Record};

/// Writes the report for `records` to `path`.
pub(crate) fn write(path: &Path, records: &[Record], elapsed: Duration) -> std::io::Result<()> {
    let xml = render(records, elapsed).map_err(std::io::Error::other)?;
    std::fs::write(path, xml)
}

/// The report as XML text.
pub(crate) fn render(records: &[Record], elapsed: Duration) -> Result<String, String> {
    let mut suite = TestSuite::new("incus-conformance");
    suite.set_time(elapsed);
    suite.add_test_cases(records.iter().map(test_case));
    let mut report = Report::new("incus-conformance");
    report.set_time(elapsed);
    report.add_test_suite(suite);
    report.to_string().map_err(|e| e.to_string())
}

fn test_case(record: &Record) -> TestCase {
    let mut case = TestCase::new(record.name.as_str(), status(&record.outcome));
    if let Some(clause) = record.clauses.first() {
        case.set_classname(clause.as_str());
    }
    case.set_time(record.duration);
    case
}

fn status(outcome: &Outcome) -> TestCaseStatus {
    let mut status = match outcome {
        Outcome::Passed => return TestCaseStatus::success(),
        Outcome::ExpectedFailure(_) => TestCaseStatus::skipped(),
        Outcome::Failed(_) | Outcome::StaleExpectedFailure => {
            TestCaseStatus::non_success(NonSuccessKind::Failure)
        }
    };
    if let Some(message) = outcome.message() {
        status.set_type(outcome.word());
        status.set_description(message.as_str());
        status.set_message(first_line(&message));
    }
    status
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (`--junit FILE`); a promise of the harness
    //! seen from outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::*;

    fn record(name: &str, outcome: Outcome) -> Record {
        Record {
            name: name.into(),
            clauses: vec!["scopes::enforced".into()],
            outcome,
            duration: Duration::from_millis(3),
        }
    }

    #[test]
    fn report_has_one_case_per_record_with_failures_marked() {
        let xml = render(
            &[
                record("scopes::enforced::a", Outcome::Passed),
                record("scopes::enforced::b", Outcome::Failed("boom\nmore".into())),
                record(
                    "scopes::enforced::c",
                    Outcome::ExpectedFailure("known".into()),
                ),
            ],
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(xml.contains(r#"name="scopes::enforced::a""#), "{xml}");
        assert!(xml.contains(r#"classname="scopes::enforced""#), "{xml}");
        assert!(xml.contains(r#"<failure message="boom""#), "{xml}");
        assert!(xml.contains("<skipped"), "{xml}");
        assert!(xml.contains(r#"failures="1""#), "{xml}");
    }
}
