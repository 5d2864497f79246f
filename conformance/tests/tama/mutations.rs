//! Mutations of valid tama-operations/1 documents never panic and always give a verdict, and
//! the dispatcher installs exactly the documents the validator accepts.

use incus_conformance::tama::{self, Dex, RULES};
use proptest::prelude::*;
use serde_json::{json, Value};

/// The valid corpus documents.
fn valid_documents() -> Vec<Value> {
    let dir = crate::support::corpus().join("valid");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("valid corpus")
        .map(|e| e.expect("entry").path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).expect("read")).expect("JSON"))
        .collect()
}

/// One edit of a document: at the `target`-th node (in document order), do `edit`.
#[derive(Debug, Clone)]
enum Edit {
    Replace(Value),
    Remove,
    Insert(String, Value),
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|n| json!(n)),
        ".{0,20}".prop_map(Value::String),
        Just(json!("#/components/schemas/Nope")),
        Just(json!("https://example.com/x.json")),
        Just(json!("object")),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,8}",
        Just("$ref".to_owned()),
        Just("$id".to_owned()),
        Just("$dynamicRef".to_owned()),
        Just("x-tama-owner".to_owned()),
        Just("x-note".to_owned()),
        Just("type".to_owned()),
        Just("properties".to_owned()),
        Just("required".to_owned()),
        Just("allOf".to_owned()),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        value().prop_map(Edit::Replace),
        Just(Edit::Remove),
        (key(), value()).prop_map(|(k, v)| Edit::Insert(k, v)),
    ]
}

/// Applies `edit` at the `target`-th node (pre-order, modulo the node count).
fn apply(document: &mut Value, target: usize, edit: &Edit) {
    let count = count_nodes(document);
    let mut remaining = target % count;
    visit(document, &mut remaining, edit);
}

fn count_nodes(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(members) => members.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Returns true once the edit is applied.
fn visit(value: &mut Value, remaining: &mut usize, edit: &Edit) -> bool {
    if *remaining == 0 {
        match edit {
            Edit::Replace(new) => *value = new.clone(),
            Edit::Insert(key, new) => {
                if let Some(members) = value.as_object_mut() {
                    members.insert(key.clone(), new.clone());
                } else {
                    *value = new.clone();
                }
            }
            Edit::Remove => match value {
                Value::Object(members) => {
                    let first = members.keys().next().cloned();
                    if let Some(first) = first {
                        members.remove(&first);
                    }
                }
                Value::Array(items) => {
                    items.pop();
                }
                other => *other = Value::Null,
            },
        }
        return true;
    }
    *remaining -= 1;
    match value {
        Value::Array(items) => items.iter_mut().any(|item| visit(item, remaining, edit)),
        Value::Object(members) => members
            .values_mut()
            .any(|item| visit(item, remaining, edit)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn mutated_documents_never_panic_and_always_get_a_verdict(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<usize>(), edit()), 1..4),
    ) {
        let documents = valid_documents();
        let mut document = documents[pick.index(documents.len())].clone();
        for (target, edit) in &edits {
            apply(&mut document, *target, edit);
        }
        let report = tama::validate(&document);
        prop_assert_eq!(report.is_valid(), report.violations().is_empty());
        for violation in report.violations() {
            prop_assert!(RULES.contains(&violation.rule), "unknown rule {}", violation.rule);
            prop_assert!(violation.pointer.is_empty() || violation.pointer.starts_with('/'));
            prop_assert!(
                document.pointer(&violation.pointer).is_some(),
                "every pointer resolves against the document: {}",
                violation.pointer
            );
            prop_assert!(!violation.message.is_empty());
        }
        let bytes = serde_json::to_vec(&document).expect("serializes");
        prop_assert_eq!(&tama::validate_bytes(&bytes), &report, "same verdict from bytes");

        let mut dex = Dex::new();
        let installed = dex.install(document, |_id: String, input: Value| async move { Ok::<Value, Value>(input) });
        prop_assert_eq!(installed.is_ok(), report.is_valid(), "install agrees with validate");
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let report = tama::validate_bytes(&bytes);
        prop_assert!(!report.is_valid());
    }

    #[test]
    fn truncated_documents_are_refused_as_not_json(cut in any::<prop::sample::Index>()) {
        let bytes = serde_json::to_vec(&crate::support::spec_example()).expect("serializes");
        let cut = cut.index(bytes.len());
        let report = tama::validate_bytes(&bytes[..cut]);
        prop_assert_eq!(report.violations()[0].rule, "document.json");
    }

    #[test]
    fn byte_edits_of_a_valid_document_never_panic_and_agree_with_parsing_first(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let documents = valid_documents();
        let mut bytes = serde_json::to_vec_pretty(&documents[pick.index(documents.len())]).expect("serializes");
        for (at, byte) in &edits {
            let at = at.index(bytes.len());
            bytes[at] = *byte;
        }
        let report = tama::validate_bytes(&bytes);
        match serde_json::from_slice::<Value>(&bytes) {
            Err(_) => prop_assert_eq!(report.violations()[0].rule, "document.json"),
            Ok(document) => {
                // Bytes may add duplicate-name and raw-size findings, never lose a violation.
                let parsed = tama::validate(&document);
                for violation in parsed.violations().iter().filter(|v| v.rule != "document.size") {
                    prop_assert!(report.violations().contains(violation), "{:?}", violation);
                }
            }
        }
    }
}
