//! The fake backend: one embedded fake Incus per target, started with a scenario's or a suite's
//! fake-only setup, and the core's `run()` through a [`Host`] bound to it: the main job's
//! reference host, a scripted host, or a host under certification.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fake_incus::{FakeIncus, FakeIncusBuilder, IncusLine, Rule};
use incus_operations::{Connection, Endpoint, Host};
use serde_json::Value;

use super::format::FakeSetup;
use super::target::{BoxFuture, HostTarget, Request, Target, TargetFactory};

/// Builds the host under test for a fake Incus reachable through `connection`; returns the host
/// and a caller it fully authorizes.
pub type HostFactory<H> = Arc<dyn Fn(Connection) -> (H, <H as Host>::Caller) + Send + Sync>;

/// How a target connects to its fake's Unix socket.
pub type ConnectionFactory = Arc<dyn Fn(&Path) -> Result<Connection, String> + Send + Sync>;

/// Which of the fake's listeners the targets' hosts connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// The Unix socket, through the [`ConnectionFactory`] (the default).
    Unix,
    /// HTTPS with mutual TLS: the fake's trusted client identity, its server certificate pinned.
    Https,
}

/// The Incus line the fakes of this run answer as (`--incus-version`).
static LINE: std::sync::RwLock<Option<IncusLine>> = std::sync::RwLock::new(None);

/// Makes every fake this process starts from now on answer as `line` (the runner sets it from
/// `--incus-version`; unset, a fake answers as [`IncusLine::DEFAULT`]).
pub fn use_incus_line(line: IncusLine) {
    *LINE
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(line);
}

/// The Incus line the fakes of this run answer as.
pub fn incus_line() -> IncusLine {
    LINE.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .unwrap_or_default()
}

/// A fake's builder, answering as the run's Incus line ([`incus_line`]): every fake a suite or
/// scenario starts comes from here.
pub fn builder() -> FakeIncusBuilder {
    FakeIncus::builder().incus_version(incus_line())
}

/// Starts a fake Incus with the seed state and fault rules of `setup`.
pub async fn start(setup: &FakeSetup) -> Result<FakeIncus, String> {
    start_with(setup, false).await
}

/// Starts a fake Incus with `setup`, also on HTTPS with mutual TLS when `https` is true.
pub async fn start_with(setup: &FakeSetup, https: bool) -> Result<FakeIncus, String> {
    let mut builder = builder().https(https);
    if let Some(seed) = &setup.seed {
        builder = builder.state(seed.clone());
    }
    for fault in &setup.faults {
        builder = builder.rule(rule(fault)?);
    }
    builder
        .start()
        .await
        .map_err(|e| format!("the fake Incus did not start with this setup: {e}"))
}

fn rule(fault: &Value) -> Result<Rule, String> {
    serde_json::from_value(fault.clone())
        .map_err(|e| format!("fault rule {fault} is not a fake-incus rule: {e}"))
}

/// Starts one fake Incus per target and runs operations through `run()` with the host.
///
/// ```
/// use std::sync::Arc;
/// use incus_conformance::scenario::{fake::{HostFactory, HostTargets}, load, run};
/// use incus_conformance::scenario::target::TargetFactory;
/// use incus_conformance::ReferenceHost;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let hosts: HostFactory<ReferenceHost> = Arc::new(|c| (ReferenceHost::new(c), ()));
/// let scenario = load::parse(r#"{"name": "list", "description": "Lists.",
///     "clauses": ["inspection::shapes"], "steps": [{"operation": "incus_instance_list",
///     "scopes": ["incus.read"], "input": {}, "expect": {"equals": {"/count": 0}}}]}"#).unwrap();
/// let target = HostTargets::new(hosts).start(&Default::default()).await.unwrap();
/// assert!(run::run(&scenario, target.as_ref()).await.passed());
/// # });
/// ```
pub struct HostTargets<H: Host> {
    factory: HostFactory<H>,
    callback_timeout: Option<Duration>,
    connection: ConnectionFactory,
    listener: Listener,
}

impl<H: Host> HostTargets<H> {
    /// Targets whose hosts connect with the connection's documented defaults.
    pub fn new(factory: HostFactory<H>) -> Self {
        Self {
            factory,
            callback_timeout: None,
            connection: Arc::new(|socket| Ok(Connection::unix(socket))),
            listener: Listener::Unix,
        }
    }

    /// Connects through `listener` (the Unix socket by default).
    pub fn listener(mut self, listener: Listener) -> Self {
        self.listener = listener;
        self
    }

