//! `/1.0/storage-pools[/{pool}[/volumes[/{type}[/{name}]]]]`: pools and volumes; custom
//! volumes are writable (see [`volumes`]).

use super::volume_snapshots;
use super::volumes::{self, pool_not_found};
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use http::{HeaderMap, Method};
use serde_json::{json, Value};

const VOLUME_TYPES: &[&str] = &["container", "virtual-machine", "image", "custom"];

pub(super) fn route(
    ctx: &Ctx,
    method: &Method,
    rest: &[&str],
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult {
    if method != Method::GET && !is_volume_write(method, rest) {
        return match rest.len() {
            0..=5 => Err(ApiError::not_implemented()),
            _ => Err(ApiError::not_found()),
        };
    }
    match rest {
        [_, "volumes"] | [_, "volumes", _] => {
            ctx.require_project(|_| "Project not found".into())?
        }
        [_, "volumes", ..] => {
            ctx.require_project(|p| format!("Failed to load project \"{p}\": Project not found"))?
        }
        _ => {}
    }
    match (rest, method.as_str()) {
        ([], _) => list_pools(ctx),
        ([pool], _) => get_pool(ctx, pool),
        ([pool, "volumes"] | [pool, "volumes", "custom"], "POST")
            if volume_snapshots::is_copy(body) =>
        {
            volume_snapshots::copy(ctx, pool, body)
        }
        ([pool, "volumes"], "POST") => volumes::create(ctx, pool, None, body),
        ([pool, "volumes"], _) => list_volumes(ctx, pool, None),
        ([_, "volumes", kind, ..], _) if !VOLUME_TYPES.contains(kind) => {
            Err(ApiError::bad_request("Invalid storage volume type name"))
        }
        ([pool, "volumes", kind], "POST") => volumes::create(ctx, pool, Some(kind), body),
        ([pool, "volumes", kind], _) => list_volumes(ctx, pool, Some(kind)),
        ([pool, "volumes", "custom", name], "PUT")
            if volume_snapshots::restore_request(body).is_some() =>
        {
            volume_snapshots::restore(ctx, pool, name, body)
        }
        ([pool, "volumes", "custom", name], "PUT") => {
            volumes::update(ctx, pool, name, headers, body, false)
        }
        ([pool, "volumes", "custom", name], "PATCH") => {
            volumes::update(ctx, pool, name, headers, body, true)
        }
        ([pool, "volumes", "custom", name], "DELETE") => {
            let answer = volumes::delete(ctx, pool, name)?;
            volume_snapshots::forget(ctx, pool, name);
            Ok(answer)
        }
        ([pool, "volumes", "custom", name], "POST") => {
            let answer = volumes::rename(ctx, pool, name, body)?;
            volume_snapshots::follow_rename(ctx, pool, name, body);
            Ok(answer)
        }
        ([pool, "volumes", "custom", name, tail @ ..], _)
            if matches!(tail.first(), Some(&"snapshots" | &"state")) =>
        {
            volume_snapshots::route(ctx, method, pool, name, tail, headers, body)
        }
        ([pool, "volumes", kind, name], _) => get_volume(ctx, pool, kind, name),
        ([pool, "volumes", kind, name, "snapshots", snap], _) => {
            get_volume(ctx, pool, kind, &format!("{name}/{snap}"))
        }
        _ => Err(ApiError::not_found()),
    }
}

/// The writes handled here: create in a volume collection, and PUT, PATCH, DELETE and rename of a
/// custom volume (see [`volumes`]).
fn is_volume_write(method: &Method, rest: &[&str]) -> bool {
    match rest {
        [_, "volumes"] | [_, "volumes", _] => *method == Method::POST,
        [_, "volumes", "custom", _] => {
            [Method::PUT, Method::PATCH, Method::DELETE, Method::POST].contains(method)
        }
        [_, "volumes", "custom", _, "snapshots" | "state", ..] => true,
        _ => false,
    }
}

fn list_pools(ctx: &Ctx) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let items: Vec<Value> = state
        .storage_pools
        .iter()
        .map(|p| {
            if ctx.recursion() == 0 {
                json!(format!("/1.0/storage-pools/{}", p.name))
            } else {
                p.to_json(state)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

fn get_pool(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let pool = state
        .storage_pools
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(pool_not_found)?;
    Ok(envelope::sync_etag(pool.to_json(state), &pool.etag()))
}

fn list_volumes(ctx: &Ctx, pool: &str, kind: Option<&str>) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return Err(pool_not_found());
    }
    let mut items = Vec::new();
    for project in ctx.projects() {
        for volume in state.volumes(pool, &project) {
            if kind.is_some_and(|k| k != volume.kind) {
                continue;
            }
            items.push(if ctx.recursion() == 0 {
                json!(volume.url(pool))
            } else {
                volume.to_json()
            });
        }
    }
    Ok(envelope::sync(Value::Array(items)))
}

fn get_volume(ctx: &Ctx, pool: &str, kind: &str, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return Err(pool_not_found());
    }
    let volume = state
        .volumes(pool, &ctx.project())
        .into_iter()
        .find(|v| v.kind == kind && v.name == name)
        .ok_or_else(|| ApiError::new(404, "Storage pool volume not found"))?;
    Ok(envelope::sync_etag(volume.to_json(), &volume.etag()))
}
