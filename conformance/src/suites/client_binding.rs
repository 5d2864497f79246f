//! A host may bind a caller to an already discovered client instead of a connection: the
//! operation then runs on that client without discovering again.

use std::sync::Arc;

use incus_operations::{Binding, Client, Connection, Host, HostError};
use serde_json::{json, Value};
use tokio::sync::OnceCell;

use super::host_target::{HostFactory, HostTargets};
use super::session::Session;
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;

/// A host that discovers its client once, on the first binding, and binds every call to it.
struct ClientHost {
    connection: Connection,
    client: OnceCell<Client>,
}

impl Host for ClientHost {
    type Caller = ();

    async fn binding(&self, _caller: &(), _operation: &str) -> Result<Binding, HostError> {
        let client = self
            .client
            .get_or_try_init(|| Client::connect(self.connection.clone()))
            .await
            .map_err(|e| HostError::Failed(e.to_string()))?;
        Ok(Binding::client(client.clone()))
    }

    async fn authorize(
        &self,
        _caller: &(),
        _operation: &str,
        _input: &Value,
    ) -> Result<(), HostError> {
        Ok(())
    }
}

fn targets() -> Arc<dyn TargetFactory> {
    let hosts: HostFactory<ClientHost> = Arc::new(|connection| {
        let host = ClientHost {
            connection,
            client: OnceCell::new(),
        };
        (host, ())
    });
    Arc::new(HostTargets::new(hosts))
}

/// The check (main job only: it uses its own host).
pub(crate) fn checks() -> Vec<Check> {
    vec![Check::new(
        "binding::trusted_backend::a_discovered_client_is_used_without_discovering_again",
        || {
            let session = Session::start(&targets(), &FakeSetup::default())?;
            let read = ["incus.read".to_owned()];
            let first = session.call("incus_project_list", &read, json!({}));
            let second = session.call("incus_instance_list", &read, json!({}));
            for called in [&first, &second] {
                if called.result.get("error").is_some() {
                    return Err(called.failure("a call on a discovered client failed"));
                }
                called.schema_valid()?;
            }
            let discoveries = second.sent("GET", "/1.0").unwrap_or_default();
            if discoveries == 0 {
                Ok(())
            } else {
                Err(second.failure("the second call discovered the server again"))
            }
        },
    )
    .in_process_only(
        "binds a caller to a Rust Client value (Binding::client), which has no wire form",
    )]
}
