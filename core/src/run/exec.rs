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

use serde_json::{json, Value};

use super::call::Call;
use super::input;
use super::output::{Success, OUTPUT_BYTES};
use super::results::{uncertain_or_error, RunError, Status, Uncertain};
use crate::client::{exec_duration_cap, ExecRequest};

/// Runs the command and reports what was observed.
pub(crate) async fn exec(call: &Call<'_>, input: input::Exec) -> Result<Success, RunError> {
    let name = input.name.clone();
    let request = request(input);
    let started = Instant::now();
    let cap = exec_duration_cap(
        request.timeout_seconds,
        call.client.connection().stream_timeout(),
    );
    call.progress
        .record_timed(uncertain(started, cap, String::new()), "reason", started);
    match call
        .client
        .exec_instance(&call.project, &name, &request)
        .await
    {
        Ok(outcome) => Ok(Success::Object(outcome.to_json_within(OUTPUT_BYTES))),
        Err(error) => {
            let Uncertain { reason } = uncertain_or_error(error)?;
            Ok(Success::Object(uncertain(started, cap, reason)))
        }
    }
}

/// The validated input as the client's request.
fn request(input: input::Exec) -> ExecRequest {
    ExecRequest {
        command: input.command,
        environment: input.environment.unwrap_or_default(),
        cwd: input.cwd,
        user: input.user,
        group: input.group,
        stdin: input.stdin.map(String::into_bytes).unwrap_or_default(),
        timeout_seconds: input.timeout_seconds,
    }
}

/// The exec may have been accepted (and the command started), but no answer was decoded. No
/// stream was read, so neither is known to be whole: `truncated` is `true`.
fn uncertain(started: Instant, timeout_seconds: u64, reason: String) -> Value {
    let unread = json!({"data": "", "encoding": "utf-8", "bytes": 0, "captured_bytes": 0, "truncated": true});
    json!({
        "status": Status::Uncertain,
        "exit_code": null,
        "stdout": unread,
        "stderr": unread,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "timeout_seconds": timeout_seconds,
        "operation_id": null,
        "operation": null,
        "reason": reason,
    })
}
