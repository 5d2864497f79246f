//! Evidence: running operations never changes the client coverage ledgers.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use incus_operations::NotExportedReason;
use serde_json::{json, Value};

use super::session::with_session;
use crate::embedded;
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// The coverage ledger of the repository the harness was built from (embedded at build time).
const COVERAGE: &str = "core/evidence/coverage.json";
/// The endpoint ledger of that repository.
const INVENTORY: &str = "core/evidence/endpoint-inventory.json";

/// What the running core holds as evidence: each exported operation with its requirements, and
/// each unavailable one with its reason. The core reads the ledgers only when it is compiled,
/// so this is everything a tool call could change.
fn evidence_view() -> Vec<String> {
    let exported = incus_operations::all()
        .into_iter()
        .map(|d| format!("exported {} requires {:?}", d.name(), d.requires()));
    let unavailable = incus_operations::not_exported()
        .into_iter()
        .map(|u| format!("unavailable {}: {:?}", u.name(), u.reason()));
    exported.chain(unavailable).collect()
}

/// Why every evidence check (here and in the catalogue suite) runs only in-process.
pub(super) const IN_PROCESS_ONLY: &str =
    "checks the evidence ledgers compiled into this build's core";

/// The ledger checks, and one run of operations that must leave the ledgers unchanged.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let name = "evidence::tools_not_coverage::operations_leave_the_ledgers_unchanged".to_owned();
    let gate = Check::new(
        "evidence::requirement_evidence::exported_operations_have_complete_evidence",
        exported_have_evidence,
    );
    let unchanged = with_session(name, factory, |session| {
        let before = evidence_view();
        let write = ["incus.write".to_owned()];
        let read = ["incus.read".to_owned()];
        session.call(
            "incus_instance_create",
            &write,
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}}),
        );
        session.call("incus_instance_list", &read, json!({}));
        session.call("incus_server_get", &read, json!({}));
        if evidence_view() == before {
            Ok(())
        } else {
            Err("running operations changed the evidence the core holds".into())
        }
    });
    vec![
        gate,
        unchanged,
        Check::new(
            "evidence::compile_time::exported_set_is_what_the_evidence_files_imply",
            exported_set_follows_the_files,
        ),
        Check::new(
            "evidence::fixtures::coverage_evidence_files_exist_and_call_the_methods",
            evidence_files_call_the_methods,
        ),
        Check::new(
            "evidence::fixtures::client_tests_run_over_unix_and_mutual_https",
            client_tests_use_both_listeners,
        ),
    ]
    .into_iter()
    .map(|check| check.in_process_only(IN_PROCESS_ONLY))
    .collect()
}

