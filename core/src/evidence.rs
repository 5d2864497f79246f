//! The evidence gate: which client requirements have evidence.
//!
//! The build script turns `core/evidence/endpoint-inventory.json` and `core/evidence/coverage.json`
//! into static data ([`ENDPOINT_ROWS`], [`COVERAGE`]). The gate itself, [`missing_in`], is a pure
//! function over that data so that tests can feed it their own.
//!
//! A requirement has evidence only when at least one endpoint row maps it, every such row is
//! `behavior-complete` (`certified` for a `stream:` contract) under a completion record, and its
//! Go coverage entry, where one exists, names an implementation and evidence files.

#[cfg(test)]
use std::path::Path;

use serde::Serialize;

/// One row of the endpoint inventory: a requirement mapped to one native endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndpointRow {
    pub(crate) requirement: &'static str,
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    pub(crate) status: &'static str,
    pub(crate) completion_record: Option<&'static str>,
}

/// One Go-client method's coverage: its Rust implementation and the test files that exercise it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CoverageEntry {
    pub(crate) method: &'static str,
    pub(crate) implementation: Option<&'static str>,
    pub(crate) evidence: &'static [&'static str],
}

include!(concat!(env!("OUT_DIR"), "/evidence.rs"));

/// The evidence the gate reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evidence<'a> {
    pub(crate) rows: &'a [EndpointRow],
    pub(crate) coverage: &'a [CoverageEntry],
}

impl Evidence<'static> {
    /// The evidence compiled into this build.
    pub(crate) fn compiled() -> Evidence<'static> {
        Evidence {
            rows: ENDPOINT_ROWS,
            coverage: COVERAGE,
        }
    }
}

/// A client requirement without evidence, and what is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingRequirement {
    requirement: String,
    problems: Vec<String>,
}

impl MissingRequirement {
    /// The requirement: a native method (`GetInstances`), a helper (`helper:connect`) or a stream
    /// contract (`stream:S01`).
    pub fn requirement(&self) -> &str {
        &self.requirement
    }

