//! Mutation statuses under faults: whatever goes wrong, at whatever point of a mutation, the
//! status says exactly what was observed, and the mutating request is sent once, never resent.
//!
//! One property trial per mutation: each case starts a fresh fake with one fault rule on the
//! mutating request (or on the wait that follows it), prepares the resource through the
//! operations, makes the call and checks the status against the fault.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::property;
use super::session::{Called, Session};
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;

/// A mutation under test: how to prepare it, the native request it makes, and the call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mutation {
    pub(crate) operation: &'static str,
    scope: &'static str,
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    /// Whether the native request creates an operation (everything but update's PATCH).
    pub(crate) async_operation: bool,
}

pub(crate) const MUTATIONS: &[Mutation] = &[
    m(
        "incus_instance_create",
        "incus.write",
        "POST",
        "/1.0/instances",
        true,
    ),
    m(
        "incus_instance_delete",
        "incus.delete",
        "DELETE",
        "/1.0/instances/web",
        true,
    ),
    m(
        "incus_instance_snapshot_create",
        "incus.write",
        "POST",
        "/1.0/instances/web/snapshots",
        true,
    ),
    m(
        "incus_instance_snapshot_delete",
        "incus.delete",
        "DELETE",
        "/1.0/instances/web/snapshots/snap0",
        true,
    ),
    m(
        "incus_instance_snapshot_restore",
        "incus.delete",
        "PUT",
        "/1.0/instances/web",
        true,
    ),
    m(
        "incus_instance_state_update",
        "incus.write",
        "PUT",
        "/1.0/instances/web/state",
        true,
    ),
    m(
        "incus_image_delete",
        "incus.delete",
        "DELETE",
        "/1.0/images/*",
        true,
    ),
    m(
        "incus_instance_update",
        "incus.write",
        "PATCH",
        "/1.0/instances/web",
        false,
    ),
];

const fn m(
    operation: &'static str,
    scope: &'static str,
    method: &'static str,
    path: &'static str,
    async_operation: bool,
) -> Mutation {
    Mutation {
        operation,
        scope,
        method,
        path,
        async_operation,
    }
}

/// The faults, by the fake's rule `kind`, and what each one must produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    /// `status: uncertain`: the request may have been applied, no response was decoded.
    Uncertain,
    /// A `native` error with this HTTP status.
    Native(u16),
    /// `status: failed`: the operation's failure was observed.
    Failed,
    /// `status: running`: the outcome was not observed within the wait.
    Running,
}

/// Every fault rule for `mutation` and what it must produce: faults on the mutating request,
/// on the operation it creates, and on the wait that follows its acceptance.
pub(crate) fn faults(mutation: Mutation) -> Vec<(Value, Expected)> {
    let on_request = |fault: Value| json!({"method": mutation.method, "path": mutation.path, "which": {"nth": 1}, "fault": fault});
    let on_wait = |fault: Value| json!({"method": "GET", "path": "/1.0/operations/*/wait", "which": {"nth": 1}, "fault": fault});
    let transport = [
        json!({"kind": "close_before_apply"}),
        json!({"kind": "close_after_apply"}),
        json!({"kind": "reset"}),
        json!({"kind": "garbage_body"}),
        json!({"kind": "truncated_body"}),
    ];
    let mut faults: Vec<(Value, Expected)> = transport
        .iter()
        .map(|fault| (on_request(fault.clone()), Expected::Uncertain))
        .collect();
    for status in [500, 409] {
        let fault = json!({"kind": "error", "status": status, "message": "injected"});
        faults.push((on_request(fault), Expected::Native(status)));
    }
    if mutation.async_operation {
        let fail = json!({"kind": "operation_fail", "message": "injected"});
        faults.push((on_request(fail), Expected::Failed));
        let never = json!({"kind": "operation_never_finish"});
        faults.push((on_request(never), Expected::Running));
        // Accepted, then the wait breaks: the outcome was not observed.
        for fault in transport
            .iter()
            .chain([&json!({"kind": "error", "status": 500, "message": "injected"})])
        {
            faults.push((on_wait(fault.clone()), Expected::Running));
        }
    }
    faults
}

