//! The operation core behind [`Operations`].
//!
//! Placeholder until the core's `run()`, `Host` and catalogue are merged into this branch: binding
//! fails with a clear message, so a run reports a setup error (and still cleans up) instead of
//! pretending that operations ran.
use serde_json::Value;

use crate::cli::Cli;
use crate::endpoint::Endpoint;
use crate::operations::{OperationInfo, Operations, RunFuture};

/// The core, bound for one acceptance run.
pub(crate) struct CoreOperations;

impl CoreOperations {
    /// Always fails until the core is merged.
    pub(crate) fn new(
        _endpoint: &Endpoint,
        _project: &str,
        _cli: &Cli,
    ) -> Result<CoreOperations, String> {
        Err("the operation core's run() is not merged into this build yet".into())
    }
}

impl Operations for CoreOperations {
    fn catalogue(&self) -> Vec<OperationInfo> {
        Vec::new()
    }

    fn run<'a>(&'a self, _name: &'a str, _input: Value, _scopes: &'a [&'a str]) -> RunFuture<'a> {
        Box::pin(async { Value::Null })
    }

    fn run_small_streams<'a>(
        &'a self,
        _name: &'a str,
        _input: Value,
        _scopes: &'a [&'a str],
    ) -> RunFuture<'a> {
        Box::pin(async { Value::Null })
    }
}
