//! What scenarios and suites run against: a target built per trial by a factory.
//!
//! The conformance run builds targets from the core's `run()` over an embedded fake Incus
//! (with the reference host, or a host under certification); tests of the harness itself use
//! scripted targets.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::format::FakeSetup;

/// A boxed future, as trait objects need.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One request the backend received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    /// The query string, if any (without `?`).
    pub(crate) query: Option<String>,
    /// The body as received (empty when none).
    pub(crate) body: String,
    /// The `If-Match` header, if any.
    pub(crate) if_match: Option<String>,
}

/// One system under test, set up for one trial.
pub(crate) trait Target: Send + Sync {
    /// Runs one operation as a caller holding `scopes`; always returns the result object.
    fn call<'a>(
        &'a self,
        operation: &'a str,
        scopes: &'a [String],
        input: Value,
    ) -> BoxFuture<'a, Value>;

    /// Every request the backend has received so far, in order, if it records them.
    fn journal(&self) -> Option<Vec<Request>>;

    /// The operation's output schema, if the operation is exported.
    fn output_schema(&self, operation: &str) -> Option<Value>;

    /// Installs a fault rule (the fake's rule format) from now on; an error when the backend
    /// takes no rules.
    fn add_fault(&self, rule: &Value) -> Result<(), String>;
}

/// Builds one target per trial.
pub(crate) trait TargetFactory: Send + Sync {
    /// Starts a target with the fake-only `setup` applied.
    fn start<'a>(&'a self, setup: &'a FakeSetup) -> BoxFuture<'a, Result<Box<dyn Target>, String>>;

    /// Whether this factory can apply fake-only setup and read a journal (false for a real Incus).
    fn is_fake(&self) -> bool;
}
