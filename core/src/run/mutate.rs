//! Mutations (one native request, then a bounded wait) and `incus_operation_wait`.
//!
//! Statuses mean exactly what the spec says:
//! - `completed` / `failed`: the native outcome was observed (a final operation object, or, on a
//!   standalone server, the wait's failure envelope: see [`Client::wait_failure_is_outcome`]);
//! - `running`: the outcome was not observed within the wait, including when the local wait
//!   deadline passed (which never cancels anything);
//! - `uncertain`: the request may have been accepted but no response was decoded.
//!
//! A mutation is sent once and never resent. A native rejection before acceptance is a `native`
//! error; a request that surely was not sent is a `transport` or `timeout` error.
//!
//! The effective server-side wait is `min(wait_seconds, floor(timeout / 1000) - 1)` (never
//! below 0), reported as `waited_seconds`, so that the wait ends before the request's own bound.
use std::future::Future;

use serde_json::{json, Value};

use super::call::Call;
use super::input;
use super::output::Success;
use super::results::{read_error, uncertain_or_error, RunError, Status, Uncertain};
use crate::client::{effective_wait, is_final, Accepted, Client, ClientError, WaitOutcome};

/// The wait endpoint's text for "the operation is still running".
const DEADLINE_EXCEEDED: &str = "context deadline exceeded";

/// What a wait observed.
#[derive(Clone)]
struct Observed {
    status: Status,
    operation: Option<Value>,
    wait_error: Option<String>,
}

/// A mutation: send its one native request once, then wait up to the effective wait.
pub(crate) async fn mutation(
    call: &Call<'_>,
    wait_seconds: u64,
    send: impl Future<Output = Result<Accepted, ClientError>>,
) -> Result<Success, RunError> {
    call.progress.record(
        uncertain(Uncertain {
            reason: String::new(),
        }),
        "wait_error",
    );
    let accepted = match send.await {
        Ok(accepted) => accepted,
        Err(error) => return Ok(Success::Object(uncertain(uncertain_or_error(error)?))),
    };
    let Accepted { id, operation } = accepted;
    let waited = effective(call, wait_seconds);
    record_running(call, &id, Some(operation.clone()), waited);
    let observed = match call
        .client
        .get_operation_wait(&call.project, &id, waited)
        .await
    {
        Ok(outcome) => observe(call, &id, waited, outcome, Some(operation)).await,
        // Accepted, but the outcome was not observed: a local deadline or a broken wait never
        // cancels anything, and nothing is resent.
        Err(error) => Observed {
            status: Status::Running,
            operation: Some(operation),
            wait_error: Some(error.to_string()),
        },
    };
    Ok(Success::Object(mutation_result(&id, observed, waited)))
}

/// `incus_operation_wait`: a bounded wait on an existing operation.
pub(crate) async fn wait(
    call: &Call<'_>,
    input: input::OperationWait,
) -> Result<Success, RunError> {
    let id = input.operation_id;
    let waited = effective(call, input.wait_seconds);
    record_running(call, &id, None, waited);
    let observed = match call
        .client
        .get_operation_wait(&call.project, &id, waited)
        .await
    {
        Ok(outcome) => observe(call, &id, waited, outcome, None).await,
        // The local deadline passed before the server-side wait ended: not observed.
        Err(error @ ClientError::Timeout { .. }) => Observed {
            status: Status::Running,
            operation: None,
            wait_error: Some(error.to_string()),
        },
        Err(error) => return Err(read_error(error)),
    };
    Ok(Success::Object(mutation_result(&id, observed, waited)))
}

/// From now on, a call cut by its bound reports the operation as `running` (not observed).
fn record_running(call: &Call<'_>, id: &str, operation: Option<Value>, waited: u64) {
    let observed = Observed {
        status: Status::Running,
        operation,
        wait_error: None,
    };
    call.progress
        .record(mutation_result(id, observed, waited), "wait_error");
}

/// `min(wait_seconds, floor(timeout / 1000) - 1)`, never below 0.
fn effective(call: &Call<'_>, wait_seconds: u64) -> u64 {
    effective_wait(wait_seconds, call.client.connection().timeout())
}

/// What the wait observed: the final operation, its failure, or nothing yet.
async fn observe(
    call: &Call<'_>,
    id: &str,
    waited: u64,
    outcome: WaitOutcome,
    last_seen: Option<Value>,
) -> Observed {
    match outcome {
        WaitOutcome::Final(operation) => final_status(operation),
        WaitOutcome::Failed { message, .. } => {
            // The failure envelope does not carry the operation; Incus keeps it a few seconds,
            // so it is read back once (a read; the mutation is never resent). A final object is
            // the outcome; one still running shows that the wait broke without it.
            let reported = reported_failure(call.client, message.clone());
            if let Some(failed) = &reported {
                // The failure was observed: a call cut by its bound during the read reports it.
                call.progress
                    .record_observed(mutation_result(id, failed.clone(), waited));
            }
            match call.client.get_operation(&call.project, id).await {
                Ok(single) if is_final(&single.value) => Observed {
                    wait_error: Some(message),
                    ..final_status(single.value)
                },
                Ok(single) => not_observed(Some(single.value), message),
                Err(_) => reported.unwrap_or_else(|| not_observed(last_seen, message)),
            }
        }
        WaitOutcome::NotFinished => Observed {
            status: Status::Running,
            operation: last_seen,
            wait_error: Some(DEADLINE_EXCEEDED.to_owned()),
        },
    }
}

/// The failure a wait reported, when that report is the operation's own outcome (a standalone
/// server): `failed`, with the failure as `wait_error`. The final object was not read, so
/// `operation` is `null` rather than an older object that still says `Running`; `operation_id`
/// names it. `None` on a cluster, where the report may come from a forwarded wait that broke.
fn reported_failure(client: &Client, message: String) -> Option<Observed> {
    client.wait_failure_is_outcome().then_some(Observed {
        status: Status::Failed,
        operation: None,
        wait_error: Some(message),
    })
}

/// The wait ended without showing the outcome: `running`, with why the wait ended.
fn not_observed(operation: Option<Value>, wait_error: String) -> Observed {
    Observed {
        status: Status::Running,
        operation,
        wait_error: Some(wait_error),
    }
}

/// The status of a final operation object: `Success` completed, anything else failed.
fn final_status(operation: Value) -> Observed {
    let code = operation
        .get("status_code")
        .and_then(Value::as_u64)
        .unwrap_or_default();
    let status = match code {
        200 => Status::Completed,
        code if code > 200 => Status::Failed,
        _ => Status::Running,
    };
    let wait_error = operation
        .get("err")
        .and_then(Value::as_str)
        .filter(|err| !err.is_empty())
        .map(str::to_owned);
    Observed {
        status,
        operation: Some(operation),
        wait_error,
    }
}

fn mutation_result(id: &str, observed: Observed, waited: u64) -> Value {
    json!({
        "status": observed.status,
        "operation_id": id,
        "operation": observed.operation,
        "waited_seconds": waited,
        "wait_error": observed.wait_error,
    })
}

/// The request may have been accepted, but no response was decoded: the reason is `wait_error`.
fn uncertain(uncertain: Uncertain) -> Value {
    json!({
        "status": Status::Uncertain,
        "operation_id": null,
        "operation": null,
        "waited_seconds": 0,
        "wait_error": uncertain.reason,
    })
}
