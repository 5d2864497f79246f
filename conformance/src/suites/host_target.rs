//! Targets that run operations through the core's `run()` and a [`Host`], over an embedded
//! fake Incus started for each trial: the main job's reference host, a scripted host, or a host
//! under certification.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fake_incus::FakeIncus;
use incus_operations::{Connection, Endpoint, Host, RunOptions, Scope};
use serde_json::Value;

use crate::scenario::format::FakeSetup;
use crate::scenario::target::{BoxFuture, Request, Target, TargetFactory};

/// Builds the host under test for a fake Incus reachable through `connection`; returns the host
/// and a caller it fully authorizes.
pub(crate) type HostFactory<H> = Arc<dyn Fn(Connection) -> (H, <H as Host>::Caller) + Send + Sync>;

/// How a target connects to its fake's Unix socket.
pub(crate) type ConnectionFactory = Arc<dyn Fn(&Path) -> Result<Connection, String> + Send + Sync>;

/// Which of the fake's listeners the targets' hosts connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    /// The Unix socket (through the [`ConnectionFactory`]).
    Unix,
    /// HTTPS with mutual TLS: the fake's trusted client identity, its server certificate pinned.
    Https,
}

/// Starts one fake Incus per target and runs operations through `run()` with the host.
pub(crate) struct HostTargets<H: Host> {
    factory: HostFactory<H>,
    callback_timeout: Option<Duration>,
    connection: ConnectionFactory,
    listener: Listener,
}

impl<H: Host> HostTargets<H> {
    /// Targets whose hosts connect with the connection's documented defaults.
    pub(crate) fn new(factory: HostFactory<H>) -> Self {
        Self {
            factory,
            callback_timeout: None,
            connection: Arc::new(|socket| Ok(Connection::unix(socket))),
            listener: Listener::Unix,
        }
    }

    /// Connects through `listener` (the Unix socket by default).
    pub(crate) fn listener(mut self, listener: Listener) -> Self {
        self.listener = listener;
        self
    }

    /// Connects with `connection` instead of the defaults (shorter timeouts, smaller streams).
    pub(crate) fn connection(mut self, connection: ConnectionFactory) -> Self {
        self.connection = connection;
        self
    }

    /// Bounds host callbacks by `bound` instead of `run()`'s default.
    pub(crate) fn callback_timeout(mut self, bound: Duration) -> Self {
        self.callback_timeout = Some(bound);
        self
    }
}

struct HostTarget<H: Host> {
    fake: FakeIncus,
    host: H,
    caller: H::Caller,
    callback_timeout: Option<Duration>,
}

impl<H: Host + 'static> TargetFactory for HostTargets<H> {
    fn start<'a>(&'a self, setup: &'a FakeSetup) -> BoxFuture<'a, Result<Box<dyn Target>, String>> {
        Box::pin(async move {
            let https = self.listener == Listener::Https;
            let fake = super::fake::start_with(setup, https).await?;
            let connection = match self.listener {
                Listener::Unix => (self.connection)(fake.unix_socket())?,
                Listener::Https => https_connection(&fake)?,
            };
            let (host, caller) = (self.factory)(connection);
            let target = HostTarget {
                fake,
                host,
                caller,
                callback_timeout: self.callback_timeout,
            };
            Ok(Box::new(target) as Box<dyn Target>)
        })
    }

    fn is_fake(&self) -> bool {
        true
    }
}

/// A connection to the fake's HTTPS listener with the identity it trusts, its certificate pinned.
fn https_connection(fake: &FakeIncus) -> Result<Connection, String> {
    let url = fake
        .https_url()
        .ok_or("the fake Incus was started without HTTPS")?;
    let endpoint = Endpoint::https(
        url,
        fake.client_cert_pem(),
        fake.client_key_pem(),
        fake.server_cert_pem(),
    );
    Connection::builder(endpoint)
        .build()
        .map_err(|e| format!("cannot connect to the fake's HTTPS listener: {e}"))
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
        let entries = self.fake.journal().into_iter();
        Some(
            entries
                .map(|entry| Request {
                    method: entry.method,
                    path: entry.path,
                    query: entry.query,
                    body: entry.body,
                    if_match: entry.if_match,
                })
                .collect(),
        )
    }

    fn output_schema(&self, operation: &str) -> Option<Value> {
        incus_operations::fetch(operation).map(|d| d.output_schema().clone())
    }

    fn add_fault(&self, rule: &Value) -> Result<(), String> {
        let rule: fake_incus::Rule = serde_json::from_value(rule.clone())
            .map_err(|e| format!("fault rule {rule} is not a fake-incus rule: {e}"))?;
        self.fake.add_rule(rule).forget();
        Ok(())
    }
}
