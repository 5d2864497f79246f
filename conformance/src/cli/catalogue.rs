//! `incus-conformance catalogue`: every descriptor with an `exported` flag, and the unavailable
//! operations with their reasons.

use std::process::ExitCode;

use serde_json::{json, Value};

/// Arguments of `catalogue` (none yet).
#[derive(Debug, clap::Args)]
pub(super) struct Args {}

pub(super) fn run(_args: Args) -> ExitCode {
    super::output::print_json(&catalogue())
}

/// `{"operations": [describe() + "exported"], "unavailable": [{"name", "reason"}]}`.
fn catalogue() -> Value {
    let unavailable = incus_operations::not_exported();
    let mut operations: Vec<Value> = incus_operations::all()
        .into_iter()
        .map(|descriptor| (descriptor, true))
        .chain(
            unavailable
                .iter()
                .filter_map(|entry| entry.descriptor())
                .map(|descriptor| (descriptor, false)),
        )
        .map(|(descriptor, exported)| {
            let mut described = descriptor.describe();
            described["exported"] = exported.into();
            described
        })
        .collect();
    operations.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    json!({"operations": operations, "unavailable": unavailable})
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (`incus-conformance catalogue`); a promise
    //! of the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;

    #[test]
    fn catalogue_lists_every_descriptor_and_the_unavailable_reasons() {
        let printed = catalogue();
        let operations = printed["operations"].as_array().unwrap();
        assert_eq!(operations.len(), 32);
        for operation in operations {
            let name = operation["name"].as_str().unwrap();
            let exported = incus_operations::fetch(name).is_some();
            assert_eq!(operation["exported"], exported, "{name}");
        }
        let unavailable = printed["unavailable"].as_array().unwrap();
        assert_eq!(unavailable.len(), incus_operations::not_exported().len());
        for entry in unavailable {
            assert!(
                entry["name"].is_string() && entry["reason"]["kind"].is_string(),
                "{entry}"
            );
        }
    }
}
