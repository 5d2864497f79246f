//! Shared by the `run_*` tests: a fake Incus, a scriptable host, and a `call` that checks every
//! result against the operation's output schema.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fake_incus::{FakeIncus, FakeIncusBuilder, IncusLine, JournalEntry};
use incus_operations::{
    run, Binding, BindingContext, Connection, Endpoint, Host, HostError, ImageRemote,
    RestrictedItem, RunOptions, Scope,
};
use serde_json::{json, Value};

/// Every scope.
pub(crate) const ALL: [Scope; 4] = [Scope::Read, Scope::Write, Scope::Exec, Scope::Delete];

/// The per-request timeout the tests' connections use (so the effective wait is at most 4 s).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// How a scripted callback behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    Allow,
    Deny,
    Panic,
    Hang,
    /// binding: a malformed default project; image_remote: a URL that is not https.
    Malformed,
}

/// A host whose callbacks do what the test says, and that records what `authorize` saw.
pub(crate) struct TestHost {
    pub(crate) connection: Connection,
    pub(crate) binding: Act,
    pub(crate) authorize: Act,
    pub(crate) image_remote: Act,
    pub(crate) restricted: Act,
    pub(crate) default_project: Option<String>,
    pub(crate) authorized: Mutex<Vec<Value>>,
    pub(crate) calls: Mutex<Vec<&'static str>>,
    /// Every item `allow_restricted` was asked about, in order.
    pub(crate) restricted_items: Mutex<Vec<RestrictedItem>>,
}

impl TestHost {
    pub(crate) fn new(connection: Connection) -> Self {
        TestHost {
            connection,
            binding: Act::Allow,
            authorize: Act::Allow,
            image_remote: Act::Deny,
            restricted: Act::Deny,
            default_project: None,
            authorized: Mutex::new(Vec::new()),
            calls: Mutex::new(Vec::new()),
            restricted_items: Mutex::new(Vec::new()),
        }
    }

    fn record(&self, callback: &'static str) {
        self.calls.lock().unwrap().push(callback);
    }

    pub(crate) fn callbacks(&self) -> Vec<&'static str> {
        self.calls.lock().unwrap().clone()
    }
}

async fn act(act: Act) {
    match act {
        Act::Panic => panic!("scripted host panic"),
        Act::Hang => std::future::pending::<()>().await,
        _ => {}
    }
}

impl Host for TestHost {
    type Caller = String;

    async fn binding(&self, _caller: &String, _operation: &str) -> Result<Binding, HostError> {
        self.record("binding");
        act(self.binding).await;
        let context = match (self.binding, &self.default_project) {
            (Act::Malformed, _) => BindingContext::default().default_project("no/slashes allowed"),
            (_, Some(project)) => BindingContext::default().default_project(project.clone()),
            _ => BindingContext::default(),
        };
        match self.binding {
            Act::Deny => Err(HostError::Denied("no backend for this caller".into())),
            _ => Ok(Binding::connection(self.connection.clone(), context)),
        }
    }

    async fn authorize(
        &self,
        _caller: &String,
        _operation: &str,
        input: &Value,
    ) -> Result<(), HostError> {
        self.record("authorize");
        self.authorized.lock().unwrap().push(input.clone());
        act(self.authorize).await;
        match self.authorize {
            Act::Deny | Act::Malformed => Err(HostError::Denied("policy says no".into())),
            _ => Ok(()),
        }
    }

    async fn image_remote(&self, _caller: &String, name: &str) -> Result<ImageRemote, HostError> {
        self.record("image_remote");
        act(self.image_remote).await;
        match self.image_remote {
            Act::Allow => Ok(ImageRemote::new(
                "https://images.example.org",
                "simplestreams",
            )),
            Act::Malformed => Ok(ImageRemote::new("file:///etc/passwd", "simplestreams")),
            _ => Err(HostError::UnknownRemote(name.to_owned())),
        }
    }

    async fn allow_restricted(
        &self,
        _caller: &String,
        _operation: &str,
        items: &[RestrictedItem],
    ) -> bool {
        self.record("allow_restricted");
        self.restricted_items
            .lock()
            .unwrap()
            .extend(items.iter().cloned());
        act(self.restricted).await;
        self.restricted == Act::Allow
    }
}

/// The Incus line the `run_*` tests' expectations were measured on: the real 6.0.4 (a create of a
/// taken name fails in its operation, a wait answers a failure as an error, a pool's volume list
/// holds the snapshots). The conformance suites certify the operations on every line.
pub(crate) const MEASURED: IncusLine = IncusLine::V6_0;

