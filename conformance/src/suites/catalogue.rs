//! The catalogue against the spec's table: names, scopes, confirmation rules, deferred
//! operations, closed input schemas and output schemas that describe the error shape.

use incus_operations::{Confirmation, Descriptor, ErrorKind, NotExportedReason};
use serde_json::{json, Value};

use super::spec_table::{Confirm, SpecOperation, ERROR_KINDS, FORBIDDEN_INPUT_NAMES, OPERATIONS};
use crate::runner::Check;

/// Every catalogue check.
pub(crate) fn checks() -> Vec<Check> {
    let mut checks = vec![
        Check::new(
            "catalogue::table::exported_operations_are_the_spec_table",
            exported_are_the_table,
        ),
        Check::new(
            "evidence::gate::unavailable_operations_name_their_missing_requirements",
            missing_named,
        )
        .in_process_only(super::evidence::IN_PROCESS_ONLY),
        Check::new(
            "catalogue::deferred_operations::copy_rename_move_are_deferred_by_scope",
            deferred,
        ),
        Check::new(
            "catalogue::canonical_names::names_are_incus_resource_verb",
            canonical_names,
        ),
        Check::new(
            "catalogue::streaming_excluded::no_event_console_or_file_operation",
            no_streaming,
        ),
        Check::new(
            "results::match_output_schema::error_kinds_are_the_closed_set_of_the_spec",
            error_kinds,
        ),
    ];
    for op in OPERATIONS {
        let short = op.short();
        checks.push(Check::new(
            format!("catalogue::table::{short}_scope_and_confirmation"),
            move || scope_and_confirmation(op),
        ));
        checks.push(Check::new(
            format!("catalogue::pinned_fixture::{short}_describe_is_the_descriptor"),
            move || describe_matches(op),
        ));
        checks.push(
            Check::new(
                format!("evidence::named_requirements::{short}_requires_the_spec_evidence"),
                move || requirements(op),
            )
            .in_process_only(super::evidence::IN_PROCESS_ONLY),
        );
        checks.push(Check::new(
            format!("input::no_endpoint_names::{short}_input_schema_is_closed"),
            move || input_closed(op),
        ));
        checks.push(Check::new(
            format!("results::match_output_schema::{short}_output_schema_has_the_error_shape"),
            move || error_shape(op),
        ));
    }
    checks
}

/// The descriptor, exported or not.
fn descriptor(name: &str) -> Result<&'static Descriptor, String> {
    incus_operations::fetch(name)
        .or_else(|| {
            incus_operations::not_exported()
                .into_iter()
                .find(|u| u.name() == name)
                .and_then(|u| u.descriptor())
        })
        .ok_or_else(|| format!("the catalogue has no descriptor for {name}"))
}

fn exported_are_the_table() -> Result<(), String> {
    let spec: Vec<&str> = OPERATIONS.iter().map(|o| o.name).collect();
    let mut problems = Vec::new();
    for exported in incus_operations::all() {
        if !spec.contains(&exported.name()) {
            problems.push(format!(
                "{} is exported but not in the spec's table",
                exported.name()
            ));
        }
    }
    let unavailable = incus_operations::not_exported();
    for name in &spec {
        let is_exported = incus_operations::fetch(name).is_some();
        let missing_evidence = unavailable.iter().any(|u| {
            u.name() == *name && matches!(u.reason(), NotExportedReason::MissingEvidence { .. })
        });
        if !is_exported && !missing_evidence {
            problems.push(format!(
                "{name} is neither exported nor unavailable for missing evidence"
            ));
        }
    }
    verdict(problems)
}

fn missing_named() -> Result<(), String> {
    let problems = incus_operations::not_exported()
        .into_iter()
        .filter(|u| matches!(u.reason(), NotExportedReason::MissingEvidence { missing } if missing.is_empty()))
        .map(|u| format!("{} is unavailable for missing evidence but names no requirement", u.name()))
        .collect();
    verdict(problems)
}

fn deferred() -> Result<(), String> {
    let unavailable = incus_operations::not_exported();
    let mut problems = Vec::new();
    for name in [
        "incus_instance_copy",
        "incus_instance_rename",
        "incus_instance_move",
    ] {
        match unavailable.iter().find(|u| u.name() == name) {
            Some(u) if matches!(u.reason(), NotExportedReason::DeferredByScope { .. }) => {}
            Some(u) => problems.push(format!(
                "{name} is unavailable for another reason: {}",
                u.reason()
            )),
            None => problems.push(format!("{name} is not listed by not_exported()")),
        }
        if incus_operations::fetch(name).is_some() {
            problems.push(format!("{name} is exported"));
        }
    }
    verdict(problems)
}

