//! `incus_operation_cancel`: read the operation first, then at most one native DELETE.
//!
//! `already_final` (the operation had finished), `unsupported` (`may_cancel` is false),
//! `requested` (one DELETE was accepted) or `uncertain` (the DELETE may have been accepted but no
//! answer was decoded). Completion stays authoritative: `requested` does not mean cancelled.
use serde_json::{json, Value};

use super::call::Call;
use super::input;
use super::output::Success;
use super::results::{read_error, uncertain_or_error, RunError, Status};

/// Reads the operation, then asks once for its cancellation when that can work.
pub(crate) async fn cancel(call: &Call<'_>, input: input::Operation) -> Result<Success, RunError> {
    let id = input.operation_id.as_str();
    let operation = call
        .client
        .get_operation(&call.project, id)
        .await
        .map_err(read_error)?
        .value;
    let status_code = operation
        .get("status_code")
        .and_then(Value::as_u64)
        .unwrap_or_default();
    let may_cancel = operation
        .get("may_cancel")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let (status, reason) = if status_code >= 200 {
        (Status::AlreadyFinal, None)
    } else if !may_cancel {
        (Status::Unsupported, None)
    } else {
        call.progress.record(
            json!({"status": Status::Uncertain, "operation_id": id, "operation": operation, "reason": ""}),
            "reason",
        );
        match call.client.delete_operation(&call.project, id).await {
            Ok(()) => (Status::Requested, None),
            Err(error) => (Status::Uncertain, Some(uncertain_or_error(error)?.reason)),
        }
    };
    let mut result = json!({"status": status, "operation_id": id, "operation": operation});
    if let Some(reason) = reason {
        result["reason"] = json!(reason);
    }
    Ok(Success::Object(result))
}
