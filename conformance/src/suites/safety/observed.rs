//! `safety::*` trials: results say exactly what was observed when a fault hides the end of a
//! mutation or an exec.
//!
//! Each trial builds the fault from the fake's rules (operation faults, transport faults, stall)
//! and asserts the status, the fields that carry the outcome, and the journal: the mutating or
//! exec request reached the backend exactly once, and the operation was read as documented.
//!
//! What a wait answers for a failed operation depends on the Incus line, and the trials follow
//! the server's API extensions (never its version): Incus 6.0's wait answers an error envelope
//! without the operation, so the core reads the operation back, and a read that fails leaves
//! `operation` null; from [`WAIT_ANSWERS_THE_OPERATION`] (Incus 7.0) the wait answers the failed
//! operation itself, so the result carries that final object and the operation is not read.
//! Trials whose fault is a stalled read run on a connection with a 2 s request timeout (the
//! reference host), so that a stall costs 2 s, not the default 30 s.

use std::sync::Arc;
use std::time::Duration;

use incus_operations::{Connection, Endpoint};
use serde_json::{json, Value};

use fake_incus::WAIT_ANSWERS_THE_OPERATION;

use super::super::exec_output::start_instance;
use super::super::host_target::{HostFactory, HostTargets};
use super::super::mutation_faults::{self, Mutation, MUTATIONS, TRANSPORT_FAULTS};
use super::super::session::{with_session, Called, Session};
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;
use crate::ReferenceHost;

/// How the server's wait reports an operation that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureReport {
    /// An error envelope without the operation (Incus 6.0): the core reads the operation back.
    Envelope,
    /// The failed operation itself ([`WAIT_ANSWERS_THE_OPERATION`], Incus 7.0): nothing to read.
    Operation,
}

impl FailureReport {
    /// What the session's server does, by its API extensions.
    fn of(session: &Session) -> Result<Self, String> {
        Ok(
            if session.server_has_extension(WAIT_ANSWERS_THE_OPERATION)? {
                Self::Operation
            } else {
                Self::Envelope
            },
        )
    }

    /// How many times a call reads the failed operation (`GET /1.0/operations/{id}`).
    fn reads(self) -> usize {
        match self {
            Self::Envelope => 1,
            Self::Operation => 0,
        }
    }

    /// The `operation` a result carries: null where the read back failed, else the final
    /// object the wait answered; `Err` with what is wrong.
    fn check_operation(self, operation: Option<&Value>, id: &str) -> Result<(), String> {
        match self {
            Self::Envelope if operation == Some(&Value::Null) => Ok(()),
            Self::Envelope => Err("expected operation null (the read back failed)".to_owned()),
            Self::Operation => {
                let operation = operation.unwrap_or(&Value::Null);
                let is_the_failure = operation["id"] == json!(id)
                    && operation["status"] == json!("Failure")
                    && operation["err"] == json!(FAILURE);
                if is_the_failure {
                    Ok(())
                } else {
                    Err(format!(
                        "expected the failed operation the wait answered (id {id}, status Failure, err {FAILURE:?})"
                    ))
                }
            }
        }
    }
}

/// The failure the faulted operations end with.
const FAILURE: &str = "disk full";
/// The request timeout of the short connection: a stalled read costs this long.
const SHORT_TIMEOUT: Duration = Duration::from_secs(2);

