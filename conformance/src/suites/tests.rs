//! The suites against scripted targets: a model that follows the spec's early checks passes
//! them, and a model with one rule broken fails exactly the checks of that rule.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::spec_table::{Confirm, OPERATIONS};
use super::*;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::{BoxFuture, Request, Target};

type Behaviour = dyn Fn(&str, &[String], &Value) -> Value + Send + Sync;

/// A factory whose targets answer with `behaviour`; any answer that is not a refusal made
/// before the backend counts as one backend request in the journal.
struct Scripted(Arc<Behaviour>);

struct ScriptedTarget {
    behaviour: Arc<Behaviour>,
    journal: Mutex<Vec<Request>>,
}

impl TargetFactory for Scripted {
    fn start<'a>(
        &'a self,
        _setup: &'a FakeSetup,
    ) -> BoxFuture<'a, Result<Box<dyn Target>, String>> {
        let target = ScriptedTarget {
            behaviour: Arc::clone(&self.0),
            journal: Mutex::new(Vec::new()),
        };
        Box::pin(async move { Ok(Box::new(target) as Box<dyn Target>) })
    }

    fn is_fake(&self) -> bool {
        true
    }
}

impl Target for ScriptedTarget {
    fn call<'a>(
        &'a self,
        operation: &'a str,
        scopes: &'a [String],
        input: Value,
    ) -> BoxFuture<'a, Value> {
        let result = (self.behaviour)(operation, scopes, &input);
        if !arbitrary_input::REFUSED_BEFORE_BACKEND
            .iter()
            .any(|k| result.pointer("/error/kind") == Some(&json!(k)))
        {
            self.journal.lock().unwrap().push(Request {
                method: "GET".into(),
                path: "/1.0".into(),
                query: None,
                body: String::new(),
                if_match: None,
                applied: false,
            });
        }
        Box::pin(async move { result })
    }

    fn journal(&self) -> Option<Vec<Request>> {
        Some(self.journal.lock().unwrap().clone())
    }

    fn output_schema(&self, _operation: &str) -> Option<Value> {
        None
    }

    fn add_fault(&self, _rule: &Value) -> Result<(), String> {
        Err("scripted targets take no fault rules".into())
    }
}

fn error(kind: &str) -> Value {
    json!({"error": {"kind": kind, "message": kind}})
}

fn error_with_limit(kind: &str, limit: usize) -> Value {
    json!({"error": {"kind": kind, "message": kind, "limit": limit}})
}

/// The spec's early checks, in order: scope, byte bounds, confirmation; then a native 404.
fn model(operation: &str, scopes: &[String], input: &Value) -> Value {
    let Some(op) = OPERATIONS.iter().find(|o| o.name == operation) else {
        return error("unknown_operation");
    };
    if !scopes.iter().any(|s| s == op.scope) {
        return error("scope_missing");
    }
    let size = serde_json::to_vec(input).map(|v| v.len()).unwrap_or(0);
    if size > op.class.bound() {
        return error_with_limit("input_too_large", op.class.bound());
    }
    if !input.is_object() {
        return error("invalid_input");
    }
    if op.confirm != Confirm::None {
        let expected = match op.confirm {
            Confirm::Name => input["name"].as_str().map(str::to_owned),
            Confirm::InstanceSnapshot => Some(format!(
                "{}/{}",
                input["instance"].as_str().unwrap_or_default(),
                input["snapshot"].as_str().unwrap_or_default()
            )),
            _ => input["fingerprint"].as_str().map(str::to_owned),
        };
        match input.get("confirm").and_then(Value::as_str) {
            None => return error("confirmation_required"),
            Some(c) if Some(c) != expected.as_deref() => return error("confirmation_mismatch"),
            Some(_) => {}
        }
    }
    json!({"error": {"kind": "native", "message": "not found", "http_status": 404}})
}

