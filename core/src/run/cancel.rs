//! `incus_operation_cancel`: read the operation first, then at most one native DELETE.
//!
//! `already_final` (the operation had finished), `unsupported` (`may_cancel` is false),
//! `requested` (one DELETE was accepted) or `uncertain` (the DELETE may have been accepted but no
//! answer was decoded). Completion stays authoritative: `requested` does not mean cancelled.
use serde_json::{json, Value};

use super::output::Success;
use super::pipeline::Call;
use super::results::{read_error, RunError};
use crate::client::ClientError;

/// Reads the operation, then asks once for its cancellation when that can work.
pub(crate) async fn cancel(call: &Call<'_>) -> Result<Success, RunError> {
    let id = call.text("operation_id");
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
    let status = if status_code >= 200 {
        "already_final"
    } else if !may_cancel {
        "unsupported"
    } else {
        match call.client.delete_operation(&call.project, id).await {
            Ok(()) => "requested",
            Err(error)
                if error.may_have_been_sent() && !matches!(error, ClientError::Native { .. }) =>
            {
                "uncertain"
            }
            Err(error) => return Err(read_error(error)),
        }
    };
    Ok(Success::Object(
        json!({"status": status, "operation_id": id, "operation": operation}),
    ))
}
