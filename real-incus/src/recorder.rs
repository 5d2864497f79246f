//! Runs one check of the ordered lifecycle: calls the operation, judges the result with the
//! scenario engine's matcher (the output schema included), records it and prints a progress line.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use incus_conformance::scenario::format::Expect;
use incus_conformance::scenario::matcher;
use incus_conformance::scenario::target::Target as _;
use serde_json::Value;

use crate::report::{Check, Outcome};
use crate::targets::{Target, Targets, ALL_SCOPES};

/// A copy of every check as it is recorded, so that an interrupted run still reports them.
pub(crate) type CheckSink = Arc<Mutex<Vec<Check>>>;

/// Every scope, as the targets take them.
pub(crate) fn all_scopes() -> Vec<String> {
    ALL_SCOPES.iter().map(|s| (*s).to_owned()).collect()
}

/// Judges `output` of `operation` against `expect` with the scenario engine's matcher: one line
/// per mismatch, joined.
pub(crate) fn judge(
    target: &Target,
    operation: &str,
    output: &Value,
    expect: &Expect,
) -> Result<(), String> {
    let problems = matcher::mismatches(expect, output, target.output_schema(operation).as_ref());
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Calls operations and keeps what happened.
pub(crate) struct Recorder<'a> {
    targets: &'a Targets,
    scopes: Vec<String>,
    /// Shown before each progress line (e.g. `fake: ` in the differential run).
    prefix: &'static str,
    sink: Option<CheckSink>,
    pub(crate) checks: Vec<Check>,
}

impl<'a> Recorder<'a> {
    pub(crate) fn new(
        targets: &'a Targets,
        prefix: &'static str,
        sink: Option<CheckSink>,
    ) -> Recorder<'a> {
        Recorder {
            targets,
            scopes: all_scopes(),
            prefix,
            sink,
            checks: Vec::new(),
        }
    }

    /// The targets this recorder calls.
    pub(crate) fn targets(&self) -> &'a Targets {
        self.targets
    }

    /// Runs a check with every scope granted; returns the output.
    pub(crate) async fn check(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        expect: Expect,
    ) -> Value {
        let target = &self.targets.standard;
        self.check_on(target, operation, name, input, expect).await
    }

    /// Runs a check over the connection with small stream bounds; returns the output.
    pub(crate) async fn check_small_streams(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        expect: Expect,
    ) -> Value {
        let target = &self.targets.small_streams;
        self.check_on(target, operation, name, input, expect).await
    }

    async fn check_on(
        &mut self,
        target: &Target,
        operation: &str,
        name: &str,
        input: Value,
        expect: Expect,
    ) -> Value {
        let scopes = self.scopes.clone();
        self.check_as(target, &scopes, operation, name, input, expect)
            .await
    }

    /// Runs a check on `target` as a caller holding `scopes`; returns the output.
    pub(crate) async fn check_as(
        &mut self,
        target: &Target,
        scopes: &[String],
        operation: &str,
        name: &str,
        input: Value,
        expect: Expect,
    ) -> Value {
        let (output, elapsed) = call_as(target, scopes, operation, input.clone()).await;
        self.record_external(operation, name, input, output.clone(), elapsed, expect);
        output
    }

    /// Records a check judged elsewhere (its verdict made of more than the result).
    pub(crate) fn record_judged(&mut self, check: Check) {
        self.record(check);
    }

    /// Judges and records a call's output (made here or elsewhere, e.g. concurrently).
    pub(crate) fn record_external(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        output: Value,
        elapsed: Duration,
        expect: Expect,
    ) {
        let verdict = judge(&self.targets.standard, operation, &output, &expect);
        self.record(judged(operation, name, input, output, elapsed, verdict));
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

    /// Prints the progress line of a judged check and keeps it.
    fn record(&mut self, check: Check) {
        let mark = if check.outcome == Outcome::Passed {
            "ok  "
        } else {
            "FAIL"
        };
        eprintln!(
            "  {mark}  {}{}: {} ({} ms)",
            self.prefix, check.operation, check.name, check.duration_ms
        );
        if let Some(problem) = &check.problem {
            eprintln!("        {problem}");
        }
        self.push(check);
    }
}

/// Calls `operation` on `target` as a caller holding `scopes`: the output and how long it took.
pub(crate) async fn call_as(
    target: &Target,
    scopes: &[String],
    operation: &str,
    input: Value,
) -> (Value, Duration) {
    let started = Instant::now();
    let output = target.call(operation, scopes, input).await;
    (output, started.elapsed())
}

/// A check of the report from a call and its verdict.
pub(crate) fn judged(
    operation: &str,
    name: &str,
    input: Value,
    output: Value,
    elapsed: Duration,
    verdict: Result<(), String>,
) -> Check {
    let (outcome, problem) = match verdict {
        Ok(()) => (Outcome::Passed, None),
        Err(problem) => (Outcome::Failed, Some(problem)),
    };
    Check {
        operation: operation.to_owned(),
        name: name.to_owned(),
        outcome,
        duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        input,
        output,
        problem,
    }
}
