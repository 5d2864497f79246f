//! `incus_instance_update`: a conditional PATCH of only the given writable fields.
//!
//! Without `etag` in the input, the current ETag is read first (`etag_source: "read"`); a stale
//! ETag is the native 412 error. PATCH is synchronous in Incus, so the result is `completed`, or
//! `uncertain` when the PATCH may have been applied but no answer was decoded.
//!
//! Only the given fields are sent. Incus's PATCH merges `config` and `devices` and keeps omitted
//! `profiles` and `ephemeral`, but resets an omitted `description` to "" (native behaviour).
use serde_json::json;

use super::call::Call;
use super::input;
use super::output::Success;
use super::results::{read_error, uncertain_or_error, RunError, Status};

/// Reads the ETag when needed, then sends one conditional PATCH.
pub(crate) async fn update(call: &Call<'_>, input: &input::Update) -> Result<Success, RunError> {
    let name = input.name.as_str();
    let (etag, source) = match &input.etag {
        Some(etag) => (etag.clone(), "input"),
        None => (read_etag(call, name).await?, "read"),
    };
    call.progress.record(
        json!({"status": Status::Uncertain, "etag_source": source, "etag": etag, "reason": ""}),
        "reason",
    );
    let sent = call
        .client
        .patch_instance(&call.project, name, &input.body(), &etag)
        .await;
    let result = match sent {
        Ok(()) => json!({"status": Status::Completed, "etag_source": source, "etag": etag}),
        Err(error) => {
            let uncertain = uncertain_or_error(error)?;
            json!({"status": Status::Uncertain, "etag_source": source, "etag": etag, "reason": uncertain.reason})
        }
    };
    Ok(Success::Object(result))
}

async fn read_etag(call: &Call<'_>, name: &str) -> Result<String, RunError> {
    let single = call
        .client
        .get_instance(&call.project, name)
        .await
        .map_err(read_error)?;
    single.etag.ok_or_else(|| {
        RunError::InvalidResponse("the instance was returned without an ETag".into())
    })
}
