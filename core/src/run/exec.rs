//! `incus_instance_exec`: one noninteractive command through the client's bounded exec, mapped
//! to the exec result.
//!
//! The client captures the first 64 KiB per stream, sends `SIGKILL` once at the duration bound
//! or past the stream total, and reports `completed`, `timed_out`, `output_limited`, `running` or
//! `uncertain`. A rejection before acceptance is a `native` error; a request that may have started
//! the command but got no decodable answer is `uncertain`; one surely not sent is `transport`.
//! The result fits the 256 KiB output bound whatever bytes the command wrote: the stream data is
//! cut to the room the rest of the result leaves, never the status, exit code or counts
//! (`ExecOutcome::to_json_within`).
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::output::{Success, OUTPUT_BYTES};
use super::pipeline::Call;
use super::results::{read_error, RunError};
use crate::client::{exec_duration_cap, ClientError, ExecRequest};

/// Runs the command and reports what was observed.
pub(crate) async fn exec(call: &Call<'_>) -> Result<Success, RunError> {
    let request = request(call)?;
    let started = Instant::now();
    match call
        .client
        .exec_instance(&call.project, call.text("name"), &request)
        .await
    {
        Ok(outcome) => Ok(Success::Object(outcome.to_json_within(OUTPUT_BYTES))),
        Err(error)
            if error.may_have_been_sent() && !matches!(error, ClientError::Native { .. }) =>
        {
            let timeout_seconds = exec_duration_cap(
                request.timeout_seconds,
                call.client.connection().stream_timeout(),
            );
            Ok(Success::Object(uncertain(started, timeout_seconds)))
        }
        Err(error) => Err(read_error(error)),
    }
}

/// The validated input as the client's request.
fn request(call: &Call<'_>) -> Result<ExecRequest, RunError> {
    let input = &call.input;
    let command = input
        .get("command")
        .and_then(Value::as_array)
        .map(|argv| {
            argv.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let environment = input
        .get("environment")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(Map::new);
    let id = |key: &str| -> Result<Option<u32>, RunError> {
        input
            .get(key)
            .and_then(Value::as_u64)
            .map(|id| {
                u32::try_from(id).map_err(|_| RunError::InvalidInput {
                    message: format!("{key} must fit in 32 bits"),
                    pointer: format!("/{key}"),
                })
            })
            .transpose()
    };
    Ok(ExecRequest {
        command,
        environment,
        cwd: input.get("cwd").and_then(Value::as_str).map(str::to_owned),
        user: id("user")?,
        group: id("group")?,
        stdin: call.text("stdin").as_bytes().to_vec(),
        timeout_seconds: call.integer("timeout_seconds"),
    })
}

/// The exec may have been accepted (and the command started), but no answer was decoded. No
/// stream was read, so neither is known to be whole: `truncated` is `true`.
fn uncertain(started: Instant, timeout_seconds: u64) -> Value {
    let unread = json!({"data": "", "encoding": "utf-8", "bytes": 0, "captured_bytes": 0, "truncated": true});
    json!({
        "status": "uncertain",
        "exit_code": null,
        "stdout": unread,
        "stderr": unread,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "timeout_seconds": timeout_seconds,
        "operation_id": null,
        "operation": null,
    })
}
