//! `run(name, input, options)`: one operation, through the ordered checks, to its native calls.
use std::time::Duration;

use serde_json::Value;

use crate::catalogue::Scope;
use crate::host::DynHost;

mod call;
mod callback;
mod cancel;
mod checks;
mod deadline;
mod exec;
mod input;
mod inspect;
mod keys;
mod mutate;
mod native;
mod output;
mod own_operation;
mod pipeline;
mod reader;
mod redact;
mod restricted;
mod results;
#[cfg(test)]
mod spelling_tests;
#[cfg(test)]
mod tests;
mod update;
mod values;
mod writes;

pub use redact::{
    network as redact_network_credentials, server as redact_server_credentials, REDACTED,
};

/// How long a host callback may take before it counts as a denial, unless configured.
pub const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(5);

/// The bound on a whole call, unless configured: 90 s, over the longest default wait (29 s) and
/// exec session (65 s) with room for the host callbacks and the reads around them.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// Who runs an operation, through which host, with which verified scopes.
#[non_exhaustive]
pub struct RunOptions<'a, C> {
    /// The host binding.
    pub host: &'a dyn DynHost<Caller = C>,
    /// The host's verified caller.
    pub caller: &'a C,
    /// The caller's verified scopes (never taken from input).
    pub scopes: Vec<Scope>,
    /// The bound on each host callback ([`DEFAULT_CALLBACK_TIMEOUT`] by default).
    pub callback_timeout: Duration,
    /// The bound on the whole call, checks, host callbacks and native requests included
    /// ([`DEFAULT_CALL_TIMEOUT`] by default). See [`run`] for what a call cut by it reports.
    pub call_timeout: Duration,
}

impl<'a, C> RunOptions<'a, C> {
    /// Options for a caller of a host with its verified scopes.
    pub fn new(
        host: &'a dyn DynHost<Caller = C>,
        caller: &'a C,
        scopes: impl IntoIterator<Item = Scope>,
    ) -> Self {
        RunOptions {
            host,
            caller,
            scopes: scopes.into_iter().collect(),
            callback_timeout: DEFAULT_CALLBACK_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// Sets the bound on each host callback.
    pub fn callback_timeout(mut self, bound: Duration) -> Self {
        self.callback_timeout = bound;
        self
    }

    /// Sets the bound on the whole call.
    pub fn call_timeout(mut self, bound: Duration) -> Self {
        self.call_timeout = bound;
        self
    }
}

/// Runs one operation and returns its result: a success object, or `{"error": {"kind",
/// "message", ...}}`. Either way the result validates against the operation's output schema.
///
/// The checks run in the order of the table "Running operations" in the crate README (the one
/// place that order is written; `checks::in_order` runs it), and the first that fails decides the
/// result. Nothing before the native calls makes a backend request except discovery and the
/// reads of the last check, and the native project is selected only after authorization.
///
/// The whole call is bounded by [`RunOptions::call_timeout`]. A call cut by it before anything that
/// changes state was sent is a `timeout` error; one cut while a mutation, update, cancel or exec
/// request may have been sent is `uncertain` (the reason in `wait_error` for mutations, in `reason`
/// otherwise); one cut while a mutation's wait was under way is `running` with its operation.
/// Nothing is resent.
///
/// ```
/// use incus_operations::{
///     run, Binding, BindingContext, Confirmation, Connection, Host, HostError, RunOptions, Scope,
/// };
/// use serde_json::{json, Value};
///
/// /// Binds every caller to an Incus socket that does not exist, and authorizes everything.
/// struct Nowhere(std::path::PathBuf);
///
/// impl Host for Nowhere {
///     type Caller = String;
///     async fn binding(&self, _: &String, _: &str) -> Result<Binding, HostError> {
///         let connection = Connection::unix(self.0.clone());
///         Ok(Binding::connection(connection, BindingContext::default()))
///     }
///     async fn authorize(&self, _: &String, _: &str, _: &Value) -> Result<(), HostError> {
///         Ok(())
///     }
/// }
///
/// let dir = tempfile::tempdir().expect("a temporary directory");
/// let host = Nowhere(dir.path().join("missing.socket"));
/// let caller = String::from("agent-7");
/// // The operation that deletes an instance by name, found in the catalogue.
/// let name = incus_operations::all()
///     .into_iter()
///     .find(|d| d.confirmation() == Some(Confirmation::InstanceName))
///     .expect("exported")
///     .name();
/// let delete = |input: Value, scopes: &[Scope]| {
///     let options = RunOptions::new(&host, &caller, scopes.iter().copied());
///     let runtime = tokio::runtime::Runtime::new().expect("a runtime");
///     runtime.block_on(run(name, input, options))
/// };
/// let kind = |result: Value| result["error"]["kind"].as_str().map(str::to_owned);
///
/// // The first failing check decides: the scope, then the confirmation, then discovery (the
/// // first check that talks to Incus, here a socket that is not there).
/// let confirmed = json!({"name": "web", "confirm": "web"});
/// assert_eq!(kind(delete(confirmed.clone(), &[Scope::Read])).as_deref(), Some("scope_missing"));
/// let unconfirmed = json!({"name": "web", "confirm": "yes"});
/// assert_eq!(
///     kind(delete(unconfirmed, &[Scope::Delete])).as_deref(),
///     Some("confirmation_mismatch")
/// );
/// assert_eq!(kind(delete(confirmed, &[Scope::Delete])).as_deref(), Some("discovery_failed"));
/// ```
pub async fn run<C: Send + Sync>(name: &str, input: Value, options: RunOptions<'_, C>) -> Value {
    match pipeline::run(name, input, &options).await {
        Ok(result) => result,
        Err(error) => {
            tracing::debug!(operation = name, kind = error.kind().as_str(), %error, "operation refused or failed");
            error.to_result()
        }
    }
}