/// Recomputes the evidence rule from the ledgers: every requirement of an exported operation
/// has behavior-complete rows (`certified` for a stream contract) under a completion record,
/// and its Go coverage entry, where one exists, names an implementation and evidence files.
fn exported_have_evidence() -> Result<(), String> {
    let coverage = read_json(COVERAGE)?;
    let inventory = read_json(INVENTORY)?;
    let rows = inventory["rows"].as_array().cloned().unwrap_or_default();
    let mut problems = Vec::new();
    for descriptor in incus_operations::all() {
        for requirement in descriptor.requires() {
            let complete = if requirement.starts_with("stream:") {
                "certified"
            } else {
                "behavior-complete"
            };
            for row in rows.iter().filter(|r| r["requirement"] == *requirement) {
                if row["status"] != complete || row["completion_record"].is_null() {
                    problems.push(format!(
                        "{} is exported but {requirement} has the row {row}",
                        descriptor.name()
                    ));
                }
            }
            if let Some(entry) = coverage["methods"].get(*requirement) {
                let named = entry["implementation"].is_string()
                    && entry["evidence"]
                        .as_array()
                        .is_some_and(|files| !files.is_empty());
                if !named {
                    problems.push(format!(
                        "{} is exported but the coverage of {requirement} is {entry}",
                        descriptor.name()
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn read_json(path: &str) -> Result<Value, String> {
    let text = embedded::read(path)?;
    serde_json::from_str(text).map_err(|e| format!("{path} is not JSON: {e}"))
}

fn verdict(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The gate applied to the files as they are now: a requirement has evidence when at least one
/// row maps it, every such row is complete under a completion record, and its coverage entry,
/// where one exists, names an implementation and evidence files.
fn has_evidence(requirement: &str, inventory: &Value, coverage: &Value) -> bool {
    let complete = if requirement.starts_with("stream:") {
        "certified"
    } else {
        "behavior-complete"
    };
    let rows: Vec<&Value> = inventory["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter(|r| r["requirement"] == requirement)
                .collect()
        })
        .unwrap_or_default();
    let rows_complete = !rows.is_empty()
        && rows
            .iter()
            .all(|r| r["status"] == complete && r["completion_record"].is_string());
    let covered = coverage["methods"].get(requirement).is_none_or(|entry| {
        entry["implementation"].is_string()
            && entry["evidence"].as_array().is_some_and(|f| !f.is_empty())
    });
    rows_complete && covered
}

/// The build compiled the files in: what it exports, and what it names as missing, is exactly
/// what the gate says of the files read now.
fn exported_set_follows_the_files() -> Result<(), String> {
    let coverage = read_json(COVERAGE)?;
    let inventory = read_json(INVENTORY)?;
    let lacking = |requires: &[&str]| -> Vec<String> {
        requires
            .iter()
            .filter(|r| !has_evidence(r, &inventory, &coverage))
            .map(|r| (*r).to_owned())
            .collect()
    };
    let mut problems = Vec::new();
    for descriptor in incus_operations::all() {
        let missing = lacking(descriptor.requires());
        if !missing.is_empty() {
            problems.push(format!(
                "{} is exported but the files give no evidence for {missing:?}",
                descriptor.name()
            ));
        }
    }
    for unavailable in incus_operations::not_exported() {
        let NotExportedReason::MissingEvidence { missing } = unavailable.reason() else {
            continue;
        };
        let named: Vec<String> = missing.iter().map(|m| m.requirement().to_owned()).collect();
        let expected = unavailable
            .descriptor()
            .map(|d| lacking(d.requires()))
            .unwrap_or_default();
        if named != expected {
            problems.push(format!(
                "{} names {named:?} as missing, the files lack {expected:?}",
                unavailable.name()
            ));
        }
    }
    verdict(problems)
}

/// Every coverage entry's evidence files exist and call the method its implementation names.
fn evidence_files_call_the_methods() -> Result<(), String> {
    let coverage = read_json(COVERAGE)?;
    let methods = coverage["methods"].as_object().cloned().unwrap_or_default();
    if methods.is_empty() {
        return Err("coverage.json maps no method".into());
    }
    let mut problems = Vec::new();
    for (method, entry) in &methods {
        let Some(function) = entry["implementation"]
            .as_str()
            .and_then(|i| i.rsplit("::").next())
        else {
            continue;
        };
        let files = entry["evidence"].as_array().cloned().unwrap_or_default();
        let calls = files
            .iter()
            .filter_map(Value::as_str)
            .any(|file| match embedded::file(file) {
                Some(text) => text.contains(&format!("{function}(")),
                None => {
                    problems.push(format!("{method}: the evidence file {file} does not exist"));
                    false
                }
            });
        if !calls {
            problems.push(format!("{method}: no evidence file calls {function}"));
        }
    }
    verdict(problems)
}

/// The client tests named as evidence start the fake with both listeners and connect over the
/// Unix socket and over HTTPS with a client identity.
fn client_tests_use_both_listeners() -> Result<(), String> {
    let coverage = read_json(COVERAGE)?;
    let mut suites = BTreeSet::new();
    for entry in coverage["methods"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
    {
        for file in entry["evidence"].as_array().into_iter().flatten() {
            if let Some(dir) = file.as_str().and_then(|f| Path::new(f).parent()) {
                suites.insert(dir.to_path_buf());
            }
        }
    }
    if suites.is_empty() {
        return Err("coverage.json names no evidence file".into());
    }
    let mut problems = Vec::new();
    for suite in suites {
        let support = format!("{}/mod.rs", suite.display());
        let text = embedded::read(&support)?;
        for needle in [
            "https(true)",
            "Connection::unix(",
            "Endpoint::https(",
            "client_key_pem(",
        ] {
            if !text.contains(needle) {
                problems.push(format!("{} has no {needle}", suite.display()));
            }
        }
    }
    verdict(problems)
}