    /// Connects with `connection` instead of the defaults (shorter timeouts, smaller streams).
    pub fn connection(mut self, connection: ConnectionFactory) -> Self {
        self.connection = connection;
        self
    }

    /// Bounds host callbacks by `bound` instead of `run()`'s default.
    pub fn callback_timeout(mut self, bound: Duration) -> Self {
        self.callback_timeout = Some(bound);
        self
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

/// A fake Incus and the host target bound to it.
struct FakeTarget<H: Host> {
    fake: FakeIncus,
    calls: HostTarget<H>,
}

impl<H: Host + 'static> TargetFactory for HostTargets<H> {
    fn start<'a>(&'a self, setup: &'a FakeSetup) -> BoxFuture<'a, Result<Box<dyn Target>, String>> {
        Box::pin(async move {
            let fake = start_with(setup, self.listener == Listener::Https).await?;
            let connection = match self.listener {
                Listener::Unix => (self.connection)(fake.unix_socket())?,
                Listener::Https => https_connection(&fake)?,
            };
            let (host, caller) = (self.factory)(connection);
            let calls = HostTarget::new(host, caller).callback_timeout(self.callback_timeout);
            Ok(Box::new(FakeTarget { fake, calls }) as Box<dyn Target>)
        })
    }

    fn is_fake(&self) -> bool {
        true
    }

    fn virtual_time(&self) -> bool {
        true
    }
}

impl<H: Host + 'static> Target for FakeTarget<H> {
    fn call<'a>(
        &'a self,
        operation: &'a str,
        scopes: &'a [String],
        input: Value,
    ) -> BoxFuture<'a, Value> {
        self.calls.call(operation, scopes, input)
    }

    fn journal(&self) -> Option<Vec<Request>> {
        Some(journal(&self.fake))
    }

    fn output_schema(&self, operation: &str) -> Option<Value> {
        self.calls.output_schema(operation)
    }

    fn add_fault(&self, fault: &Value) -> Result<(), String> {
        add_fault(&self.fake, fault)
    }
    fn native<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
        body: Option<Value>,
    ) -> BoxFuture<'a, Result<(u16, Value), String>> {
        Box::pin(native_request(&self.fake, method, path, body))
    }
}

/// One native request straight to `fake` (in process, through its whole request path, as
/// [`FakeIncus::call`] sends it): the status and the decoded JSON body. For setup requests of
/// trials, not for the core's calls.
pub(crate) async fn native_request(
    fake: &FakeIncus,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<(u16, Value), String> {
    let mut request = fake_incus::Request::new(method, path);
    if let Some(body) = &body {
        request = request.json(body);
    }
    let reply = fake.call(request).await;
    if reply.dropped() {
        return Err(format!("{method} {path}: the fake dropped the request"));
    }
    Ok((reply.status(), reply.json().clone()))
}

/// Every request `fake` has received so far, in order, as a target reports them.
pub(crate) fn journal(fake: &FakeIncus) -> Vec<Request> {
    fake.journal().iter().map(request).collect()
}

/// A journal entry of the fake as a target reports it.
pub(crate) fn request(entry: &fake_incus::JournalEntry) -> Request {
    Request {
        method: entry.method.clone(),
        path: entry.path.clone(),
        query: entry.query.clone(),
        body: entry.body.clone(),
        if_match: entry.if_match.clone(),
        applied: entry.applied,
    }
}

/// Installs the fault rule `fault` (the fake's rule format) on `fake` from now on.
pub(crate) fn add_fault(fake: &FakeIncus, fault: &Value) -> Result<(), String> {
    fake.add_rule(rule(fault)?)
        .map_err(|e| format!("fault rule {fault} refused: {e}"))?
        .forget();
    Ok(())
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the fake backend); a promise of the harness
    //! seen from outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::super::load;
    use super::*;
    use serde_json::json;

    fn starts(setup: &FakeSetup) -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async { start(setup).await.map(drop) })
    }

    #[test]
    fn every_scenario_setup_is_accepted_by_the_fake() {
        for file in load::builtin().into_iter().chain(load::builtin_cluster()) {
            let scenario = file.scenario.unwrap();
            if let Some(setup) = &scenario.fake {
                starts(setup).unwrap_or_else(|e| panic!("{}: {e}", file.origin));
            }
        }
    }

    #[test]
    fn a_rule_the_fake_does_not_know_is_a_clear_error() {
        let setup = FakeSetup {
            seed: None,
            faults: vec![json!({"path": "/1.0", "fault": {"kind": "explode"}})],
        };
        let error = starts(&setup).unwrap_err();
        assert!(error.contains("is not a fake-incus rule"), "{error}");
    }
}
