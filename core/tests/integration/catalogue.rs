//! The catalogue's schemas, bounds and the evidence gate's public face. The spec's table (names,
//! scopes, confirmation, evidence, closed inputs, the error shape and the closed set of error
//! kinds) is pinned once, on the specification side: `incus-conformance`'s `suites/spec_table.rs`
//! and its `catalogue::*` trials.

use crate::common;

use std::collections::BTreeSet;

use common::{documented_example, every_descriptor};
use incus_operations::{Confirmation, Descriptor, ErrorKind, NotExportedReason, Scope};
use serde_json::{json, Value};

fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::new(schema).expect("schema compiles")
}

fn descriptor(name: &str) -> &'static Descriptor {
    every_descriptor()
        .into_iter()
        .find(|descriptor| descriptor.name() == name)
        .unwrap_or_else(|| panic!("{name} is catalogued"))
}

#[test]
fn destructive_operations_require_confirm() {
    for descriptor in every_descriptor() {
        let schema = descriptor.input_schema();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if descriptor.destructive() {
            assert!(required.contains(&"confirm"), "{}", descriptor.name());
            assert_eq!(schema["properties"]["confirm"]["type"], "string");
            let mut example = documented_example(descriptor.description());
            example.as_object_mut().unwrap().remove("confirm");
            assert!(
                !compile(schema).is_valid(&example),
                "{} accepts input without confirm",
                descriptor.name()
            );
        } else {
            assert!(
                schema["properties"].get("confirm").is_none(),
                "{} has confirm but is not destructive",
                descriptor.name()
            );
        }
    }
}

#[test]
fn confirmation_repeats_the_exact_resource() {
    let instance = json!({"name": "web", "confirm": "web"});
    assert!(Confirmation::InstanceName.is_confirmed(&instance));
    let snapshot = json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0"});
    assert!(Confirmation::InstanceSnapshot.is_confirmed(&snapshot));
    let fingerprint = "a".repeat(64);
    let image = json!({"fingerprint": fingerprint, "confirm": fingerprint});
    assert!(Confirmation::Fingerprint.is_confirmed(&image));
}

#[test]
fn confirmation_refuses_inferred_consent() {
    for confirm in [
        "yes", "y", "true", "confirm", "WEB", "web ", "web/", "snap0",
    ] {
        let input =
            json!({"name": "web", "instance": "web", "snapshot": "snap0", "confirm": confirm});
        assert!(
            !Confirmation::InstanceName.is_confirmed(&input),
            "{confirm}"
        );
        assert!(
            !Confirmation::InstanceSnapshot.is_confirmed(&input),
            "{confirm}"
        );
    }
    let short = json!({"fingerprint": "a".repeat(64), "confirm": "a".repeat(12)});
    assert!(!Confirmation::Fingerprint.is_confirmed(&short));
    let missing = json!({"name": "web"});
    assert!(!Confirmation::InstanceName.is_confirmed(&missing));
}

#[test]
fn every_schema_is_valid_json_schema_2020_12() {
    for descriptor in every_descriptor() {
        for schema in [descriptor.input_schema(), descriptor.output_schema()] {
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
                panic!("{}: {error}", descriptor.name());
            }
            compile(schema);
        }
    }
}

#[test]
fn every_input_accepts_an_optional_native_project() {
    for descriptor in every_descriptor() {
        let schema = descriptor.input_schema();
        assert_eq!(schema["properties"]["project"]["type"], "string");
        let required = schema["required"].as_array().cloned().unwrap_or_default();
        assert!(
            !required.contains(&json!("project")),
            "{}",
            descriptor.name()
        );
        let validator = compile(schema);
        let mut example = documented_example(descriptor.description());
        example["project"] = json!("team-a");
        assert!(validator.is_valid(&example), "{}", descriptor.name());
        example["project"] = json!("../etc");
        assert!(!validator.is_valid(&example), "{}", descriptor.name());
    }
}

fn property(name: &str, field: &str) -> &'static Value {
    let value = &descriptor(name).input_schema()["properties"][field];
    assert!(value.is_object(), "{name}.{field} is declared");
    value
}

#[test]
fn list_limit_is_bounded_1_to_500_default_100() {
    for descriptor in every_descriptor()
        .into_iter()
        .filter(|d| d.name().ends_with("_list"))
    {
        let limit = property(descriptor.name(), "limit");
        assert_eq!(
            (&limit["minimum"], &limit["maximum"], &limit["default"]),
            (&json!(1), &json!(500), &json!(100)),
            "{}",
            descriptor.name()
        );
        assert_eq!(descriptor.bounds().max_items, Some(500));
        assert_eq!(descriptor.bounds().default_items, Some(100));
    }
}

