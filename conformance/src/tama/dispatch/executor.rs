//! The producer's side of a dispatch: an async executor, called with the operation ID and the
//! validated input.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use futures_util::FutureExt;
use serde_json::Value;

/// What an executor returns: `Ok(result)` (checked against the `"200"` schema) or
/// `Err(error)` (checked against `"default"` when the operation declares one).
pub type ExecutorFuture = Pin<Box<dyn Future<Output = Result<Value, Value>> + Send>>;

/// Runs the operations of one installed document.
///
/// Any `Fn(String, Value) -> impl Future<Output = Result<Value, Value>>` closure is an executor:
///
/// ```
/// use incus_conformance::tama::Executor;
/// use serde_json::{json, Value};
///
/// fn takes(_: impl Executor) {}
/// takes(|operation_id: String, input: Value| async move {
///     Ok::<Value, Value>(json!({"operation_id": operation_id, "echo": input}))
/// });
/// ```
pub trait Executor: Send + Sync + 'static {
    /// Runs `operation_id` with `input` (already valid against the input schema). The
    /// dispatcher adds no deadline of its own; a panic, here or while the future runs, becomes
    /// a `dispatch_failed` error.
    fn execute(&self, operation_id: &str, input: Value) -> ExecutorFuture;
}

impl<F, Fut> Executor for F
where
    F: Fn(String, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, Value>> + Send + 'static,
{
    fn execute(&self, operation_id: &str, input: Value) -> ExecutorFuture {
        Box::pin(self(operation_id.to_owned(), input))
    }
}

/// Calls the executor, turning a panic (while creating or polling the future) into `Err` with
/// the panic message.
pub(crate) async fn call_catching_panics(
    executor: &dyn Executor,
    operation_id: &str,
    input: Value,
) -> Result<Result<Value, Value>, String> {
    let future =
        std::panic::catch_unwind(AssertUnwindSafe(|| executor.execute(operation_id, input)))
            .map_err(panic_message)?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(panic_message)
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned());
    format!("the executor panicked: {detail}")
}
