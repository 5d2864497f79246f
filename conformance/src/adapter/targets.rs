//! The wire backend of the suites: one embedded fake Incus per target, as for the core, and every
//! call sent to the implementation under test as a [`CallRequest`].

use std::sync::Arc;

use fake_incus::FakeIncus;
use serde_json::{json, Value};

use super::protocol::{Backend, CallRequest, HttpsBackend, ADAPTER_ERROR, PROTOCOL};
use super::transport::Transport;
use crate::scenario::fake::{self, Listener};
use crate::scenario::format::FakeSetup;
use crate::scenario::host::{ConnectionLimits, HostBehaviour};
use crate::scenario::target::{BoxFuture, Request, Target, TargetFactory};

/// The caller every request names.
pub const CALLER: &str = "conformance";

/// The error kind of a result the harness makes up when the adapter gave none: it is in no
/// output schema, so every trial that looks at the result fails with the adapter's problem.
pub const NO_ANSWER: &str = "adapter_gave_no_result";

/// Starts a fake Incus per target and sends every call to the adapter behind `transport`.
#[derive(Clone)]
pub struct WireTargets {
    transport: Arc<dyn Transport>,
    listener: Listener,
    host: HostBehaviour,
    limits: ConnectionLimits,
}

impl WireTargets {
    /// Targets whose calls go through `transport`, with the reference host's behaviour and the
    /// implementation's default connection bounds, over the fake's Unix socket.
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        Self {
            transport,
            listener: Listener::Unix,
            host: HostBehaviour::default(),
            limits: ConnectionLimits::default(),
        }
    }

    /// Which listener of the fake the backend names (the Unix socket by default).
    pub fn listener(mut self, listener: Listener) -> Self {
        self.listener = listener;
        self
    }

    fn backend(&self, fake: &FakeIncus) -> Result<Backend, String> {
        let (unix_socket, https) = match self.listener {
            Listener::Unix => (Some(fake.unix_socket().to_path_buf()), None),
            Listener::Https => {
                let url = fake
                    .https_url()
                    .ok_or("the fake Incus was started without HTTPS")?;
                let https = HttpsBackend {
                    url,
                    client_cert: fake.client_cert_pem(),
                    client_key: fake.client_key_pem(),
                    server_cert: fake.server_cert_pem(),
                };
                (None, Some(https))
            }
        };
        Ok(Backend {
            unix_socket,
            https,
            limits: self.limits,
        })
    }
}

/// A fake Incus and the request every call of the trial starts from.
struct WireTarget {
    /// The trial's own fake (none when the harness keeps the Incus itself: a cluster's member).
    fake: Option<FakeIncus>,
    transport: Arc<dyn Transport>,
    backend: Backend,
    host: HostBehaviour,
}

impl TargetFactory for WireTargets {
    fn start<'a>(&'a self, setup: &'a FakeSetup) -> BoxFuture<'a, Result<Box<dyn Target>, String>> {
        Box::pin(async move {
            let fake = fake::start_with(setup, self.listener == Listener::Https).await?;
            let backend = self.backend(&fake)?;
            Ok(Box::new(WireTarget {
                fake: Some(fake),
                transport: Arc::clone(&self.transport),
                backend,
                host: self.host.clone(),
            }) as Box<dyn Target>)
        })
    }

    fn is_fake(&self) -> bool {
        true
    }

    fn with_host(
        &self,
        host: &HostBehaviour,
        limits: &ConnectionLimits,
    ) -> Option<Arc<dyn TargetFactory>> {
        Some(Arc::new(Self {
            host: host.clone(),
            limits: *limits,
            ..self.clone()
        }))
    }

    fn bound_to(&self, socket: &std::path::Path) -> Option<Box<dyn Target>> {
        Some(Box::new(WireTarget {
            fake: None,
            transport: Arc::clone(&self.transport),
            backend: Backend {
                unix_socket: Some(socket.to_path_buf()),
                https: None,
                limits: self.limits,
            },
            host: self.host.clone(),
        }))
    }
}

/// The result standing in for an answer the adapter did not give.
fn no_answer(problem: &str) -> Value {
    json!({"error": {"kind": NO_ANSWER, "message": problem}})
}

impl Target for WireTarget {
    fn call<'a>(
        &'a self,
        operation: &'a str,
        scopes: &'a [String],
        input: Value,
    ) -> BoxFuture<'a, Value> {
        let request = CallRequest {
            protocol: PROTOCOL.to_owned(),
            operation: operation.to_owned(),
            input,
            scopes: scopes.to_vec(),
            caller: CALLER.to_owned(),
            backend: self.backend.clone(),
            host: self.host.clone(),
        };
        Box::pin(async move {
            let text = match serde_json::to_string(&request) {
                Ok(text) => text,
                Err(e) => return no_answer(&format!("the request cannot be encoded: {e}")),
            };
            match self.transport.exchange(text).await {
                Ok(answer) => match answer.get(ADAPTER_ERROR) {
                    Some(problem) => {
                        no_answer(&format!("the adapter refused the request: {problem}"))
                    }
                    None if answer.is_object() => answer,
                    None => no_answer(&format!(
                        "the adapter answered {}, not a result object",
                        crate::scenario::matcher::short(&answer)
                    )),
                },
                Err(e) => no_answer(&e.to_string()),
            }
        })
    }

    fn journal(&self) -> Option<Vec<Request>> {
        self.fake.as_ref().map(fake::journal)
    }

    fn output_schema(&self, operation: &str) -> Option<Value> {
        incus_operations::fetch(operation).map(|d| d.output_schema().clone())
    }

    fn add_fault(&self, rule: &Value) -> Result<(), String> {
        match &self.fake {
            Some(fake) => fake::add_fault(fake, rule),
            None => Err("this target's Incus is the harness's own: fault rules go to it".into()),
        }
    }

    fn native<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
        body: Option<Value>,
    ) -> BoxFuture<'a, Result<(u16, Value), String>> {
        Box::pin(async move {
            match &self.fake {
                Some(fake) => fake::native_request(fake, method, path, body).await,
                None => Err("this target's Incus is the harness's own: setup goes to it".into()),
            }
        })
    }
}