/// One property trial per mutation, and one for exec.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks: Vec<Check> = MUTATIONS
        .iter()
        .map(|mutation| {
            let short = mutation
                .operation
                .strip_prefix("incus_")
                .unwrap_or(mutation.operation);
            let trial = format!("mutation::statuses::{short}_under_any_fault");
            let name = trial.clone();
            let factory = Arc::clone(factory);
            Check::new(trial, move || {
                let cases = prop::sample::select(faults(*mutation));
                property::check(&name, cases, |(rule, expected)| {
                    fault_case(&factory, *mutation, &rule, expected)
                })
            })
        })
        .collect();
    checks.push(exec_faults(factory));
    checks
}

/// An exec whose request may have been sent but got no decodable answer is `uncertain`, with
/// no exit code and no operation, and is not resent.
fn exec_faults(factory: &Arc<dyn TargetFactory>) -> Check {
    let factory = Arc::clone(factory);
    Check::new(
        "mutation::statuses::instance_exec_under_any_transport_fault",
        move || {
            let session = Session::start(&factory, &FakeSetup::default())?;
            super::exec_output::start_instance(&session)?;
            for kind in TRANSPORT_FAULTS {
                let (called, sent) = exec_case(&session, kind)?;
                exec_verdict(&called, sent, kind)?;
            }
            Ok(())
        },
    )
}

/// Installs a transport fault `kind` on the next exec request of the running instance `web`
/// and runs one exec: the call, and how many times the exec request was sent.
pub(crate) fn exec_case(session: &Session, kind: &str) -> Result<(Called, usize), String> {
    let rule = json!({"method": "POST", "path": "/1.0/instances/web/exec", "which": {"nth": 1}, "fault": {"kind": kind}});
    session.add_fault(&rule)?;
    let input = json!({"name": "web", "command": ["true"]});
    let called = session.call("incus_instance_exec", &["incus.exec".to_owned()], input);
    let sent = called.sent("POST", "/1.0/instances/*/exec").unwrap_or(1);
    Ok((called, sent))
}

/// An exec under a transport fault is `uncertain`, without exit code or operation, sent once.
pub(crate) fn exec_verdict(called: &Called, sent: usize, kind: &str) -> Result<(), String> {
    let context = |problem: &str| called.failure(&format!("with fault {kind}: {problem}"));
    let result = &called.result;
    if result.get("status") != Some(&json!("uncertain"))
        || result.get("exit_code") != Some(&Value::Null)
        || result.get("operation_id") != Some(&Value::Null)
    {
        return Err(context(
            "expected status uncertain without exit code or operation",
        ));
    }
    if sent != 1 {
        return Err(context(&format!("the exec request was sent {sent} times")));
    }
    called.schema_valid().map_err(|p| context(&p))
}

/// Faults after which the client cannot know whether its request was applied.
pub(crate) const TRANSPORT_FAULTS: [&str; 5] = [
    "close_before_apply",
    "close_after_apply",
    "reset",
    "garbage_body",
    "truncated_body",
];

/// Every rule this suite installs, for the test that the fake accepts them.
#[cfg(test)]
pub(crate) fn setups() -> Vec<FakeSetup> {
    MUTATIONS
        .iter()
        .flat_map(|mutation| faults(*mutation))
        .map(|(rule, _)| FakeSetup {
            seed: None,
            faults: vec![rule],
        })
        .collect()
}

/// Prepares the resource, installs `rule`, makes the call and checks the status.
fn fault_case(
    factory: &Arc<dyn TargetFactory>,
    mutation: Mutation,
    rule: &Value,
    expected: Expected,
) -> Result<(), String> {
    let (called, sent) = observe(factory, mutation, rule)?;
    verdict(&called, sent, rule, expected)
}

