//! Runs one check: calls the operation, validates the result against the operation's output schema,
//! compares it with what is expected, records it and prints a progress line.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use crate::operations::{Operations, ALL_SCOPES};
use crate::report::{Check, Outcome};

/// A test on a success result.
type Predicate = Box<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// What a check expects of a result (after schema validation).
pub(crate) enum Expect {
    /// A success result for which the predicate holds.
    Success(Predicate),
    /// An error of this kind (and, for `native`, this HTTP status).
    Error {
        kind: &'static str,
        http_status: Option<u16>,
    },
}

impl Expect {
    /// A success result satisfying `predicate`.
    pub(crate) fn ok(
        predicate: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Expect {
        Expect::Success(Box::new(predicate))
    }

    /// An error of kind `kind`.
    pub(crate) fn error(kind: &'static str) -> Expect {
        Expect::Error {
            kind,
            http_status: None,
        }
    }

    /// A `native` error with this HTTP status.
    pub(crate) fn native(status: u16) -> Expect {
        Expect::Error {
            kind: "native",
            http_status: Some(status),
        }
    }

    /// A mutation (or wait) result with this `status`.
    pub(crate) fn status(status: &'static str) -> Expect {
        Expect::ok(move |v| field_is(v, "/status", &Value::from(status)))
    }

    fn judge(&self, output: &Value) -> Result<(), String> {
        let error = output.get("error");
        match (self, error) {
            (Expect::Success(predicate), None) => predicate(output),
            (Expect::Success(_), Some(e)) => Err(format!("expected success, got error {}", e)),
            (Expect::Error { kind, .. }, None) => {
                Err(format!("expected error {kind}, got success"))
            }
            (Expect::Error { kind, http_status }, Some(e)) => {
                if e["kind"] != *kind {
                    return Err(format!("expected error {kind}, got {}", e["kind"]));
                }
                match http_status {
                    Some(s) if e["http_status"] != *s => Err(format!(
                        "expected http_status {s}, got {}",
                        e["http_status"]
                    )),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// The error shape every result may take (contract A), for operations without an output schema.
fn error_shape(output: &Value) -> Result<(), String> {
    const KEYS: &[&str] = &[
        "kind",
        "message",
        "http_status",
        "error_code",
        "pointer",
        "limit",
        "operation_id",
    ];
    let error = output
        .get("error")
        .and_then(Value::as_object)
        .filter(|_| output.as_object().is_some_and(|o| o.len() == 1))
        .ok_or("expected an error object as the only key")?;
    if !error.get("kind").is_some_and(Value::is_string)
        || !error.get("message").is_some_and(Value::is_string)
    {
        return Err("the error lacks a string kind or message".into());
    }
    match error.keys().find(|k| !KEYS.contains(&k.as_str())) {
        Some(extra) => Err(format!("the error has an unexpected key {extra:?}")),
        None => Ok(()),
    }
}

/// `output[pointer] == wanted`, or a message saying what was there.
pub(crate) fn field_is(output: &Value, pointer: &str, wanted: &Value) -> Result<(), String> {
    match output.pointer(pointer) {
        Some(found) if found == wanted => Ok(()),
        found => Err(format!(
            "{pointer}: expected {wanted}, got {}",
            found.unwrap_or(&Value::Null)
        )),
    }
}

/// True when `output.items` holds an object whose `key` equals `value`.
pub(crate) fn items_contain(output: &Value, key: &str, value: &str) -> Result<(), String> {
    let items = output["items"].as_array().ok_or("no items list")?;
    if items.iter().any(|i| i[key] == value) {
        Ok(())
    } else {
        Err(format!(
            "no item with {key} = {value:?} among {} items",
            items.len()
        ))
    }
}

/// A copy of every check as it is recorded, so that an interrupted run still reports them.
pub(crate) type CheckSink = Arc<Mutex<Vec<Check>>>;

/// Calls operations and keeps what happened.
pub(crate) struct Recorder<'a> {
    ops: &'a dyn Operations,
    schemas: HashMap<String, Value>,
    /// Shown before each progress line (e.g. `fake: ` in the differential run).
    prefix: &'static str,
    sink: Option<CheckSink>,
    pub(crate) checks: Vec<Check>,
}

impl<'a> Recorder<'a> {
    pub(crate) fn new(
        ops: &'a dyn Operations,
        prefix: &'static str,
        sink: Option<CheckSink>,
    ) -> Recorder<'a> {
        let schemas = ops
            .catalogue()
            .into_iter()
            .map(|info| (info.name, info.output_schema))
            .collect();
        Recorder {
            ops,
            schemas,
            prefix,
            sink,
            checks: Vec::new(),
        }
    }

    /// The operations this recorder calls.
    pub(crate) fn operations(&self) -> &'a dyn Operations {
        self.ops
    }

    /// Runs a check with every scope granted; returns the output.
    pub(crate) async fn check(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        expect: Expect,
    ) -> Value {
        self.check_scoped(operation, name, input, ALL_SCOPES, expect)
            .await
    }

    /// Runs a check with the given scopes; returns the output.
    pub(crate) async fn check_scoped(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        scopes: &[&str],
        expect: Expect,
    ) -> Value {
        let started = Instant::now();
        let output = self.ops.run(operation, input.clone(), scopes).await;
        let millis = started.elapsed().as_millis();
        self.record_external(operation, name, input, output.clone(), millis, expect);
        output
    }

    /// Runs a check over the connection with small stream bounds; returns the output.
    pub(crate) async fn check_small_streams(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        expect: Expect,
    ) -> Value {
        let started = Instant::now();
        let output = self
            .ops
            .run_small_streams(operation, input.clone(), ALL_SCOPES)
            .await;
        let millis = started.elapsed().as_millis();
        self.record_external(operation, name, input, output.clone(), millis, expect);
        output
    }

    /// Judges and records a call's output (made here or elsewhere, e.g. concurrently).
    pub(crate) fn record_external(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        output: Value,
        millis: u128,
        expect: Expect,
    ) {
        let verdict = self
            .validate(operation, &output)
            .and_then(|()| expect.judge(&output));
        self.record(operation, name, input, output, millis, verdict);
    }

    /// Records a check that could not run.
    pub(crate) fn skip(&mut self, operation: &str, name: &str, reason: &str) {
        eprintln!("  skip  {}{operation}: {name} ({reason})", self.prefix);
        self.push(Check {
            operation: operation.to_owned(),
            name: name.to_owned(),
            outcome: Outcome::Skipped,
            duration_ms: 0,
            input: Value::Null,
            output: Value::Null,
            problem: Some(reason.to_owned()),
        });
    }

    fn push(&mut self, check: Check) {
        if let Some(sink) = &self.sink {
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(check.clone());
        }
        self.checks.push(check);
    }

    fn validate(&self, operation: &str, output: &Value) -> Result<(), String> {
        if !output.is_object() {
            return Err("the result is not a JSON object".into());
        }
        let Some(schema) = self.schemas.get(operation) else {
            // Not a catalogue operation (e.g. the unknown-operation check): only the error shape applies.
            return error_shape(output);
        };
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| format!("the output schema does not compile: {e}"))?;
        let problems: Vec<String> = validator
            .iter_errors(output)
            .take(3)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the result does not match the output schema: {}",
                problems.join("; ")
            ))
        }
    }

    fn record(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        output: Value,
        millis: u128,
        verdict: Result<(), String>,
    ) {
        let duration_ms = u64::try_from(millis).unwrap_or(u64::MAX);
        let (outcome, problem) = match verdict {
            Ok(()) => (Outcome::Passed, None),
            Err(problem) => (Outcome::Failed, Some(problem)),
        };
        let mark = if outcome == Outcome::Passed {
            "ok  "
        } else {
            "FAIL"
        };
        eprintln!(
            "  {mark}  {}{operation}: {name} ({duration_ms} ms)",
            self.prefix
        );
        if let Some(problem) = &problem {
            eprintln!("        {problem}");
        }
        self.push(Check {
            operation: operation.to_owned(),
            name: name.to_owned(),
            outcome,
            duration_ms,
            input,
            output,
            problem,
        });
    }
}
