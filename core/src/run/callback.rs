//! Host callbacks, bounded: a panic or a hang is a failure, never an answer.
use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;

use super::results::RunError;

/// Why a bounded host callback produced no answer.
#[derive(Debug)]
pub(crate) struct CallbackFailure(String);

impl std::fmt::Display for CallbackFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs a host callback with a time bound, turning a panic or a hang into a failure.
pub(crate) async fn bounded<T>(
    bound: Duration,
    callback: impl Future<Output = T>,
) -> Result<T, CallbackFailure> {
    let guarded = AssertUnwindSafe(callback).catch_unwind();
    match tokio::time::timeout(bound, guarded).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(panic)) => Err(CallbackFailure(format!("panicked: {}", panic_text(&panic)))),
        Err(_) => Err(CallbackFailure(format!(
            "did not answer within {} ms",
            bound.as_millis()
        ))),
    }
}

/// Asks the host, bounded: its answer, or `deny`'s error with the host's own error, or, when it
/// gave no answer (a panic, a hang), with a message that names the `callback`.
pub(crate) async fn ask<T, E: Display>(
    bound: Duration,
    callback: &str,
    answer: impl Future<Output = Result<T, E>>,
    deny: impl FnOnce(String) -> RunError,
) -> Result<T, RunError> {
    match bounded(bound, answer).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(deny(error.to_string())),
        Err(failure) => Err(deny(format!("the {callback} callback {failure}"))),
    }
}

fn panic_text(panic: &Box<dyn Any + Send>) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