/// Prepares the resource on a fresh target, installs `rule` and makes the call: the call, and
/// how many times the mutating request was sent.
pub(crate) fn observe(
    factory: &Arc<dyn TargetFactory>,
    mutation: Mutation,
    rule: &Value,
) -> Result<(Called, usize), String> {
    let session = Session::start(factory, &FakeSetup::default())?;
    observe_on(&session, mutation, std::slice::from_ref(rule))
}

/// As [`observe`], on a started session and with several rules, installed in order.
pub(crate) fn observe_on(
    session: &Session,
    mutation: Mutation,
    rules: &[Value],
) -> Result<(Called, usize), String> {
    let mut input = prepare(session, mutation)?;
    for rule in rules {
        session.add_fault(rule)?;
        if rule.pointer("/fault/kind") == Some(&json!("operation_never_finish")) {
            // The outcome can never be observed: do not spend the default wait on it.
            input["wait_seconds"] = json!(0);
        }
    }
    let called = session.call(mutation.operation, &[mutation.scope.to_owned()], input);
    let sent = called.sent(mutation.method, mutation.path).unwrap_or(1);
    Ok((called, sent))
}

/// The status says what the fault allows to be observed, the mutating request was sent
/// exactly once, and the result matches the output schema.
pub(crate) fn verdict(
    called: &Called,
    sent: usize,
    rule: &Value,
    expected: Expected,
) -> Result<(), String> {
    let context = |problem: &str| called.failure(&format!("with fault rule {rule}: {problem}"));
    check_status(called, expected).map_err(|p| context(&p))?;
    if sent != 1 {
        return Err(context(&format!(
            "the mutating request was sent {sent} times, expected exactly once"
        )));
    }
    called.schema_valid().map_err(|p| context(&p))
}

fn check_status(called: &Called, expected: Expected) -> Result<(), String> {
    let result = &called.result;
    let status = result.get("status").and_then(Value::as_str);
    match expected {
        Expected::Uncertain if status == Some("uncertain") => Ok(()),
        Expected::Failed if status == Some("failed") => Ok(()),
        Expected::Running if status == Some("running") => {
            if result.get("operation_id").is_some_and(Value::is_string) {
                Ok(())
            } else {
                Err("running without the operation identity".into())
            }
        }
        Expected::Native(code)
            if called.error_kind() == Some("native")
                && result.pointer("/error/http_status") == Some(&json!(code)) =>
        {
            Ok(())
        }
        _ => Err(format!("expected {expected:?}")),
    }
}

/// Creates what the mutation acts on; returns the mutation's input.
fn prepare(session: &Session, mutation: Mutation) -> Result<Value, String> {
    let create = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}});
    let write = ["incus.write".to_owned()];
    let step = |operation: &str, scopes: &[String], input: Value| -> Result<Called, String> {
        let called = session.call(operation, scopes, input);
        if called.result.get("error").is_some()
            || called
                .result
                .get("status")
                .is_some_and(|s| s != "completed")
        {
            return Err(called.failure(&format!(
                "preparing {}: {operation} did not complete",
                mutation.operation
            )));
        }
        Ok(called)
    };
    let snapshot = json!({"instance": "web", "snapshot": "snap0"});
    Ok(match mutation.operation {
        "incus_instance_create" => create,
        "incus_image_delete" => {
            let listed = step("incus_image_list", &["incus.read".to_owned()], json!({}))?;
            let fingerprint = listed
                .result
                .pointer("/items/0/fingerprint")
                .cloned()
                .unwrap_or_default();
            json!({"fingerprint": fingerprint, "confirm": fingerprint})
        }
        other => {
            step("incus_instance_create", &write, create)?;
            match other {
                "incus_instance_delete" => json!({"name": "web", "confirm": "web"}),
                "incus_instance_snapshot_create" => snapshot,
                "incus_instance_state_update" => json!({"name": "web", "action": "start"}),
                "incus_instance_update" => json!({"name": "web", "description": "changed"}),
                _ => {
                    step("incus_instance_snapshot_create", &write, snapshot.clone())?;
                    let mut input = snapshot;
                    input["confirm"] = json!("web/snap0");
                    input
                }
            }
        }
    })
}
