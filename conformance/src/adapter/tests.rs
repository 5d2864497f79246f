//! The protocol's schemas against real traffic, and the reference adapter's answers.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::reference;
use super::targets::WireTargets;
use super::transport::{Transport, TransportError};
use crate::scenario::fake::Listener;
use crate::scenario::target::{BoxFuture, TargetFactory};
use crate::suites::{registry, Subject};

const REQUEST_SCHEMA: &str = include_str!("../../adapter-protocol/request.schema.json");
const ANSWER_SCHEMA: &str = include_str!("../../adapter-protocol/answer.schema.json");

/// The reference adapter in this process, every exchange recorded.
#[derive(Default)]
struct Recording {
    exchanges: Mutex<Vec<(String, Value)>>,
}

impl Transport for Recording {
    fn exchange(&self, request: String) -> BoxFuture<'_, Result<Value, TransportError>> {
        Box::pin(async move {
            let answer = reference::answer(&request).await;
            self.exchanges
                .lock()
                .unwrap()
                .push((request, answer.clone()));
            Ok(answer)
        })
    }
}

fn block_on<F: std::future::Future>(body: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(body)
}

fn validator(schema: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&serde_json::from_str(schema).unwrap()).unwrap()
}

/// Runs the wire trials whose names start with one of `prefixes`, on threads; returns failures.
fn run(factory: Arc<dyn TargetFactory>, prefixes: &[&str]) -> Vec<String> {
    let checks: Vec<_> = registry(&factory, Subject::Adapter)
        .into_iter()
        .filter(|c| prefixes.iter().any(|p| c.name.starts_with(p)))
        .collect();
    assert!(!checks.is_empty(), "no trial starts with {prefixes:?}");
    let threads: Vec<_> = checks
        .into_iter()
        .map(|check| std::thread::spawn(move || (check.name, (check.body)())))
        .collect();
    threads
        .into_iter()
        .filter_map(|t| match t.join().unwrap() {
            (_, Ok(())) => None,
            (name, Err(e)) => Some(format!("{name}: {e}")),
        })
        .collect()
}

#[test]
fn protocol_schemas_accept_every_request_and_answer_of_a_wire_run() {
    let recording = Arc::new(Recording::default());
    let transport: Arc<dyn Transport> = recording.clone();
    let unix = Arc::new(WireTargets::new(Arc::clone(&transport)));
    let https = Arc::new(WireTargets::new(transport).listener(Listener::Https));
    let mut failures = run(
        unix,
        &[
            "binding::",
            "authorization::",
            "image_remote::",
            "restricted_input::",
            "check_order::",
            "discovery::",
            "timeouts::request_bound::",
        ],
    );
    failures.extend(run(https, &["scopes::"]));
    crate::runner::quiet_expected_panics();
    assert!(failures.is_empty(), "{failures:#?}");

    let requests = validator(REQUEST_SCHEMA);
    let answers = validator(ANSWER_SCHEMA);
    let exchanges = recording.exchanges.lock().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for (request, answer) in exchanges.iter() {
        let request: Value = serde_json::from_str(request).unwrap();
        let errors: Vec<String> = requests
            .iter_errors(&request)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{request}: {errors:?}");
        let errors: Vec<String> = answers.iter_errors(answer).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{answer}: {errors:?}");
        assert!(answer.get("adapter_error").is_none(), "{answer}");
        for callback in ["binding", "authorize", "image_remote", "allow_restricted"] {
            seen.insert(format!(
                "{callback}:{}",
                request["host"][callback]["answer"]
            ));
        }
        for field in ["unix_socket", "https", "timeout_ms"] {
            if request["backend"].get(field).is_some() {
                seen.insert(field.to_owned());
            }
        }
    }
    for answer in ["allow", "deny", "fail", "crash", "hang"] {
        for callback in ["binding", "authorize", "allow_restricted"] {
            assert!(
                seen.contains(&format!("{callback}:\"{answer}\"")),
                "{callback} {answer} never sent: {seen:?}"
            );
        }
    }
    for field in ["unix_socket", "https", "timeout_ms"] {
        assert!(seen.contains(field), "no backend with {field}");
    }
}

#[test]
fn the_answer_schema_refuses_what_is_not_a_result_or_an_adapter_error() {
    let answers = validator(ANSWER_SCHEMA);
    assert!(answers.is_valid(&json!({"count": 0, "items": []})));
    assert!(answers.is_valid(&json!({"adapter_error": "not JSON"})));
    assert!(!answers.is_valid(&json!([])));
    assert!(!answers.is_valid(&json!({"adapter_error": "x", "count": 1})));
}

#[test]
fn the_reference_adapter_answers_an_unreadable_request_with_an_adapter_error() {
    block_on(async {
        for line in [
            "not json",
            "{}",
            r#"{"protocol": "incus-operations-adapter/0"}"#,
        ] {
            let answer = reference::answer(line).await;
            assert!(answer["adapter_error"].is_string(), "{line}: {answer}");
        }
        let mut request: Value = serde_json::from_str(&sample_request()).unwrap();
        request["protocol"] = json!("incus-operations-adapter/2");
        let answer = reference::answer(&request.to_string()).await;
        assert!(answer["adapter_error"]
            .as_str()
            .unwrap()
            .contains("incus-operations-adapter/2"));
    });
}

fn sample_request() -> String {
    json!({"protocol": "incus-operations-adapter/1", "operation": "incus_instance_list",
           "input": {}, "scopes": ["incus.read"], "caller": "c",
           "backend": {"unix_socket": "/nonexistent"}, "host": {}})
    .to_string()
}

#[test]
fn a_request_with_only_defaults_is_read_and_run() {
    block_on(async {
        let answer = reference::answer(&sample_request()).await;
        assert!(answer.get("adapter_error").is_none(), "{answer}");
        assert!(answer["error"]["kind"].is_string(), "{answer}");
    });
}