    /// What is missing, one sentence each.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

/// The requirements (of `requires`) that lack evidence in the compiled evidence.
pub(crate) fn missing(requires: &[&str]) -> Vec<MissingRequirement> {
    missing_in(Evidence::compiled(), requires)
}

/// The requirements (of `requires`) that lack evidence in `evidence`, in the order given.
pub(crate) fn missing_in(evidence: Evidence<'_>, requires: &[&str]) -> Vec<MissingRequirement> {
    requires
        .iter()
        .filter_map(|requirement| {
            let problems = problems(evidence, requirement);
            (!problems.is_empty()).then(|| MissingRequirement {
                requirement: (*requirement).to_owned(),
                problems,
            })
        })
        .collect()
}

fn problems(evidence: Evidence<'_>, requirement: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let rows: Vec<&EndpointRow> = evidence
        .rows
        .iter()
        .filter(|row| row.requirement == requirement)
        .collect();
    if rows.is_empty() {
        problems.push("no endpoint row maps it".to_owned());
    }
    let needed = if requirement.starts_with("stream:") {
        "certified"
    } else {
        "behavior-complete"
    };
    for row in rows {
        if row.status != needed {
            problems.push(format!(
                "{} {} is {}, not {needed}",
                row.method, row.path, row.status
            ));
        }
        if row.completion_record.is_none() {
            problems.push(format!(
                "{} {} has no completion record",
                row.method, row.path
            ));
        }
    }
    if let Some(entry) = evidence
        .coverage
        .iter()
        .find(|entry| entry.method == requirement)
    {
        if entry.implementation.is_none() {
            problems.push("its coverage entry names no implementation".to_owned());
        }
        if entry.evidence.is_empty() {
            problems.push("its coverage entry names no evidence files".to_owned());
        }
    }
    problems
}

#[cfg(test)]
/// Checks that every evidence file named in `coverage` exists under `root` (the repository root)
/// and mentions the method it claims to exercise. Returns one sentence per problem.
pub(crate) fn evidence_file_problems(coverage: &[CoverageEntry], root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for entry in coverage {
        for file in entry.evidence {
            match std::fs::read_to_string(root.join(file)) {
                Err(error) => problems.push(format!(
                    "{}: evidence file {file} cannot be read: {error}",
                    entry.method
                )),
                Ok(text) if !text.contains(entry.method) => problems.push(format!(
                    "{}: evidence file {file} does not mention {}",
                    entry.method, entry.method
                )),
                Ok(_) => {}
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the evidence gate); a promise of the whole
    //! `run()` or of the client against a fake Incus, seen through the public API, goes in
    //! `tests/integration`.

    use super::*;

    const COMPLETE: EndpointRow = EndpointRow {
        requirement: "GetInstances",
        method: "GET",
        path: "/1.0/instances",
        status: "behavior-complete",
        completion_record: Some("client PR 12"),
    };

    const COVERED: CoverageEntry = CoverageEntry {
        method: "GetInstances",
        implementation: Some("incus_operations::client::instances::list"),
        evidence: &["core/tests/client_instances.rs"],
    };

    fn gate(rows: &[EndpointRow], coverage: &[CoverageEntry], requirement: &str) -> Vec<String> {
        missing_in(Evidence { rows, coverage }, &[requirement])
            .into_iter()
            .flat_map(|missing| missing.problems)
            .collect()
    }

    #[test]
    fn evidence_gate_accepts_complete_rows_with_record_and_coverage() {
        assert!(gate(&[COMPLETE], &[COVERED], "GetInstances").is_empty());
    }

    #[test]
    fn evidence_gate_requires_at_least_one_endpoint_row() {
        assert_eq!(
            gate(&[], &[COVERED], "GetInstances"),
            ["no endpoint row maps it"]
        );
    }

    #[test]
    fn evidence_gate_requires_every_row_behavior_complete() {
        let second = EndpointRow {
            status: "in-progress",
            path: "/1.0/instances/{name}",
            ..COMPLETE
        };
        assert_eq!(
            gate(&[COMPLETE, second], &[COVERED], "GetInstances"),
            ["GET /1.0/instances/{name} is in-progress, not behavior-complete"]
        );
    }

    #[test]
    fn evidence_gate_requires_a_completion_record() {
        let row = EndpointRow {
            completion_record: None,
            ..COMPLETE
        };
        assert_eq!(
            gate(&[row], &[COVERED], "GetInstances"),
            ["GET /1.0/instances has no completion record"]
        );
    }

    #[test]
    fn evidence_gate_requires_certified_stream_contracts() {
        let stream = EndpointRow {
            requirement: "stream:S01",
            path: "/1.0/operations/{id}/websocket",
            ..COMPLETE
        };
        assert_eq!(
            gate(&[stream], &[], "stream:S01"),
            ["GET /1.0/operations/{id}/websocket is behavior-complete, not certified"]
        );
        let certified = EndpointRow {
            status: "certified",
            ..stream
        };
        assert!(gate(&[certified], &[], "stream:S01").is_empty());
    }

    #[test]
    fn evidence_gate_requires_coverage_implementation_and_evidence_where_an_entry_exists() {
        let bare = CoverageEntry {
            implementation: None,
            evidence: &[],
            ..COVERED
        };
        assert_eq!(
            gate(&[COMPLETE], &[bare], "GetInstances"),
            [
                "its coverage entry names no implementation",
                "its coverage entry names no evidence files"
            ]
        );
        // Without a coverage entry (a helper, or a method the Go client lacks) rows alone decide.
        let helper = EndpointRow {
            requirement: "helper:connect",
            path: "/1.0",
            ..COMPLETE
        };
        assert!(gate(&[helper], &[bare], "helper:connect").is_empty());
    }

    #[test]
    fn evidence_gate_reports_only_the_requirements_that_lack_evidence() {
        let missing = missing_in(
            Evidence {
                rows: &[COMPLETE],
                coverage: &[COVERED],
            },
            &["GetInstances", "GetOperationWait"],
        );
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].requirement(), "GetOperationWait");
    }

    #[test]
    fn every_evidence_file_exists_and_mentions_its_method() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert_eq!(
            evidence_file_problems(COVERAGE, &root),
            Vec::<String>::new()
        );
    }

    #[test]
    fn evidence_file_checker_reports_missing_files_and_unmentioned_methods() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("core/tests")).unwrap();
        std::fs::write(
            dir.path().join("core/tests/good.rs"),
            "// exercises GetInstances\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("core/tests/other.rs"),
            "// exercises GetImages\n",
        )
        .unwrap();
        let coverage = [CoverageEntry {
            method: "GetInstances",
            implementation: Some("x"),
            evidence: &[
                "core/tests/good.rs",
                "core/tests/other.rs",
                "core/tests/absent.rs",
            ],
        }];
        let problems = evidence_file_problems(&coverage, dir.path());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("core/tests/other.rs does not mention GetInstances"));
        assert!(problems[1].contains("core/tests/absent.rs cannot be read"));
    }
}
