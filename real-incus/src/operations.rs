//! What the acceptance plan needs from the operation core, behind a small trait so that the plan reads
//! the same whether it runs through the core's `run()` with a reference host or through something else.
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// Every scope; the acceptance run grants all of them except where a check is about scopes.
pub(crate) const ALL_SCOPES: &[&str] = &["incus.read", "incus.write", "incus.exec", "incus.delete"];

/// A boxed future, as returned by [`Operations::run`].
pub(crate) type RunFuture<'a> = Pin<Box<dyn Future<Output = Value> + Send + 'a>>;

/// `max_stream_bytes` of the second connection: the exec stream total is half of it, 512 KiB, so
/// that the stream bound is reached in a second rather than after 64 MiB.
pub(crate) const SMALL_MAX_STREAM_BYTES: u64 = 1024 * 1024;

/// One catalogue entry as the acceptance run sees it.
#[derive(Debug, Clone)]
pub(crate) struct OperationInfo {
    pub(crate) name: String,
    /// In `all()` (passed the evidence gate) rather than only in the catalogue for review.
    pub(crate) exported: bool,
    /// Client requirements: native methods, `helper:connect`, `stream:S01`.
    pub(crate) evidence: Vec<String>,
    /// The operation's output JSON Schema (success | error).
    pub(crate) output_schema: Value,
}

/// The operation core, bound to one Incus and one isolated project.
pub(crate) trait Operations: Sync {
    /// Every operation of the catalogue, exported or not, in catalogue order.
    fn catalogue(&self) -> Vec<OperationInfo>;

    /// Runs one operation with the given verified scopes; always a JSON object.
    fn run<'a>(&'a self, name: &'a str, input: Value, scopes: &'a [&'a str]) -> RunFuture<'a>;

    /// Like [`Operations::run`], over a connection whose `max_stream_bytes` is
    /// [`SMALL_MAX_STREAM_BYTES`].
    fn run_small_streams<'a>(
        &'a self,
        name: &'a str,
        input: Value,
        scopes: &'a [&'a str],
    ) -> RunFuture<'a>;
}
