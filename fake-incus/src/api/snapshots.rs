//! `/1.0/instances/{name}/snapshots[/{snap}]`: list, get, create, delete.

use super::{instance_not_found, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::operations::OpSpec;
use crate::state::State;
use http::Method;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str], body: &[u8]) -> ApiResult {
    match (rest, method.as_str()) {
        ([name, "snapshots"], "GET") => list(ctx, name),
        ([name, "snapshots"], "POST") => create(ctx, name, body),
        ([_, "snapshots"], _) => Err(ApiError::not_implemented()),
        ([name, "snapshots", snap], "GET") => get(ctx, name, snap),
        ([name, "snapshots", snap], "DELETE") => delete(ctx, name, snap),
        ([_, "snapshots", _], _) => Err(ApiError::not_implemented()),
        _ => Err(ApiError::not_found()),
    }
}

fn snapshot_not_found(instance: &str, snap: &str, project: &str) -> ApiError {
    ApiError::new(
        404,
        format!("Failed to fetch snapshot \"{snap}\" of instance \"{instance}\" in project \"{project}\": Instance_snapshot not found"),
    )
}

fn list(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let Some(instance) = state.instance(&project, name) else {
        return Ok(envelope::sync(json!([])));
    };
    let items: Vec<Value> = instance
        .snapshots
        .iter()
        .map(|s| {
            if ctx.recursion() == 0 {
                json!(s.url(instance))
            } else {
                s.to_json(instance, state)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

fn get(ctx: &Ctx, name: &str, snap: &str) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let instance = state
        .instance(&project, name)
        .ok_or_else(|| snapshot_not_found(name, snap, &project))?;
    let snapshot = instance
        .snapshot(snap)
        .ok_or_else(|| snapshot_not_found(name, snap, &project))?;
    Ok(envelope::sync_etag(
        snapshot.to_json(instance, state),
        &snapshot.etag(),
    ))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    stateful: bool,
    expires_at: Option<String>,
}

fn create(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let (instance_url, snap_name, snap_url) = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| instance_not_found(name, &project))?;
        let req: CreateBody = parse_body(body)?;
        if req.name.contains('/') {
            return Err(ApiError::bad_request(
                "Invalid snapshot name: Cannot contain \"/\"",
            ));
        }
        let snap = if req.name.is_empty() {
            instance.next_snapshot_name()
        } else {
            req.name.clone()
        };
        let snap_url =
            crate::state::url(&format!("/1.0/instances/{name}/snapshots/{snap}"), &project);
        (instance.url(), (snap, req), snap_url)
    };
    let (snap, req) = snap_name;
    let mut spec = OpSpec::task(&project, "Snapshotting instance", instance_url);
    spec.resources
        .insert("instances_snapshots".into(), vec![snap_url]);
    let name = name.to_string();
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(spec, Box::new(move |state: &mut State| {
            let instance = state.instance_mut(&project, &name).ok_or_else(|| instance_not_found(&name, &project))?;
            if instance.snapshot(&snap).is_some() {
                return Err(ApiError::internal(format!(
                    "Failed creating instance snapshot record \"{snap}\": Add snapshot info to the database: Failed to create \"instances_snapshots\" entry: UNIQUE constraint failed: instances_snapshots.instance_id, instances_snapshots.name"
                )));
            }
            let expires = req.expires_at.filter(|e| !e.is_empty());
            let snapshot = instance.take_snapshot(&snap, req.stateful, expires);
            instance.snapshots.push(snapshot);
            // The snapshot keeps the instance's files, as the daemon snapshots its rootfs.
            app.files().take_snapshot(&project, &name, &snap);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

fn delete(ctx: &Ctx, name: &str, snap: &str) -> ApiResult {
    let project = ctx.project();
    let (instance_url, snap_url) = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| snapshot_not_found(name, snap, &project))?;
        let snapshot = instance
            .snapshot(snap)
            .ok_or_else(|| snapshot_not_found(name, snap, &project))?;
        (instance.url(), snapshot.url(instance))
    };
    let mut spec = OpSpec::task(&project, "Deleting snapshot", instance_url);
    spec.resources = BTreeMap::from([
        (
            "instances".to_string(),
            spec.resources.remove("instances").unwrap_or_default(),
        ),
        ("instances_snapshots".to_string(), vec![snap_url]),
    ]);
    let (name, snap) = (name.to_string(), snap.to_string());
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if let Some(instance) = state.instance_mut(&project, &name) {
                instance.snapshots.retain(|s| s.name != snap);
            }
            app.files().remove_snapshot(&project, &name, &snap);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
