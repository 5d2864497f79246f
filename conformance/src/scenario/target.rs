//! What scenarios and suites run against: a target built per trial by a factory.
//!
//! Two backends: [`HostTarget`] runs operations through the core's `run()` and a host bound to
//! an Incus the harness does not control (a real daemon: no journal, no faults), and
//! [`HostTargets`](super::fake::HostTargets) starts an embedded fake Incus per target (journal
//! and faults). Tests of the harness itself use scripted targets.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use incus_operations::{Host, RunOptions, Scope};
use serde_json::Value;

use super::format::{FakeSetup, Moment};
use super::host::{ConnectionLimits, HostBehaviour};

/// A boxed future, as trait objects need.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One request the backend received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The HTTP method.
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// The query string, if any (without `?`).
    pub query: Option<String>,
    /// The body as received (empty when none).
    pub body: String,
    /// The `If-Match` header, if any.
    pub if_match: Option<String>,
    /// Whether the backend accepted it: a change was made or an operation was created.
    pub applied: bool,
}

/// What a cluster target can do to its members' daemons, for the steps that take a member down
/// and bring it back ([`Moment`] says when during a call).
pub trait Members: Send + Sync {
    /// The member's daemon dies (as `SIGKILL` kills it).
    fn down<'a>(&'a self, member: &'a str) -> BoxFuture<'a, Result<(), String>>;

    /// The member's daemon starts again; resolves once the cluster serves it again.
    fn up<'a>(&'a self, member: &'a str) -> BoxFuture<'a, Result<(), String>>;

    /// Resolves once a call started after this was asked for reaches `moment`; an error when it
    /// does not within the backend's bound.
    fn moment(&self, moment: Moment) -> BoxFuture<'_, Result<(), String>>;
}

/// One system under test, set up for one trial.
pub trait Target: Send + Sync {
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

    /// Sends one native request straight to the backend, not through the core, and returns its
    /// HTTP status and envelope: setup that no operation of the catalogue makes (a trust token,
    /// an operation of another project). An error when the backend takes none (the default).
    fn native<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
        body: Option<Value>,
    ) -> BoxFuture<'a, Result<(u16, Value), String>> {
        let _ = (method, path, body);
        Box::pin(async { Err("this backend takes no direct native requests".to_owned()) })
    }

    /// The cluster's members, when the target is a cluster whose members it can take down and
    /// bring back; `None` (the default) otherwise.
    fn members(&self) -> Option<&dyn Members> {
        None
    }
}

/// Builds one target per trial.
pub trait TargetFactory: Send + Sync {
    /// Starts a target with the fake-only `setup` applied.
    fn start<'a>(&'a self, setup: &'a FakeSetup) -> BoxFuture<'a, Result<Box<dyn Target>, String>>;

    /// Whether this factory can apply fake-only setup and read a journal (false for a real Incus).
    fn is_fake(&self) -> bool;

    /// Whether its trials may run on virtual time: everything a trial waits on runs on the
    /// trial's runtime (a fake embedded in this process, and a host in this process that reaches
    /// it through its sockets). False (the default) for a backend with a clock of its own: an
    /// adapter in another process, a real Incus.
    fn virtual_time(&self) -> bool {
        false
    }

    /// The same backend with the host following `host` and the connection bounded by `limits`,
    /// when this backend takes its host as data (an adapter over the wire); `None` otherwise
    /// (a Rust host, whose behaviour is its code).
    fn with_host(
        &self,
        _host: &HostBehaviour,
        _limits: &ConnectionLimits,
    ) -> Option<std::sync::Arc<dyn TargetFactory>> {
        None
    }

    /// A target for an Incus the harness started itself (a member of a fake cluster, at
    /// `socket`), with the reference host's behaviour, when this backend can make one (an adapter
    /// over the wire); `None` otherwise.
    fn bound_to(&self, _socket: &std::path::Path) -> Option<Box<dyn Target>> {
        None
    }
}

/// Runs operations through the core's `run()` and `host`, as `caller`, against whatever Incus
/// the host binds them to. It records no journal and takes no fault rules: this is the target
/// for a real Incus.
pub struct HostTarget<H: Host> {
    host: H,
    caller: H::Caller,
    callback_timeout: Option<Duration>,
}

impl<H: Host> HostTarget<H> {
    /// Calls run through `host` as `caller`.
    pub fn new(host: H, caller: H::Caller) -> Self {
        Self {
            host,
            caller,
            callback_timeout: None,
        }
    }

    /// Bounds host callbacks by `bound` instead of `run()`'s default.
    pub fn callback_timeout(mut self, bound: Option<Duration>) -> Self {
        self.callback_timeout = bound;
        self
    }
}

impl<H: Host + 'static> Target for HostTarget<H> {
    fn call<'a>(
        &'a self,
        operation: &'a str,
        scopes: &'a [String],
        input: Value,
    ) -> BoxFuture<'a, Value> {
        // Scope strings that name no scope grant nothing.
        let scopes: Vec<Scope> = scopes.iter().filter_map(|s| Scope::parse(s)).collect();
        Box::pin(async move {
            let mut options = RunOptions::new(&self.host, &self.caller, scopes);
            if let Some(bound) = self.callback_timeout {
                options = options.callback_timeout(bound);
            }
            incus_operations::run(operation, input, options).await
        })
    }

    fn journal(&self) -> Option<Vec<Request>> {
        None
    }

    fn output_schema(&self, operation: &str) -> Option<Value> {
        incus_operations::fetch(operation).map(|d| d.output_schema().clone())
    }

    fn add_fault(&self, _rule: &Value) -> Result<(), String> {
        Err("fault rules need a fake Incus; this target calls a real one".into())
    }
}
