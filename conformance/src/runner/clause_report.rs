//! Results per clause: how many tests of each clause passed and failed, so that a host or a
//! producer reads the outcome in the specification's terms.

use std::collections::BTreeMap;

use super::record::Record;

/// Tests run and failed (including stale baseline entries) for one clause.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) struct ClauseTally {
    pub(crate) run: u64,
    pub(crate) failed: u64,
}

/// The tally of every clause that had at least one test run.
pub(crate) fn tally(records: &[Record]) -> BTreeMap<String, ClauseTally> {
    let mut tallies: BTreeMap<String, ClauseTally> = BTreeMap::new();
    for record in records {
        for clause in &record.clauses {
            let tally = tallies.entry(clause.clone()).or_default();
            tally.run += 1;
            if record.outcome.fails_run() {
                tally.failed += 1;
            }
        }
    }
    tallies
}

/// Human lines: one per failing clause, then a total.
pub(crate) fn render(tallies: &BTreeMap<String, ClauseTally>) -> String {
    let failing: Vec<String> = tallies
        .iter()
        .filter(|(_, t)| t.failed > 0)
        .map(|(id, t)| format!("  {id}: {} of {} tests failed\n", t.failed, t.run))
        .collect();
    let mut text = format!(
        "clauses: {} checked, {} failing\n",
        tallies.len(),
        failing.len()
    );
    for line in failing {
        text.push_str(&line);
    }
    text
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (results per clause); a promise of the
    //! harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;
    use crate::runner::record::Outcome;
    use std::time::Duration;

    fn record(name: &str, clauses: &[&str], outcome: Outcome) -> Record {
        Record {
            name: name.into(),
            clauses: clauses.iter().map(|c| (*c).to_owned()).collect(),
            outcome,
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn failing_clauses_are_listed_with_their_counts() {
        let tallies = tally(&[
            record("a::b::c", &["a::b"], Outcome::Passed),
            record("a::b::d", &["a::b"], Outcome::Failed("x".into())),
            record(
                "scenario::s",
                &["a::b", "e::f"],
                Outcome::ExpectedFailure("x".into()),
            ),
        ]);
        assert_eq!(tallies["a::b"], ClauseTally { run: 3, failed: 1 });
        assert_eq!(tallies["e::f"], ClauseTally { run: 1, failed: 0 });
        assert_eq!(
            render(&tallies),
            "clauses: 2 checked, 1 failing\n  a::b: 1 of 3 tests failed\n"
        );
    }
}