fn canonical_names() -> Result<(), String> {
    let pattern =
        regex::Regex::new("^incus_[a-z]+(_[a-z]+)*_[a-z]+$").map_err(|e| e.to_string())?;
    let problems = incus_operations::all()
        .into_iter()
        .filter(|d| !pattern.is_match(d.name()))
        .map(|d| format!("{} is not incus_<resource>_<verb>", d.name()))
        .collect();
    verdict(problems)
}

fn no_streaming() -> Result<(), String> {
    let streaming = ["event", "events", "console", "file", "files"];
    let problems = incus_operations::all()
        .into_iter()
        .filter(|d| d.name().split('_').any(|word| streaming.contains(&word)))
        .map(|d| format!("{} needs streaming beyond a bounded result", d.name()))
        .collect();
    verdict(problems)
}

fn scope_and_confirmation(op: &SpecOperation) -> Result<(), String> {
    let d = descriptor(op.name)?;
    let mut problems = Vec::new();
    if d.scope().as_str() != op.scope {
        problems.push(format!(
            "scope is {}, the spec says {}",
            d.scope(),
            op.scope
        ));
    }
    let expected = match op.confirm {
        Confirm::None => None,
        Confirm::Name => Some(Confirmation::InstanceName),
        Confirm::InstanceSnapshot => Some(Confirmation::InstanceSnapshot),
        Confirm::Fingerprint => Some(Confirmation::Fingerprint),
    };
    if d.confirmation() != expected {
        problems.push(format!(
            "confirmation is {:?}, the spec says {expected:?}",
            d.confirmation()
        ));
    }
    if d.destructive() != expected.is_some() {
        problems.push(format!(
            "destructive is {}, the spec says {}",
            d.destructive(),
            expected.is_some()
        ));
    }
    verdict(problems)
}

fn requirements(op: &SpecOperation) -> Result<(), String> {
    let requires = descriptor(op.name)?.requires();
    if requires == op.evidence {
        Ok(())
    } else {
        Err(format!(
            "requires {requires:?}, the spec's table says {:?}",
            op.evidence
        ))
    }
}

fn describe_matches(op: &SpecOperation) -> Result<(), String> {
    let d = descriptor(op.name)?;
    match incus_operations::describe(op.name) {
        Some(described) if described == d.describe() => Ok(()),
        Some(_) => Err("describe() differs from the descriptor".into()),
        None if incus_operations::fetch(op.name).is_none() => Ok(()),
        None => Err("describe() returns nothing for an exported operation".into()),
    }
}

fn input_closed(op: &SpecOperation) -> Result<(), String> {
    let schema = descriptor(op.name)?.input_schema();
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the input schema does not compile: {e}"))?;
    let mut problems = Vec::new();
    open_objects(schema, "", &mut problems);
    for key in FORBIDDEN_INPUT_NAMES {
        let mut input = op.confirmed_input();
        input[*key] = json!("/run/example/daemon.socket");
        if validator.is_valid(&input) {
            problems.push(format!("input naming {key:?} is valid"));
        }
    }
    named_properties(schema, "", &mut problems);
    if !validator.is_valid(&op.confirmed_input()) {
        problems.push(format!(
            "the minimal input {} is not valid",
            op.confirmed_input()
        ));
    }
    verdict(problems)
}

/// Object schemas that do not close with `additionalProperties: false`.
fn open_objects(schema: &Value, at: &str, problems: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        if let Some(items) = schema.as_array() {
            for (i, item) in items.iter().enumerate() {
                open_objects(item, &format!("{at}/{i}"), problems);
            }
        }
        return;
    };
    // A map (`additionalProperties` with a schema) is closed too: its values are constrained.
    let is_object = map.get("type") == Some(&json!("object")) || map.contains_key("properties");
    let open = matches!(
        map.get("additionalProperties"),
        None | Some(Value::Bool(true))
    ) && !map.contains_key("unevaluatedProperties");
    if is_object && open {
        let at = if at.is_empty() { "/" } else { at };
        problems.push(format!("the object schema at {at} is not closed"));
    }
    for (key, value) in map {
        // Conditions (`if`, `not`) only test the input; they admit nothing.
        if !matches!(key.as_str(), "if" | "not") {
            open_objects(value, &format!("{at}/{key}"), problems);
        }
    }
}

/// Properties anywhere in the input schema that name a connection, credential, owner or host path.
fn named_properties(schema: &Value, at: &str, problems: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for property in map
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if FORBIDDEN_INPUT_NAMES.contains(&property.0.as_str()) {
                    problems.push(format!("{at}/properties declares {:?}", property.0));
                }
            }
            for (key, value) in map {
                named_properties(value, &format!("{at}/{key}"), problems);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                named_properties(item, &format!("{at}/{i}"), problems);
            }
        }
        _ => {}
    }
}

