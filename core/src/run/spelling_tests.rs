//! Issue 10 item 1, as a property: every integer field of every operation's input schema means its
//! value in the native request (or the behaviour it bounds), however JSON spells the integer
//! (`2`, `2.0`, `2e0`, `0.2e1`, `20e-1`, ...). JSON Schema 2020-12 counts all of these as integers,
//! so all of them pass validation; a reader that drops a float ran an exec as root (`"user": 1000.0`
//! became `0`), returned no items for `"limit": 5.0` and killed a command at once for
//! `"timeout_seconds": 5.0`.
//!
//! The integer fields are found in the schemas, so a new one fails here until it has a check.
use std::time::Duration;

use fake_incus::FakeIncus;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

use super::pipeline::run_operation;
use super::RunOptions;
use crate::catalogue::{by_native, catalogue, Descriptor, Native, OperationKind, Scope};
use crate::client::exec_duration_cap;
use crate::host::AllowAll;
use crate::{Connection, Endpoint};

const FINGERPRINT: &str = "abababababababababababababababababababababababababababababababab";

/// Placeholder for the integer under test, replaced by its spelling in the JSON text.
const SLOT: &str = "\"__integer__\"";

/// Spellings of one integer that JSON Schema 2020-12 counts as that integer.
fn spellings(value: i64) -> Vec<String> {
    let sign = if value < 0 { "-" } else { "" };
    let digits = value.unsigned_abs().to_string();
    let mut out = vec![
        format!("{value}"),
        format!("{value}.0"),
        format!("{value}.000"),
        format!("{value}e0"),
        format!("{value}E+0"),
        format!("{value}.0e0"),
    ];
    if value == 0 {
        // JSON allows no leading zeros, so 0 has its own shifted spellings.
        out.extend(["0e-1".to_owned(), "0E2".to_owned(), "0.0e5".to_owned()]);
    } else {
        out.push(format!("{value}0e-1"));
        out.push(format!("{value}00E-2"));
        // 0.2e1, 0.600e3, ...: the digits after the point, then the exponent that restores them.
        out.push(format!("{sign}0.{digits}e{}", digits.len()));
        out.push(format!("{sign}0.{digits}00e{}", digits.len()));
    }
    out
}

