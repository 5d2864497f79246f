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
mod mutate;
mod native;
mod output;
mod own_operation;
mod pipeline;
mod redact;
mod restricted;
mod results;
#[cfg(test)]
mod spelling_tests;
#[cfg(test)]
mod tests;
mod update;
mod writes;

pub use redact::REDACTED;

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
/// The checks run in this order, and the first that fails decides the result:
/// 1. the operation is known and exported (`unknown_operation`);
/// 2. the operation's scope is among the caller's verified scopes (`scope_missing`);
/// 3. the serialized input is within its byte bound (`input_too_large`), measured before schema
///    validation so that an oversized input never reaches the validator; then the input schema,
///    compiled once per operation (`invalid_input`);
/// 4. a destructive operation's `confirm` repeats the exact resource (`confirmation_required`,
///    `confirmation_mismatch`);
/// 5. what create and update may write (`SECURITY.md`): an update setting `ephemeral: true`
///    needs `incus.delete` and guest-code config keys (`cloud-init.*`, `user.user-data`, ...) need
///    `incus.exec` (`scope_missing`); config keys outside Incus's plain keys and devices beyond a
///    pool disk's or managed-network nic's allowed keys need the host's `allow_restricted`
///    (`restricted_input`);
/// 6. the host's `binding` (`binding_denied`);
/// 7. the host's `authorize`, with validated, normalized input (`unauthorized`);
/// 8. the image remote named by `source.remote`, through the host (`unknown_remote`);
/// 9. discovery, when the binding is a connection (`discovery_failed`);
/// 10. the profiles the call applies, read from Incus (for a create without `profiles`, the source
///     image's, or `default`, sent explicitly): their effective config and devices pass rule 5
///     (`scope_missing`, `restricted_input`); and a stop by a caller without `incus.delete` reads
///     the instance, since stopping an ephemeral instance deletes it (`scope_missing`).
///
/// Nothing before the native calls makes a backend request except discovery and the reads of
/// check 10, and the native project is selected only after authorization.
///
/// The whole call is bounded by [`RunOptions::call_timeout`]. A call cut by it before anything that
/// changes state was sent is a `timeout` error; one cut while a mutation, update, cancel or exec
/// request may have been sent is `uncertain` (the reason in `wait_error` for mutations, in `reason`
/// otherwise); one cut while a mutation's wait was under way is `running` with its operation.
/// Nothing is resent.
///
/// ```no_run
/// # async fn example(host: &impl incus_operations::Host<Caller = String>) {
/// use incus_operations::{run, RunOptions, Scope};
/// use serde_json::json;
///
/// // The operation the agent chose: here, the first exported read of instances.
/// let chosen = incus_operations::all()
///     .into_iter()
///     .find(|d| d.resource() == "instance" && d.scope() == Scope::Read)
///     .expect("exported");
/// let caller = String::from("agent-7");
/// let result = run(
///     chosen.name(),
///     json!({"project": "default"}),
///     RunOptions::new(host, &caller, [Scope::Read]),
/// )
/// .await;
/// assert!(result.is_object());
/// # }
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
