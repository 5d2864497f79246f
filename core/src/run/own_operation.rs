//! Operation get, wait and cancel act only on an operation of the call's project.
//!
//! Incus 6.0.4 looks an operation id up in every project (`GET /1.0/operations/{id}` ignores
//! `project`), and the operation object names no project. The project's own list,
//! `GET /1.0/operations?project=P`, is the daemon's answer to "which operations are P's": the
//! core reads it once (no recursion, the ids only) before touching the operation, and answers an
//! operation it does not list exactly as Incus answers an unknown one, so that nothing tells an
//! agent that an operation of another project exists. Incus also lists in every project its
//! server-wide tasks, which belong to no project.
use super::call::Call;
use super::results::{read_error, RunError};

/// The daemon's answer to an unknown operation id (HTTP 404, `Operation not found`).
pub(crate) fn unknown_operation() -> RunError {
    RunError::Native {
        http_status: 404,
        error_code: 404,
        message: "Operation not found".into(),
    }
}

/// `Ok` when Incus lists operation `id` for the call's project; the unknown-operation error
/// otherwise. One read: `GET /1.0/operations?project=P`.
pub(crate) async fn require(call: &Call<'_>, id: &str) -> Result<(), RunError> {
    let ids = call
        .client
        .get_operation_ids(&call.project)
        .await
        .map_err(read_error)?;
    if ids.iter().any(|listed| listed == id) {
        Ok(())
    } else {
        Err(unknown_operation())
    }
}