/// The trials of this group.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        Check::new(
            "safety::observed_failure::every_async_mutation_is_failed_when_the_read_back_breaks",
            {
                let factory = Arc::clone(factory);
                move || failure_with_unreadable_operation(&factory, &[reset(), refused()])
            },
        ),
        Check::new(
            "safety::observed_failure::every_async_mutation_and_wait_is_failed_when_the_read_back_stalls",
            || failure_with_unreadable_operation(&short_factory(), &[stalled()]),
        ),
        exec_check(
            factory,
            "safety::exec_failed_operation::an_operation_that_fails_without_an_exit_code",
            exec_operation_fails,
        ),
        Check::new(
            "safety::exec_failed_operation::a_failure_the_wait_reports_when_the_read_back_stalls",
            || {
                let session = Session::start(&short_factory(), &FakeSetup::default())?;
                start_instance(&session)?;
                exec_failure_unreadable(&session)
            },
        ),
        exec_check(
            factory,
            "safety::exec_kill_found_it_exiting::an_operation_that_outlasts_the_command",
            exec_operation_outlasts_the_command,
        ),
        exec_check(
            factory,
            "safety::exec_kill_found_it_exiting::a_command_the_kill_ends_is_timed_out",
            exec_killed_command,
        ),
        exec_check(
            factory,
            "safety::exec_end_awaited::an_operation_that_finishes_during_the_wait",
            exec_operation_finishes_during_the_wait,
        ),
        exec_check(
            factory,
            "safety::exec_no_early_kill::a_wait_that_breaks_while_the_command_runs",
            exec_wait_breaks,
        ),
    ]
}

/// A check on a running instance `web`.
fn exec_check(
    factory: &Arc<dyn TargetFactory>,
    name: &str,
    body: fn(&Session) -> Result<(), String>,
) -> Check {
    with_session(name.to_owned(), factory, move |session| {
        start_instance(session)?;
        body(session)
    })
}