#[test]
fn wait_seconds_is_bounded_0_to_60_default_10() {
    let waiting = [
        "incus_image_delete",
        "incus_instance_create",
        "incus_instance_delete",
        "incus_instance_snapshot_create",
        "incus_instance_snapshot_delete",
        "incus_instance_snapshot_restore",
        "incus_instance_state_update",
        "incus_operation_wait",
    ];
    for descriptor in every_descriptor() {
        let declared = descriptor.input_schema()["properties"].get("wait_seconds");
        assert_eq!(
            declared.is_some(),
            waiting.contains(&descriptor.name()),
            "{}",
            descriptor.name()
        );
        if let Some(wait) = declared {
            assert_eq!(
                (&wait["minimum"], &wait["maximum"], &wait["default"]),
                (&json!(0), &json!(60), &json!(10))
            );
            assert_eq!(descriptor.bounds().max_wait_seconds, Some(60));
        }
    }
}

#[test]
fn exec_bounds_are_schema_constraints() {
    let exec = compile(descriptor("incus_instance_exec").input_schema());
    let valid = json!({"name": "web", "command": ["true"]});
    assert!(exec.is_valid(&valid));
    let cases = [
        ("empty argv", json!({"name": "web", "command": []})),
        (
            "65 arguments",
            json!({"name": "web", "command": vec!["a"; 65]}),
        ),
        (
            "4097-char argument",
            json!({"name": "web", "command": ["a".repeat(4097)]}),
        ),
        (
            "timeout 0",
            json!({"name": "web", "command": ["true"], "timeout_seconds": 0}),
        ),
        (
            "timeout 301",
            json!({"name": "web", "command": ["true"], "timeout_seconds": 301}),
        ),
        (
            "stdin over 64 KiB",
            json!({"name": "web", "command": ["cat"], "stdin": "a".repeat(65537)}),
        ),
        (
            "environment value not a string",
            json!({"name": "web", "command": ["env"], "environment": {"A": 1}}),
        ),
    ];
    for (case, input) in cases {
        assert!(!exec.is_valid(&input), "{case} accepted");
    }
    let environment: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("V{i}"), json!("x"))).collect();
    assert!(!exec.is_valid(&json!({"name": "web", "command": ["env"], "environment": environment})));
    let at_bounds = json!({
        "name": "web",
        "command": vec!["a".repeat(4096); 64],
        "stdin": "a".repeat(65536),
        "timeout_seconds": 300,
    });
    assert!(exec.is_valid(&at_bounds));
    let timeout = property("incus_instance_exec", "timeout_seconds");
    assert_eq!(timeout["default"], 30);
}

#[test]
fn input_byte_bounds_are_16k_reads_64k_mutations_1m_exec() {
    for descriptor in every_descriptor() {
        let expected = match descriptor.scope() {
            Scope::Read => 16 * 1024,
            Scope::Write | Scope::Delete => 64 * 1024,
            Scope::Exec => 1024 * 1024,
        };
        assert_eq!(
            descriptor.bounds().max_input_bytes,
            expected,
            "{}",
            descriptor.name()
        );
        assert_eq!(descriptor.bounds().max_output_bytes, 256 * 1024);
    }
}

#[test]
fn native_config_and_devices_are_string_maps_and_restricted_keys_pass_the_schema() {
    let create = compile(descriptor("incus_instance_create").input_schema());
    let update = compile(descriptor("incus_instance_update").input_schema());
    let restricted = json!({
        "name": "web",
        "source": {"type": "image", "alias": "debian"},
        "config": {"security.privileged": "true", "raw.lxc": "x"},
        "devices": {"host": {"type": "disk", "source": "/etc", "path": "/mnt"}},
    });
    assert!(
        create.is_valid(&restricted),
        "restricted keys are the run pipeline's job"
    );
    let not_strings = json!({"name": "web", "config": {"limits.cpu": 2}});
    assert!(!update.is_valid(&not_strings));
    let nested = json!({"name": "web", "devices": {"eth0": {"type": {"nic": "x"}}}});
    assert!(!update.is_valid(&nested));
    assert!(
        !update.is_valid(&json!({"name": "web"})),
        "an update names at least one field"
    );
    assert!(update.is_valid(&json!({"name": "web", "description": "x", "etag": "\"abc\""})));
}

