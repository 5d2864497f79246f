//! `run`'s outline: the export gate (check 1), the call's bound around the other checks
//! (`checks::in_order`, in the README's order) and the dispatch of the typed input to its
//! executor (`native::execute`).
use serde_json::Value;

use super::call::Call;
use super::deadline::Progress;
use super::output::{self, Success};
use super::reader;
use super::redact::Reader;
use super::results::RunError;
use super::{checks, native, RunOptions};
use crate::catalogue::{self, Descriptor};

/// Runs the checks in the order of the README's table ("Running operations"), then the operation.
pub(crate) async fn run<C: Send + Sync>(
    name: &str,
    input: Value,
    options: &RunOptions<'_, C>,
) -> Result<Value, RunError> {
    let Some(descriptor) = catalogue::fetch(name) else {
        let reason = if catalogue::lookup(name).is_some() {
            format!(
                "{name} is not exported: its client evidence is incomplete (see not_exported())"
            )
        } else {
            format!("{name:?} is not an operation")
        };
        return Err(RunError::UnknownOperation(reason));
    };
    run_operation(descriptor, input, options).await
}

/// Runs every check after the export gate, then the operation, within the call's bound (tests use
/// it directly for operations the gate does not export yet).
pub(crate) async fn run_operation<C: Send + Sync>(
    descriptor: &'static Descriptor,
    input: Value,
    options: &RunOptions<'_, C>,
) -> Result<Value, RunError> {
    let progress = Progress::default();
    let bound = options.call_timeout;
    match tokio::time::timeout(bound, checked(descriptor, input, options, &progress)).await {
        Ok(result) => result,
        Err(_) => {
            let reason = format!(
                "the call did not finish within its bound of {} ms",
                bound.as_millis()
            );
            match progress.take(&reason) {
                // A mutation's or an exec's report: it names no `used_by`, and no project is
                // asked about once the bound has passed.
                Some(result) => {
                    let reader = Reader {
                        exec: reader::has_exec(&options.scopes),
                        ..Reader::default()
                    };
                    output::finish(descriptor.native(), &reader, Success::Object(result))
                }
                None => Err(RunError::Timeout(format!(
                    "{reason}; nothing that changes state was sent"
                ))),
            }
        }
    }
}

/// The checks and the operation, recording in `progress` what to report if the bound passes.
async fn checked<C: Send + Sync>(
    descriptor: &'static Descriptor,
    input: Value,
    options: &RunOptions<'_, C>,
    progress: &Progress,
) -> Result<Value, RunError> {
    let checked = checks::in_order(descriptor, input, options).await?;
    let call = Call {
        client: &checked.client,
        project: checked.project,
        progress,
    };
    let success = native::execute(&call, checked.input).await?;
    let reader = reader::of(&success, &call.project, options).await;
    output::finish(descriptor.native(), &reader, success)
}
