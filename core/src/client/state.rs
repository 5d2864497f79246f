//! Instance state (Go: `GetInstanceState`, `UpdateInstanceState`).

use http::Method;
use serde_json::Value;

use super::error::ClientError;
use super::query::{target, Accepted, Single};
use super::Client;

impl Client {
    /// `GET /1.0/instances/{name}/state` (no ETag).
    pub(crate) async fn get_instance_state(
        &self,
        project: &str,
        name: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(state_target(project, name)).await
    }

    /// `PUT /1.0/instances/{name}/state` with `{"action", "timeout", "force", "stateful"}`;
    /// Incus answers with an operation.
    pub(crate) async fn update_instance_state(
        &self,
        project: &str,
        name: &str,
        body: &Value,
    ) -> Result<Accepted, ClientError> {
        self.query_operation(Method::PUT, state_target(project, name), Some(body), None)
            .await
    }
}

fn state_target(project: &str, name: &str) -> String {
    target(
        &["1.0", "instances", name, "state"],
        &[("project", project)],
    )
}
