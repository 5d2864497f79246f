//! Arbitrary JSON input: never a panic, always a result that matches the output schema, and
//! input that is refused is refused before any backend request.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::Value;

use super::property;
use super::session::with_session;
use super::session::Session;
use super::spec_table::{ERROR_KINDS, OPERATIONS};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// Error kinds that come from checks made before any backend request and before the host is
/// asked: the spec's kinds from `scope_missing` to `restricted_input`, in its order.
pub(crate) const REFUSED_BEFORE_BACKEND: &[&str] = ERROR_KINDS.split_at(7).0.split_at(1).1;

/// One property check per operation.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    OPERATIONS
        .iter()
        .map(|op| {
            let trial = format!(
                "results::match_output_schema::{}_arbitrary_input",
                op.short()
            );
            let name = trial.clone();
            with_session(trial, factory, move |session: &Session| {
                let scopes = [op.scope.to_owned()];
                property::check(&name, input(), |input| {
                    let called = catch_unwind(AssertUnwindSafe(|| {
                        session.call(op.name, &scopes, input.clone())
                    }))
                    .map_err(|_| format!("the call panicked on input {input}"))?;
                    if !called.result.is_object() {
                        return Err(called.failure("the result is not a JSON object"));
                    }
                    called.schema_valid()?;
                    match called.error_kind() {
                        Some(kind) if REFUSED_BEFORE_BACKEND.contains(&kind) => {
                            called.no_backend_request()
                        }
                        _ => Ok(()),
                    }
                })
            })
        })
        .collect()
}

/// Mostly objects with plausible keys, sometimes any JSON value.
pub(crate) fn input() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => object(json_value()),
        1 => json_value(),
    ]
}

fn object(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    btree_map(key(), values, 0..6).prop_map(|map| Value::Object(map.into_iter().collect()))
}

fn key() -> impl Strategy<Value = String> {
    let known = prop::sample::select(vec![
        "name",
        "project",
        "confirm",
        "limit",
        "config",
        "devices",
        "source",
        "command",
        "operation_id",
        "fingerprint",
        "instance",
        "snapshot",
        "pool",
        "type",
        "wait_seconds",
        "etag",
        "action",
        "stdin",
        "environment",
        "timeout_seconds",
        "profiles",
        "socket",
        "url",
    ])
    .prop_map(str::to_owned);
    prop_oneof![3 => known, 1 => "[a-z_.]{1,10}"]
}

/// Any JSON value, with bounded depth and size.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,24}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            object(inner),
        ]
    })
}