/// A builder of a fake that imitates [`MEASURED`].
pub(crate) fn fake_builder() -> FakeIncusBuilder {
    FakeIncus::builder().incus_version(MEASURED)
}

/// A fake Incus and a connection to its Unix socket.
pub(crate) struct Bench {
    pub(crate) fake: FakeIncus,
    pub(crate) connection: Connection,
}

impl Bench {
    pub(crate) async fn start() -> Bench {
        Bench::with(fake_builder()).await
    }

    pub(crate) async fn with(builder: FakeIncusBuilder) -> Bench {
        Bench::with_timeout(builder, TIMEOUT).await
    }

    pub(crate) async fn with_timeout(builder: FakeIncusBuilder, timeout: Duration) -> Bench {
        let fake = builder.start().await.expect("fake starts");
        let connection = Connection::builder(Endpoint::unix(fake.unix_socket()))
            .timeout(timeout)
            .build()
            .expect("connection");
        Bench { fake, connection }
    }

    pub(crate) fn host(&self) -> TestHost {
        TestHost::new(self.connection.clone())
    }

    /// Runs an operation with every scope through a host that allows everything.
    pub(crate) async fn call(&self, name: &str, input: Value) -> Value {
        let host = self.host();
        call_with(&host, name, input, &ALL).await
    }

    /// The journal without the discovery requests (`GET /1.0`).
    pub(crate) fn requests(&self) -> Vec<JournalEntry> {
        self.fake
            .journal()
            .into_iter()
            .filter(|entry| !(entry.method == "GET" && entry.path == "/1.0"))
            .collect()
    }

    /// How many journal entries match a method and path.
    pub(crate) fn count(&self, method: &str, path: &str) -> usize {
        self.fake.requests(method, path).len()
    }

    /// Creates a stopped busybox instance through `run`.
    pub(crate) async fn instance(&self, name: &str) {
        let result = self
            .call(
                "incus_instance_create",
                json!({"name": name, "source": {"type": "image", "alias": "busybox"}}),
            )
            .await;
        assert_eq!(result["status"], "completed", "{result}");
    }

    /// Creates and starts a busybox instance through `run`.
    pub(crate) async fn running_instance(&self, name: &str) {
        let result = self
            .call(
                "incus_instance_create",
                json!({"name": name, "source": {"type": "image", "alias": "busybox"}, "start": true}),
            )
            .await;
        assert_eq!(result["status"], "completed", "{result}");
    }
}

/// Runs an operation through `host` with `scopes`, asserting the result matches the output
/// schema (or, for an unknown name, the error shape).
pub(crate) async fn call_with(
    host: &TestHost,
    name: &str,
    input: Value,
    scopes: &[Scope],
) -> Value {
    let caller = String::from("agent");
    let options = RunOptions::new(host, &caller, scopes.iter().copied())
        .callback_timeout(Duration::from_millis(300));
    let result = run(name, input, options).await;
    assert_valid(name, &result);
    result
}

/// Runs an operation with every scope and a bound on the whole call.
pub(crate) async fn call_bounded(
    host: &TestHost,
    name: &str,
    input: Value,
    bound: Duration,
) -> Value {
    let caller = String::from("agent");
    let options = RunOptions::new(host, &caller, ALL)
        .callback_timeout(Duration::from_millis(300))
        .call_timeout(bound);
    let result = run(name, input, options).await;
    assert_valid(name, &result);
    result
}

/// Asserts that `result` validates against the output schema of `name`.
pub(crate) fn assert_valid(name: &str, result: &Value) {
    static VALIDATORS: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> =
        OnceLock::new();
    let Some(described) = incus_operations::describe(name) else {
        assert_eq!(result["error"]["kind"], "unknown_operation", "{result}");
        assert!(result["error"]["message"].is_string(), "{result}");
        return;
    };
    let validator = VALIDATORS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(name.to_owned())
        .or_insert_with(|| {
            Arc::new(
                jsonschema::validator_for(&described["output_schema"])
                    .expect("output schema compiles"),
            )
        })
        .clone();
    let errors: Vec<String> = validator
        .iter_errors(result)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{name} result does not match its output schema: {errors:?}\n{result}"
    );
}

/// The error kind of a result, or "" for a success.
pub(crate) fn kind(result: &Value) -> &str {
    result["error"]["kind"].as_str().unwrap_or_default()
}