#[test]
fn titles_and_descriptions_fit_their_bounds() {
    for descriptor in every_descriptor() {
        assert!(!descriptor.title().is_empty() && descriptor.title().chars().count() <= 120);
        let description = descriptor.description();
        assert!(description.chars().count() <= 4096, "{}", descriptor.name());
        assert!(
            description.len() > 80,
            "{} says too little",
            descriptor.name()
        );
    }
}

#[test]
fn descriptions_say_what_confirm_must_repeat() {
    for descriptor in every_descriptor().into_iter().filter(|d| d.destructive()) {
        let description = descriptor.description();
        assert!(
            description.contains("confirm must repeat"),
            "{}",
            descriptor.name()
        );
    }
}

#[test]
fn documented_examples_are_valid_inputs() {
    for descriptor in every_descriptor() {
        let example = documented_example(descriptor.description());
        let validator = compile(descriptor.input_schema());
        let errors: Vec<String> = validator
            .iter_errors(&example)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", descriptor.name());
        if let Some(rule) = descriptor.confirmation() {
            assert!(
                rule.is_confirmed(&example),
                "{} example is not confirmed",
                descriptor.name()
            );
        }
        let bytes = serde_json::to_vec(&example).unwrap().len() as u64;
        assert!(bytes <= descriptor.bounds().max_input_bytes);
    }
}

#[test]
fn image_delete_requires_the_full_fingerprint() {
    let delete = compile(descriptor("incus_image_delete").input_schema());
    let prefix = "2f3b1d6e8a7c";
    assert!(!delete.is_valid(&json!({"fingerprint": prefix, "confirm": prefix})));
    let upper = "A".repeat(64);
    assert!(!delete.is_valid(&json!({"fingerprint": upper, "confirm": upper})));
}

fn stream() -> Value {
    json!({"data": "hi\n", "encoding": "utf-8", "bytes": 3, "captured_bytes": 3, "truncated": false})
}

/// One success result per shape of the shared contract, keyed by operation.
fn sample_success(name: &str) -> Value {
    let operation = json!({"id": "f4031b3c-f39e-4a3a-aba8-81ec55003bd1", "status": "Success"});
    match name {
        "incus_instance_get" => json!({"item": {"name": "web"}, "etag": null}),
        "incus_instance_update" => {
            json!({"status": "completed", "etag_source": "read", "etag": "abc"})
        }
        "incus_operation_cancel" => {
            json!({"status": "unsupported", "operation_id": "f4031b3c-f39e-4a3a-aba8-81ec55003bd1", "operation": operation})
        }
        "incus_instance_exec" => json!({
            "status": "completed", "exit_code": 0, "stdout": stream(), "stderr": stream(),
            "duration_ms": 12, "timeout_seconds": 30, "operation_id": null, "operation": null,
        }),
        _ if name.ends_with("_list") => {
            json!({"items": [{"name": "a"}], "count": 3, "truncated": true})
        }
        _ if descriptor(name).input_schema()["properties"]
            .get("wait_seconds")
            .is_some() =>
        {
            json!({
                "status": "running", "operation_id": "f4031b3c-f39e-4a3a-aba8-81ec55003bd1",
                "operation": operation, "waited_seconds": 10, "wait_error": null,
            })
        }
        _ => json!({"item": {"name": "x", "unknown_field": [1, 2]}}),
    }
}

/// The error half of every output schema is checked against the spec by the conformance suite
/// (`results::match_output_schema::*_output_schema_has_the_error_shape`); this is the success half.
#[test]
fn output_schemas_accept_the_success_shapes() {
    for descriptor in every_descriptor() {
        let validator = compile(descriptor.output_schema());
        let success = sample_success(descriptor.name());
        assert!(
            validator.is_valid(&success),
            "{}: {success}",
            descriptor.name()
        );
    }
}