fn run_suite(checks: Vec<Check>) -> Vec<(String, Result<(), String>)> {
    checks
        .into_iter()
        .map(|check| (check.name.clone(), (check.body)()))
        .collect()
}

fn factory(
    behaviour: impl Fn(&str, &[String], &Value) -> Value + Send + Sync + 'static,
) -> Arc<dyn TargetFactory> {
    Arc::new(Scripted(Arc::new(behaviour)))
}

fn failures(results: &[(String, Result<(), String>)]) -> Vec<&str> {
    results
        .iter()
        .filter(|(_, r)| r.is_err())
        .map(|(n, _)| n.as_str())
        .collect()
}

#[test]
fn a_model_that_follows_the_spec_passes_every_suite() {
    let f = factory(model);
    for suite in [
        scopes::checks(&f),
        confirmation::checks(&f),
        byte_bounds::checks(&f),
        arbitrary_input::checks(&f),
    ] {
        let results = run_suite(suite);
        let failed: Vec<_> = results.iter().filter(|(_, r)| r.is_err()).collect();
        assert!(failed.is_empty(), "{failed:#?}");
    }
}

#[test]
fn ignoring_scopes_fails_the_scope_checks_only() {
    let f = factory(|op, _scopes, input| {
        model(
            op,
            &spec_table::SCOPES
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>(),
            input,
        )
    });
    let results = run_suite(scopes::checks(&f));
    let failed = failures(&results);
    assert_eq!(failed.len(), 32, "{failed:?}");
    assert!(
        failed.iter().all(|n| n.ends_with("_needs_it")),
        "{failed:?}"
    );
}

#[test]
fn accepting_yes_fails_the_inferred_consent_checks() {
    let f = factory(|op, scopes, input| {
        if input.get("confirm") == Some(&json!("yes")) {
            return json!({"error": {"kind": "native", "message": "m"}});
        }
        model(op, scopes, input)
    });
    let results = run_suite(confirmation::checks(&f));
    let failed = failures(&results);
    assert_eq!(failed.len(), 4, "{failed:?}");
    assert!(
        failed.iter().all(|n| n.contains("inferred_consent")),
        "{failed:?}"
    );
}

#[test]
fn trimming_confirm_is_caught_with_a_seeded_minimal_reproducer() {
    let f = factory(|op, scopes, input| {
        let mut input = input.clone();
        if let Some(c) = input
            .get("confirm")
            .and_then(Value::as_str)
            .map(|c| c.trim().to_owned())
        {
            input["confirm"] = json!(c);
        }
        model(op, scopes, &input)
    });
    let results = run_suite(confirmation::checks(&f));
    let (name, result) = results
        .iter()
        .find(|(n, _)| n == "confirmation::exact_resource::instance_delete_near_misses_are_refused")
        .unwrap();
    let message = result.as_ref().unwrap_err();
    assert!(
        message.contains(property::SEED_VARIABLE),
        "{name}: {message}"
    );
    assert!(
        message.contains("\"operation\": \"incus_instance_delete\""),
        "{message}"
    );
}

#[test]
fn a_size_check_off_by_one_fails_the_byte_bounds() {
    let f = factory(|op, scopes, input| {
        let size = serde_json::to_vec(input).unwrap().len();
        let bound = OPERATIONS
            .iter()
            .find(|o| o.name == op)
            .unwrap()
            .class
            .bound();
        if size >= bound {
            return error_with_limit("input_too_large", bound);
        }
        model(op, scopes, input)
    });
    let failed = run_suite(byte_bounds::checks(&f));
    assert_eq!(failures(&failed).len(), 32);
}

#[test]
fn a_result_outside_the_error_shape_fails_the_arbitrary_input_property() {
    let f = factory(
        |_, _, _| json!({"error": {"kind": "invalid_input", "message": "m", "stack": "..."}}),
    );
    let results = run_suite(arbitrary_input::checks(&f));
    assert_eq!(failures(&results).len(), 32);
}
