//! Evidence: running operations never changes the client coverage ledgers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::with_session;
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// The ledgers of the repository the harness was built from.
fn ledgers() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/evidence");
    ["coverage.json", "endpoint-inventory.json"]
        .iter()
        .map(|name| dir.join(name))
        .collect()
}

fn read_all(paths: &[PathBuf]) -> Result<Vec<Vec<u8>>, String> {
    paths
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display())))
        .collect()
}

/// The ledger checks, and one run of operations that must leave the ledgers unchanged.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let name = "evidence::tools_not_coverage::operations_leave_the_ledgers_unchanged".to_owned();
    let gate = Check::new(
        "evidence::requirement_evidence::exported_operations_have_complete_evidence",
        exported_have_evidence,
    );
    let unchanged = with_session(name, factory, |session| {
        let paths = ledgers();
        let before = read_all(&paths)?;
        let write = ["incus.write".to_owned()];
        let read = ["incus.read".to_owned()];
        session.call(
            "incus_instance_create",
            &write,
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}}),
        );
        session.call("incus_instance_list", &read, json!({}));
        session.call("incus_server_get", &read, json!({}));
        if read_all(&paths)? == before {
            Ok(())
        } else {
            Err("running operations changed the coverage ledgers".into())
        }
    });
    vec![gate, unchanged]
}

/// Recomputes the evidence rule from the ledgers: every requirement of an exported operation
/// has behavior-complete rows (`certified` for a stream contract) under a completion record,
/// and its Go coverage entry, where one exists, names an implementation and evidence files.
fn exported_have_evidence() -> Result<(), String> {
    let paths = ledgers();
    let read = |path: &PathBuf| -> Result<Value, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
    };
    let coverage = read(&paths[0])?;
    let inventory = read(&paths[1])?;
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
