//! Instances (Go: `GetInstances`, `GetInstance`, `CreateInstance`, `UpdateInstance`,
//! `DeleteInstance`) and the raw conditional PATCH the Go client lacks.

use http::Method;
use serde_json::Value;

use super::error::ClientError;
use super::query::{target, Accepted, ListItem, Single};
use super::Client;

impl Client {
    /// `GET /1.0/instances?recursion=1`: instance objects in native order.
    pub(crate) async fn get_instances(&self, project: &str) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "instances"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `GET /1.0/instances/{name}`: the instance and its ETag.
    pub(crate) async fn get_instance(
        &self,
        project: &str,
        name: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(instance_target(project, name)).await
    }

    /// `POST /1.0/instances` with the native create body; Incus answers with an operation.
    pub(crate) async fn create_instance(
        &self,
        project: &str,
        body: &Value,
    ) -> Result<Accepted, ClientError> {
        let target = target(&["1.0", "instances"], &[("project", project)]);
        self.query_operation(Method::POST, target, Some(body), None)
            .await
    }

    /// `PUT /1.0/instances/{name}` (full replace, or restore with `{"restore": snapshot}`),
    /// conditional on `etag` when given; Incus answers with an operation.
    pub(crate) async fn update_instance(
        &self,
        project: &str,
        name: &str,
        body: &Value,
        etag: Option<&str>,
    ) -> Result<Accepted, ClientError> {
        self.query_operation(
            Method::PUT,
            instance_target(project, name),
            Some(body),
            etag,
        )
        .await
    }

    /// `PATCH /1.0/instances/{name}` with `If-Match: etag`: a partial update that Incus
    /// applies synchronously (200 with `{}`); a stale ETag is a native 412.
    pub(crate) async fn patch_instance(
        &self,
        project: &str,
        name: &str,
        body: &Value,
        etag: &str,
    ) -> Result<(), ClientError> {
        self.query_empty(
            Method::PATCH,
            instance_target(project, name),
            Some(body),
            Some(etag),
        )
        .await
    }

    /// `DELETE /1.0/instances/{name}`; Incus answers with an operation.
    pub(crate) async fn delete_instance(
        &self,
        project: &str,
        name: &str,
    ) -> Result<Accepted, ClientError> {
        self.query_operation(Method::DELETE, instance_target(project, name), None, None)
            .await
    }
}

fn instance_target(project: &str, name: &str) -> String {
    target(&["1.0", "instances", name], &[("project", project)])
}
