//! Instance snapshots (Go: `GetInstanceSnapshots`, `GetInstanceSnapshot`,
//! `CreateInstanceSnapshot`, `DeleteInstanceSnapshot`). Restoring is `UpdateInstance` with
//! `{"restore": snapshot}` (see `instances`).

use http::Method;
use serde_json::Value;

use super::error::ClientError;
use super::query::{target, Accepted, ListItem, Single};
use super::Client;

impl Client {
    /// `GET /1.0/instances/{instance}/snapshots?recursion=1`.
    pub(crate) async fn get_instance_snapshots(
        &self,
        project: &str,
        instance: &str,
    ) -> Result<Vec<ListItem>, ClientError> {
        self.query_list(target(
            &["1.0", "instances", instance, "snapshots"],
            &[("recursion", "1"), ("project", project)],
        ))
        .await
    }

    /// `GET /1.0/instances/{instance}/snapshots/{snapshot}`, with its ETag.
    pub(crate) async fn get_instance_snapshot(
        &self,
        project: &str,
        instance: &str,
        snapshot: &str,
    ) -> Result<Single, ClientError> {
        self.query_value(snapshot_target(project, instance, snapshot))
            .await
    }

    /// `POST /1.0/instances/{instance}/snapshots` with `{"name", "stateful", ...}`.
    pub(crate) async fn create_instance_snapshot(
        &self,
        project: &str,
        instance: &str,
        body: &Value,
    ) -> Result<Accepted, ClientError> {
        let target = target(
            &["1.0", "instances", instance, "snapshots"],
            &[("project", project)],
        );
        self.query_operation(Method::POST, target, Some(body), None)
            .await
    }

    /// `DELETE /1.0/instances/{instance}/snapshots/{snapshot}`.
    pub(crate) async fn delete_instance_snapshot(
        &self,
        project: &str,
        instance: &str,
        snapshot: &str,
    ) -> Result<Accepted, ClientError> {
        self.query_operation(
            Method::DELETE,
            snapshot_target(project, instance, snapshot),
            None,
            None,
        )
        .await
    }
}

fn snapshot_target(project: &str, instance: &str, snapshot: &str) -> String {
    target(
        &["1.0", "instances", instance, "snapshots", snapshot],
        &[("project", project)],
    )
}
