//! Mutations (one native request, then a bounded wait) and `incus_operation_wait`.
//!
//! Statuses mean exactly what the spec says:
//! - `completed` / `failed`: the native outcome was observed;
//! - `running`: the outcome was not observed within the wait, including when the local wait
//!   deadline passed (which never cancels anything);
//! - `uncertain`: the request may have been accepted but no response was decoded.
//!
//! A mutation is sent once and never resent. A native rejection before acceptance is a `native`
//! error; a request that surely was not sent is a `transport` or `timeout` error.
//!
//! The effective server-side wait is `min(wait_seconds, floor(timeout / 1000) - 1)` (never
//! below 0), reported as `waited_seconds`, so that the wait ends before the request's own bound.
use serde_json::{json, Map, Value};

use super::inspect::unknown_executor;
use super::output::Success;
use super::pipeline::Call;
use super::results::{read_error, RunError};
use crate::client::{effective_wait, Accepted, ClientError, WaitOutcome};

/// The wait endpoint's text for "the operation is still running".
const DEADLINE_EXCEEDED: &str = "context deadline exceeded";

/// What a wait observed.
struct Observed {
    status: &'static str,
    operation: Option<Value>,
    wait_error: Option<String>,
}

/// A mutation: send once, then wait up to the effective wait.
pub(crate) async fn mutation(call: &Call<'_>) -> Result<Success, RunError> {
    let accepted = match send(call).await {
        Ok(accepted) => accepted,
        Err(error) if error.may_have_been_sent() && !is_native(&error) => {
            return Ok(Success::Object(uncertain(&error)));
        }
        Err(error) => return Err(read_error(error)),
    };
    let Accepted { id, operation } = accepted;
    let waited = wait_seconds(call);
    let observed = match call
        .client
        .get_operation_wait(&call.project, &id, waited)
        .await
    {
        Ok(outcome) => observe(call, &id, outcome, Some(operation)).await,
        // Accepted, but the outcome was not observed: a local deadline or a broken wait never
        // cancels anything, and nothing is resent.
        Err(error) => Observed {
            status: "running",
            operation: Some(operation),
            wait_error: Some(error.to_string()),
        },
    };
    Ok(Success::Object(mutation_result(&id, observed, waited)))
}

/// `incus_operation_wait`: a bounded wait on an existing operation.
pub(crate) async fn wait(call: &Call<'_>) -> Result<Success, RunError> {
    let id = call.text("operation_id").to_owned();
    let waited = wait_seconds(call);
    let observed = match call
        .client
        .get_operation_wait(&call.project, &id, waited)
        .await
    {
        Ok(outcome) => observe(call, &id, outcome, None).await,
        // The local deadline passed before the server-side wait ended: not observed.
        Err(error @ ClientError::Timeout { .. }) => Observed {
            status: "running",
            operation: None,
            wait_error: Some(error.to_string()),
        },
        Err(error) => return Err(read_error(error)),
    };
    Ok(Success::Object(mutation_result(&id, observed, waited)))
}

/// The one native request of a mutation.
async fn send(call: &Call<'_>) -> Result<Accepted, ClientError> {
    let client = call.client;
    let project = call.project.as_str();
    match call.descriptor.name() {
        "incus_instance_create" => client.create_instance(project, &create_body(call)).await,
        "incus_instance_delete" => client.delete_instance(project, call.text("name")).await,
        "incus_instance_state_update" => {
            let body = pick(&call.input, &["action", "timeout", "force", "stateful"]);
            client
                .update_instance_state(project, call.text("name"), &body)
                .await
        }
        "incus_instance_snapshot_create" => {
            // Without a snapshot name, Incus picks the first free snapN.
            let mut body = pick(&call.input, &["stateful"]);
            body["name"] = json!(call.text("snapshot"));
            client
                .create_instance_snapshot(project, call.text("instance"), &body)
                .await
        }
        "incus_instance_snapshot_delete" => {
            client
                .delete_instance_snapshot(project, call.text("instance"), call.text("snapshot"))
                .await
        }
        "incus_instance_snapshot_restore" => {
            let body = json!({"restore": call.text("snapshot")});
            client
                .update_instance(project, call.text("instance"), &body, None)
                .await
        }
        "incus_image_delete" => client.delete_image(project, call.text("fingerprint")).await,
        other => Err(ClientError::InvalidRequest {
            message: unknown_executor(other).to_string(),
        }),
    }
}

/// The native create body: the input's native fields, with `source.remote` replaced by the
/// host-approved server and protocol.
fn create_body(call: &Call<'_>) -> Value {
    let mut body = call.input.clone();
    if let Some(fields) = body.as_object_mut() {
        for key in ["project", "wait_seconds"] {
            fields.remove(key);
        }
    }
    if let (Some(remote), Some(source)) = (
        &call.remote,
        body.get_mut("source").and_then(Value::as_object_mut),
    ) {
        source.remove("remote");
        source.insert("server".into(), json!(remote.server));
        source.insert("protocol".into(), json!(remote.protocol));
    }
    body
}

/// The given fields of the input, as a native body.
pub(crate) fn pick(input: &Value, keys: &[&str]) -> Value {
    let fields: Map<String, Value> = keys
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), input.get(*key)?.clone())))
        .collect();
    Value::Object(fields)
}

/// `min(wait_seconds, floor(timeout / 1000) - 1)`, never below 0.
fn wait_seconds(call: &Call<'_>) -> u64 {
    effective_wait(
        call.integer("wait_seconds"),
        call.client.connection().timeout(),
    )
}

fn is_native(error: &ClientError) -> bool {
    matches!(error, ClientError::Native { .. })
}

/// What the wait observed: the final operation, its failure, or nothing yet.
async fn observe(
    call: &Call<'_>,
    id: &str,
    outcome: WaitOutcome,
    last_seen: Option<Value>,
) -> Observed {
    match outcome {
        WaitOutcome::Final(operation) => final_status(operation),
        WaitOutcome::Failed { message, .. } => {
            // The failure envelope does not carry the operation; Incus keeps it a few seconds.
            let operation = match call.client.get_operation(&call.project, id).await {
                Ok(single) => Some(single.value),
                Err(_) => last_seen,
            };
            Observed {
                status: "failed",
                operation,
                wait_error: Some(message),
            }
        }
        WaitOutcome::NotFinished => Observed {
            status: "running",
            operation: last_seen,
            wait_error: Some(DEADLINE_EXCEEDED.to_owned()),
        },
    }
}

/// The status of a final operation object: `Success` completed, anything else failed.
fn final_status(operation: Value) -> Observed {
    let code = operation
        .get("status_code")
        .and_then(Value::as_u64)
        .unwrap_or_default();
    let status = match code {
        200 => "completed",
        code if code > 200 => "failed",
        _ => "running",
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

/// The request may have been accepted, but no response was decoded.
fn uncertain(error: &ClientError) -> Value {
    json!({
        "status": "uncertain",
        "operation_id": null,
        "operation": null,
        "waited_seconds": 0,
        "wait_error": error.to_string(),
    })
}