/// The integer fields of an input schema, with their bounds.
fn integer_fields(descriptor: &Descriptor) -> Vec<(String, i64, i64)> {
    let properties = descriptor.input_schema()["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    properties
        .iter()
        .filter(|(_, schema)| schema["type"] == "integer")
        .map(|(name, schema)| {
            let minimum = schema["minimum"]
                .as_i64()
                .expect("integer fields have a minimum");
            let maximum = schema["maximum"]
                .as_i64()
                .expect("integer fields have a maximum");
            (name.clone(), minimum, maximum)
        })
        .collect()
}

/// A valid input of the operation (the field under test set to [`SLOT`]), over the seeded fake.
fn base_input(native: Native, operation_id: &str) -> Value {
    match native {
        Native::InstanceSnapshotList => json!({"instance": "web"}),
        Native::StorageVolumeList => json!({"pool": "default"}),
        _ if native.kind() == OperationKind::List => json!({}),
        Native::InstanceCreate => json!({"name": "fresh", "source": {"type": "none"}}),
        Native::InstanceDelete => json!({"name": "idle", "confirm": "idle"}),
        Native::InstanceStateUpdate => json!({"name": "web", "action": "freeze"}),
        Native::InstanceSnapshotCreate => json!({"instance": "web", "snapshot": "fresh"}),
        Native::InstanceSnapshotDelete | Native::InstanceSnapshotRestore => {
            json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0"})
        }
        Native::ImageDelete => json!({"fingerprint": FINGERPRINT, "confirm": FINGERPRINT}),
        Native::OperationWait => json!({"operation_id": operation_id}),
        Native::InstanceExec => json!({"name": "web", "command": ["true"]}),
        other => panic!("{other:?} has an integer field but no input in this test: add one"),
    }
}

fn seed() -> Value {
    json!({
        "instances": [
            {"name": "web", "status": "Running", "snapshots": [{"name": "snap0"}]},
            {"name": "idle", "status": "Stopped"},
            {"name": "third", "status": "Stopped"},
        ],
        "images": [
            {"project": "default", "fingerprint": FINGERPRINT, "properties": {}, "aliases": [{"name": "busybox"}]},
        ],
    })
}

/// Runs one case on a fresh fake and checks that the field meant `value`.
async fn case(
    descriptor: &'static Descriptor,
    field: &str,
    value: i64,
    spelling: &str,
) -> Result<(), TestCaseError> {
    let fake = FakeIncus::builder()
        .state(seed())
        .start()
        .await
        .expect("fake starts");
    // A timeout over 61 s makes the effective wait the whole `wait_seconds`.
    let connection = Connection::builder(Endpoint::unix(fake.unix_socket()))
        .timeout(Duration::from_secs(62))
        .build()
        .expect("connection");
    let host = AllowAll::new(connection.clone());
    let scopes = [Scope::Read, Scope::Write, Scope::Exec, Scope::Delete];
    let options = RunOptions::new(&host, &(), scopes);
    let prior = by_native(Native::InstanceCreate);
    let earlier = run_operation(
        prior,
        json!({"name": "prior", "source": {"type": "none"}, "wait_seconds": 0}),
        &options,
    )
    .await
    .expect("a prior operation");
    let operation_id = earlier["operation_id"].as_str().unwrap_or_default();
    let mut input = base_input(descriptor.native(), operation_id);
    input[field] = json!("__integer__");
    let text = serde_json::to_string(&input)
        .expect("serializes")
        .replace(SLOT, spelling);
    let input: Value = serde_json::from_str(&text).expect("valid JSON");
    fake.clear_journal();
    let result = match run_operation(descriptor, input, &options).await {
        Ok(result) => result,
        Err(error) => error.to_result(),
    };
    let name = descriptor.name();
    prop_assert!(result.get("error").is_none(), "{name} {text}: {result}");
    let journal = fake.journal();
    let body_of = |method: &str, suffix: &str| -> Value {
        journal
            .iter()
            .find(|entry| entry.method == method && entry.path.ends_with(suffix))
            .and_then(|entry| serde_json::from_str(&entry.body).ok())
            .unwrap_or(Value::Null)
    };
    match field {
        "limit" => {
            let count = result["count"].as_i64().unwrap_or_default();
            let items = result["items"].as_array().map(Vec::len).unwrap_or_default();
            prop_assert_eq!(
                items as i64,
                value.min(count),
                "{} {}: {}",
                name,
                text,
                result
            );
            prop_assert_eq!(&result["truncated"], &json!(value < count));
        }
        "wait_seconds" => {
            let wait = journal
                .iter()
                .find(|entry| entry.method == "GET" && entry.path.ends_with("/wait"));
            let query = wait
                .and_then(|entry| entry.query.clone())
                .unwrap_or_default();
            prop_assert!(
                query
                    .split('&')
                    .any(|pair| pair == format!("timeout={value}")),
                "{} {}: wait query {:?}",
                name,
                text,
                query
            );
            prop_assert_eq!(&result["waited_seconds"], &json!(value));
        }
        "timeout" => {
            let body = body_of("PUT", "/state");
            prop_assert_eq!(
                body["timeout"].as_i64(),
                Some(value),
                "{} {}: {}",
                name,
                text,
                body
            );
            prop_assert!(body["timeout"].is_i64(), "an integer on the wire: {}", body);
        }
        "user" | "group" => {
            let body = body_of("POST", "/exec");
            prop_assert_eq!(
                body[field].as_i64(),
                Some(value),
                "{} {}: {}",
                name,
                text,
                body
            );
            prop_assert!(body[field].is_u64(), "an integer on the wire: {}", body);
        }
        "timeout_seconds" => {
            let cap = exec_duration_cap(value as u64, connection.stream_timeout());
            prop_assert_eq!(&result["timeout_seconds"], &json!(cap), "{} {}", name, text);
            // `true` exits at once; a bound read as 0 would have killed it.
            prop_assert_eq!(
                &result["status"],
                &json!("completed"),
                "{} {}: {}",
                name,
                text,
                result
            );
        }
        other => {
            return Err(TestCaseError::fail(format!(
                "{name}.{other} is an integer field without a check in this test: add one"
            )))
        }
    }
    Ok(())
}

#[test]
fn every_integer_field_means_its_value_in_every_json_spelling() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut checked = 0;
    for descriptor in catalogue() {
        for (field, minimum, maximum) in integer_fields(descriptor) {
            let config = Config {
                cases: 12,
                failure_persistence: None,
                ..Config::default()
            };
            let mut runner = TestRunner::new(config);
            // The bounds themselves, and values inside them.
            let values = prop_oneof![Just(minimum), Just(maximum), minimum..=maximum];
            let strategy = (values, any::<prop::sample::Index>());
            runner
                .run(&strategy, |(value, index)| {
                    let all = spellings(value);
                    let spelling = index.get(&all).clone();
                    runtime.block_on(case(descriptor, &field, value, &spelling))
                })
                .unwrap_or_else(|failure| panic!("{}.{field}: {failure}", descriptor.name()));
            checked += 1;
        }
    }
    // limit on 10 lists, wait_seconds on 8 operations, timeout, and exec's user, group and
    // timeout_seconds.
    assert_eq!(checked, 22, "integer fields checked");
}

#[test]
fn spellings_are_the_integer_they_spell() {
    for value in [-1, 0, 1, 2, 10, 600, 4_294_967_295] {
        for spelling in spellings(value) {
            let parsed: Value = serde_json::from_str(&spelling).expect(&spelling);
            assert_eq!(parsed.as_f64(), Some(value as f64), "{spelling}");
        }
    }
    assert!(spellings(2).contains(&"0.2e1".to_owned()));
    assert!(spellings(2).contains(&"20e-1".to_owned()));
}