/// The core's `ErrorKind::ALL`, and the `error.kind` enum of every output schema, are the spec's
/// closed set in its order.
fn error_kinds() -> Result<(), String> {
    let mut problems = Vec::new();
    let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|kind| kind.as_str()).collect();
    if kinds != ERROR_KINDS {
        problems.push(format!(
            "ErrorKind::ALL is {kinds:?}, the spec says {ERROR_KINDS:?}"
        ));
    }
    for op in OPERATIONS {
        let schema = descriptor(op.name)?.output_schema();
        let enumerated: Vec<&str> = schema["oneOf"][1]["properties"]["error"]["properties"]["kind"]
            ["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if enumerated != ERROR_KINDS {
            problems.push(format!("{}: error.kind enumerates {enumerated:?}", op.name));
        }
    }
    verdict(problems)
}

fn error_shape(op: &SpecOperation) -> Result<(), String> {
    let schema = descriptor(op.name)?.output_schema();
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the output schema does not compile: {e}"))?;
    let mut problems = Vec::new();
    for kind in ERROR_KINDS {
        let error = json!({"error": {"kind": kind, "message": "m"}});
        if !validator.is_valid(&error) {
            problems.push(format!("the error shape with kind {kind} is not valid"));
        }
    }
    let full = json!({"error": {"kind": "native", "message": "m", "http_status": 404, "error_code": 404, "pointer": "/name", "limit": 1, "operation_id": "x"}});
    if !validator.is_valid(&full) {
        problems.push("an error with every optional key is not valid".into());
    }
    let extra = json!({"error": {"kind": "native", "message": "m", "secret": "x"}});
    if validator.is_valid(&extra) {
        problems.push("an error with an unknown key is valid".into());
    }
    for wrong in [
        json!({"error": {"kind": "no_such_kind", "message": "m"}}),
        json!({"error": {"kind": "native"}}),
        json!({"result": 1}),
        json!([]),
    ] {
        if validator.is_valid(&wrong) {
            problems.push(format!("{wrong} is valid"));
        }
    }
    verdict(problems)
}

fn verdict(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the catalogue against the spec's table); a
    //! promise of the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;
    use crate::scenario::load;

    /// Kinds whose scenarios send input that fails the schema on purpose. (A missing `confirm`
    /// is `confirmation_required`, whether or not the schema lists it as required.)
    const SCHEMA_FAILURES: &[&str] = &[
        "invalid_input",
        "input_too_large",
        "unknown_operation",
        "scope_missing",
        "confirmation_required",
    ];

    #[test]
    fn scenario_inputs_meant_to_be_valid_match_the_catalogue() {
        let fingerprint = json!(super::super::spec_table::FINGERPRINT);
        let variables = std::collections::BTreeMap::from([
            ("fp".to_owned(), fingerprint.clone()),
            ("fingerprint".to_owned(), fingerprint),
            ("etag".to_owned(), json!("abc")),
            (
                "op".to_owned(),
                json!("00000000-0000-4000-8000-000000000000"),
            ),
            ("project".to_owned(), json!("default")),
            ("pool".to_owned(), json!("default")),
            ("alias".to_owned(), json!("busybox")),
            (
                "exec_op".to_owned(),
                json!("00000000-0000-4000-8000-000000000000"),
            ),
            (
                "exec_timeout".to_owned(),
                json!(crate::scenario::format::FAKE_CLUSTER_EXEC_TIMEOUT),
            ),
        ]);
        let mut problems = Vec::new();
        for file in load::builtin().into_iter().chain(load::builtin_cluster()) {
            let scenario = file.scenario.unwrap();
            for (i, step) in scenario.steps.iter().enumerate() {
                let kind = step.expect.error_kind.clone().flatten();
                if kind
                    .as_deref()
                    .is_some_and(|k| SCHEMA_FAILURES.contains(&k))
                {
                    continue;
                }
                let Ok(d) = descriptor(&step.operation) else {
                    continue;
                };
                let input = crate::scenario::run::substitute(&step.input, &variables);
                let validator = jsonschema::validator_for(d.input_schema()).unwrap();
                for error in validator.iter_errors(&input) {
                    problems.push(format!(
                        "{} step {}: {error} at {}",
                        scenario.name,
                        i + 1,
                        error.instance_path()
                    ));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn spec_table_minimal_inputs_match_the_catalogue() {
        for op in OPERATIONS {
            input_closed(op).unwrap_or_else(|e| panic!("{}: {e}", op.name));
        }
    }
}