#[test]
fn all_exports_only_descriptors_whose_evidence_is_complete() {
    let exported: BTreeSet<&str> = incus_operations::all().iter().map(|d| d.name()).collect();
    let unavailable = incus_operations::not_exported();
    for entry in &unavailable {
        assert!(!exported.contains(entry.name()), "{} is both", entry.name());
        match entry.reason() {
            NotExportedReason::MissingEvidence { missing } => {
                let descriptor = entry
                    .descriptor()
                    .expect("gated operations have descriptors");
                assert!(!missing.is_empty());
                for requirement in missing {
                    assert!(descriptor.requires().contains(&requirement.requirement()));
                    assert!(!requirement.problems().is_empty());
                }
                assert!(incus_operations::fetch(entry.name()).is_none());
                assert!(incus_operations::describe(entry.name()).is_none());
            }
            NotExportedReason::DeferredByScope { .. } => {}
        }
    }
    for name in &exported {
        assert!(incus_operations::fetch(name).is_some());
        assert_eq!(
            incus_operations::describe(name).unwrap(),
            incus_operations::fetch(name).unwrap().describe()
        );
    }
    assert_eq!(every_descriptor().len(), 32);
    assert!(incus_operations::fetch("incus_nothing").is_none());
}

#[test]
fn all_is_sorted_by_name() {
    let names: Vec<&str> = incus_operations::all().iter().map(|d| d.name()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

#[test]
fn readme_documents_every_error_kind() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for kind in ErrorKind::ALL {
        assert!(
            readme.contains(&format!("| `{kind}` |")),
            "{kind} is not in the README table"
        );
    }
}

#[test]
fn instance_create_names_its_image_by_alias_or_fingerprint() {
    let create = compile(descriptor("incus_instance_create").input_schema());
    let with = |source: Value| json!({"name": "web", "source": source});
    assert!(create.is_valid(&with(
        json!({"type": "image", "alias": "debian/12", "remote": "images"})
    )));
    assert!(create.is_valid(&with(
        json!({"type": "image", "fingerprint": "2f3b1d6e8a7c"})
    )));
    assert!(create.is_valid(&with(json!({"type": "none"}))));
    assert!(
        !create.is_valid(&with(json!({"type": "image"}))),
        "image without alias or fingerprint"
    );
    assert!(!create.is_valid(&with(json!({"type": "migration"}))));
    assert!(
        !create.is_valid(&json!({"name": "web"})),
        "source is required"
    );
    assert!(!create.is_valid(&with(
        json!({"type": "image", "alias": "a", "remote": "https://x"})
    )));
    assert!(!create.is_valid(&json!({"name": "1web", "source": {"type": "none"}})));
    // An image source names a host-approved remote, never a server URL or credentials.
    for (key, value) in [
        ("server", "https://images.example"),
        ("certificate", "pem"),
        ("secret", "s"),
        ("protocol", "simplestreams"),
    ] {
        let mut input = with(json!({"type": "image", "alias": "debian"}));
        input["source"][key] = json!(value);
        assert!(!create.is_valid(&input), "source.{key} accepted");
    }
}

/// Issue 11's target: what an operation does natively lives in its catalogue entry, so no file of
/// `core/src` outside `core/src/catalogue/` names an operation.
#[test]
fn no_operation_name_appears_outside_the_catalogue() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names: Vec<String> = common::every_descriptor()
        .iter()
        .map(|descriptor| format!("\"{}\"", descriptor.name()))
        .collect();
    let mut pending = vec![root.clone()];
    let mut found = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("source directory") {
            let path = entry.expect("entry").path();
            if path == root.join("catalogue") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).expect("source file");
                for name in names.iter().filter(|name| text.contains(name.as_str())) {
                    found.push(format!("{} names {name}", path.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Issue 10 item 6: an uncertain update, cancel or exec says why in `reason` (mutations say it in
/// `wait_error`); `reason` appears on no other status.
#[test]
fn uncertain_results_carry_their_reason_and_only_they_do() {
    let reason = json!("transport error while talking to Incus: connection closed");
    for name in [
        "incus_instance_update",
        "incus_operation_cancel",
        "incus_instance_exec",
    ] {
        let validator = compile(descriptor(name).output_schema());
        let mut uncertain = sample_success(name);
        uncertain["status"] = json!("uncertain");
        let mut with_reason = uncertain.clone();
        with_reason["reason"] = reason.clone();
        assert!(validator.is_valid(&with_reason), "{name}: {with_reason}");
        let mut settled = sample_success(name);
        settled["reason"] = reason.clone();
        assert!(
            !validator.is_valid(&settled),
            "{name}: reason without uncertain"
        );
        // Update and cancel always know why; exec may not when its streams were never attached.
        assert_eq!(
            validator.is_valid(&uncertain),
            name == "incus_instance_exec",
            "{name}: uncertain without reason"
        );
    }
}