/// The reference host on a connection whose requests time out after [`SHORT_TIMEOUT`].
fn short_factory() -> Arc<dyn TargetFactory> {
    let hosts: HostFactory<ReferenceHost> =
        Arc::new(|connection| (ReferenceHost::new(connection), ()));
    Arc::new(HostTargets::new(hosts).connection(Arc::new(|socket| {
        Connection::builder(Endpoint::unix(socket))
            .timeout(SHORT_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot build the short connection: {e}"))
    })))
}

/// The read of one operation (`GET /1.0/operations/{id}`, not its wait) answers with `fault`.
fn on_read(fault: Value) -> Value {
    json!({"method": "GET", "path": "/1.0/operations/*", "fault": fault})
}

fn stalled() -> Value {
    on_read(json!({"kind": "stall"}))
}

fn reset() -> Value {
    on_read(json!({"kind": "reset"}))
}

fn refused() -> Value {
    on_read(json!({"kind": "error", "status": 500, "message": "Server isn't ready yet"}))
}

/// The operation `mutation` creates fails with [`FAILURE`].
fn failing(mutation: Mutation) -> Value {
    json!({"method": mutation.method, "path": mutation.path, "which": {"nth": 1},
           "fault": {"kind": "operation_fail", "message": FAILURE}})
}

/// Every async mutation whose operation fails, the failure reported by the wait and the read
/// that follows answering with each of `reads` in turn: `failed` with the failure, the mutation
/// sent once, and `operation` as the server's wait allows ([`FailureReport`]): null after the
/// one read back that failed, or the failed operation the wait answered, unread. Then
/// `incus_operation_wait` on the same operation says the same.
fn failure_with_unreadable_operation(
    factory: &Arc<dyn TargetFactory>,
    reads: &[Value],
) -> Result<(), String> {
    // Each mutation has a fake of its own, so they are checked side by side: on real time (an
    // adapter over the wire, `--real-time`) a stalled read costs the request bound, once for
    // all of them rather than once each.
    let mutations: Vec<(Mutation, Value)> = MUTATIONS
        .iter()
        .filter(|m| m.async_operation)
        .copied()
        .zip(reads.iter().cycle().cloned())
        .collect();
    std::thread::scope(|scope| {
        let checks: Vec<_> = mutations
            .into_iter()
            .map(|(mutation, read)| {
                scope.spawn(move || failure_with_unreadable_read_back(factory, mutation, read))
            })
            .collect();
        checks
            .into_iter()
            .map(|check| {
                check
                    .join()
                    .unwrap_or_else(|_| Err("the check of a mutation panicked".into()))
            })
            .collect::<Result<Vec<()>, String>>()
    })?;
    Ok(())
}

/// One mutation of [`failure_with_unreadable_operation`], with `read` answering the read.
fn failure_with_unreadable_read_back(
    factory: &Arc<dyn TargetFactory>,
    mutation: Mutation,
    read: Value,
) -> Result<(), String> {
    let session = Session::start(factory, &FakeSetup::default())?;
    let report = FailureReport::of(&session)?;
    let rules = [failing(mutation), read];
    let (called, sent) = mutation_faults::observe_on(&session, mutation, &rules)?;
    let context = |problem: &str| called.failure(&format!("with {rules:?}: {problem}"));
    reported_failure(&called, report).map_err(|p| context(&p))?;
    if sent != 1 {
        return Err(context(&format!(
            "the mutating request was sent {sent} times"
        )));
    }
    let id = operation_id(&called)?;
    read_as_reported(&called, &id, report).map_err(|p| context(&p))?;
    let wait = json!({"operation_id": id, "wait_seconds": 1});
    let waited = session.call("incus_operation_wait", &["incus.read".to_owned()], wait);
    reported_failure(&waited, report)?;
    read_as_reported(&waited, &id, report)?;
    if waited.sent(mutation.method, mutation.path) != Some(0) {
        return Err(waited.failure("the wait resent the mutation"));
    }
    Ok(())
}

/// `failed`, the failure as `wait_error`, the operation as `report` allows, schema-valid.
fn reported_failure(called: &Called, report: FailureReport) -> Result<(), String> {
    let result = &called.result;
    if result.get("status") != Some(&json!("failed"))
        || result.get("wait_error") != Some(&json!(FAILURE))
    {
        return Err(called.failure(&format!(
            "expected status failed and wait_error {FAILURE:?}"
        )));
    }
    let id = operation_id(called)?;
    report
        .check_operation(result.get("operation"), &id)
        .map_err(|p| called.failure(&p))?;
    called.schema_valid()
}

fn operation_id(called: &Called) -> Result<String, String> {
    called
        .result
        .get("operation_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| called.failure("expected the operation identity"))
}

/// During the call, the operation was waited on once and read as often as `report` needs
/// (once after an error envelope, never after the failed operation itself).
fn read_as_reported(called: &Called, id: &str, report: FailureReport) -> Result<(), String> {
    let read = format!("/1.0/operations/{id}");
    for (path, what, expected) in [
        (format!("{read}/wait"), "waited on", 1),
        (read, "read", report.reads()),
    ] {
        let times = called.sent("GET", &path).unwrap_or(expected);
        if times != expected {
            return Err(called.failure(&format!(
                "the operation was {what} {times} times, not {expected}"
            )));
        }
    }
    Ok(())
}

/// Runs `command` on `web` with the exec scope: the call and how many exec requests it sent.
fn exec(session: &Session, command: &[&str], timeout_seconds: u64) -> (Called, usize) {
    let input = json!({"name": "web", "command": command, "timeout_seconds": timeout_seconds});
    let called = session.call("incus_instance_exec", &["incus.exec".to_owned()], input);
    let sent = called.sent("POST", "/1.0/instances/web/exec").unwrap_or(1);
    (called, sent)
}

/// The result has these values at these pointers, is schema-valid, and the exec was sent once.
fn expect(called: &Called, sent: usize, expected: &[(&str, Value)]) -> Result<(), String> {
    for (pointer, value) in expected {
        if called.result.pointer(pointer) != Some(value) {
            return Err(called.failure(&format!("expected {pointer} = {value}")));
        }
    }
    if sent != 1 {
        return Err(called.failure(&format!("the exec request was sent {sent} times")));
    }
    called.schema_valid()
}

fn install(session: &Session, fault: Value) -> Result<(), String> {
    session.add_fault(&json!({"method": "POST", "path": "/1.0/instances/web/exec",
                              "which": {"nth": 1}, "fault": fault}))
}

/// The exec's operation fails without an exit code: `failed`, Incus's error as the reason, the
/// final operation, no exit code.
fn exec_operation_fails(session: &Session) -> Result<(), String> {
    install(
        session,
        json!({"kind": "operation_fail", "message": FAILURE}),
    )?;
    let (called, sent) = exec(session, &["echo", "hi"], 10);
    expect(
        &called,
        sent,
        &[
            ("/status", json!("failed")),
            ("/exit_code", Value::Null),
            ("/reason", json!(FAILURE)),
            ("/operation/status", json!("Failure")),
        ],
    )
}

/// The wait reports the failure and the read that follows stalls: still `failed` with the
/// reason, and `operation` null rather than the object that said `Running`; where the wait
/// answers the failed operation itself, that object, and no read.
fn exec_failure_unreadable(session: &Session) -> Result<(), String> {
    let report = FailureReport::of(session)?;
    install(
        session,
        json!({"kind": "operation_fail", "message": FAILURE}),
    )?;
    session.add_fault(&stalled())?;
    let (called, sent) = exec(session, &["echo", "hi"], 10);
    expect(
        &called,
        sent,
        &[
            ("/status", json!("failed")),
            ("/exit_code", Value::Null),
            ("/reason", json!(FAILURE)),
        ],
    )?;
    let id = operation_id(&called)?;
    report
        .check_operation(called.result.get("operation"), &id)
        .map_err(|p| called.failure(&p))?;
    let reads = called.sent("GET", &format!("/1.0/operations/{id}"));
    if reads != Some(report.reads()) {
        return Err(called.failure(&format!(
            "expected the operation to be read {} times, not {reads:?}",
            report.reads()
        )));
    }
    Ok(())
}

/// The operation ends 2.5 s after the command exited with 3, past the 1 s duration: `SIGKILL`
/// is sent at the duration, but the exit observed is the command's own: `completed`, 3.
fn exec_operation_outlasts_the_command(session: &Session) -> Result<(), String> {
    install(session, json!({"kind": "exec_exit_after", "ms": 2500}))?;
    let (called, sent) = exec(session, &["sh", "-c", "echo hi; exit 3"], 1);
    expect(
        &called,
        sent,
        &[
            ("/status", json!("completed")),
            ("/exit_code", json!(3)),
            ("/stdout/data", json!("hi\n")),
        ],
    )
}

/// The complement: a command that the kill at the duration ends (137) is `timed_out`.
fn exec_killed_command(session: &Session) -> Result<(), String> {
    let (called, sent) = exec(session, &["fake-hang"], 1);
    expect(
        &called,
        sent,
        &[("/status", json!("timed_out")), ("/exit_code", json!(137))],
    )
}

/// The operation runs only while a wait on it is in flight: the exec waits from the start, so
/// the command runs and its own exit is reported.
fn exec_operation_finishes_during_the_wait(session: &Session) -> Result<(), String> {
    install(session, json!({"kind": "operation_finish_during_wait"}))?;
    let (called, sent) = exec(session, &["sh", "-c", "echo hi; exit 4"], 10);
    expect(
        &called,
        sent,
        &[
            ("/status", json!("completed")),
            ("/exit_code", json!(4)),
            ("/stdout/data", json!("hi\n")),
        ],
    )
}

/// The first wait on the exec's operation breaks (each transport fault, and a 500): the exec
/// asks again and reports the command's own exit, well before its 10 s duration.
fn exec_wait_breaks(session: &Session) -> Result<(), String> {
    let faults = TRANSPORT_FAULTS
        .iter()
        .map(|kind| json!({"kind": kind}))
        .chain([json!({"kind": "error", "status": 500, "message": "injected"})]);
    for fault in faults {
        session.add_fault(
            &json!({"method": "GET", "path": "/1.0/operations/*/wait", "which": {"nth": 1}, "fault": fault}),
        )?;
        let (called, sent) = exec(session, &["sh", "-c", "sleep 0.3; echo done"], 10);
        expect(
            &called,
            sent,
            &[
                ("/status", json!("completed")),
                ("/exit_code", json!(0)),
                ("/stdout/data", json!("done\n")),
            ],
        )
        .map_err(|p| format!("with the first wait answering {fault}: {p}"))?;
        let took = called.result["duration_ms"].as_u64().unwrap_or(u64::MAX);
        if took >= 10_000 {
            return Err(called.failure("the exec was held to its duration"));
        }
    }
    Ok(())
}
