//! `/1.0/storage-pools`: pools (declared: list, get, create, update, delete, `resources`) and
//! the volume endpoints that are not a custom volume's own (those are declared in
//! [`super::volumes`]): every volume of a pool, the volumes of an instance type, and their gets.

use super::resource::{At, Decl, Resource, Sub, Typed, Verb};
use super::{pool_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::{Pool, State};
use serde_json::{json, Value};

const VOLUME_TYPES: &[&str] = &["container", "virtual-machine", "image", "custom"];

pub(super) struct Pools;

static DECL: Decl = Decl {
    collection: "/1.0/storage-pools",
    not_found: "Storage pool not found",
    exists: (409, "The storage pool already exists: The record already exists"),
    store: &STORE,
    subs: &[Sub {
        method: "GET",
        path: &["resources"],
        serve: resources,
        does: "Zero space and inodes: the fake stores no data.",
    }],
    limits: "Only the `dir` driver: other drivers answer as a daemon without their tools. No space is used or reserved (`resources` reports a fixed size).",
    ..Decl::DEFAULTS
};

static STORE: Typed<Pool> = Typed::rows(|s| &s.storage_pools, |s| &mut s.storage_pools);

fn pool(object: Value) -> Option<Pool> {
    serde_json::from_value(object).ok()
}

/// The tools a driver needs, for the daemon's answer when they are missing.
const DRIVER_TOOLS: &[(&str, &str)] = &[
    ("btrfs", "btrfs"),
    ("lvm", "lvm"),
    ("zfs", "zpool"),
    ("ceph", "ceph"),
    ("cephfs", "ceph"),
    ("cephobject", "radosgw-admin"),
    ("lvmcluster", "lvm"),
];

impl Resource for Pools {
    fn decl(&self) -> &Decl {
        &DECL
    }
    fn template(&self) -> Value {
        json!({"description": "", "config": {}, "driver": ""})
    }
    fn check_key(&self, key: &str, at: &At) -> Result<(), ApiError> {
        match key {
            "" => Err(ApiError::bad_request("No name provided")),
            k if super::resource::names_are_api_names(at) => {
                super::resource::api_name(at, "storage pool", k)
            }
            k if k.contains('/') => Err(ApiError::bad_request(
                "Storage pool names may not contain slashes",
            )),
            _ => Ok(()),
        }
    }
    fn validate(
        &self,
        _: &State,
        _: &At,
        object: &Value,
        current: Option<&Value>,
    ) -> Result<(), ApiError> {
        if current.is_some() {
            return Ok(());
        }
        match object["driver"].as_str().unwrap_or_default() {
            "" => Err(ApiError::bad_request("No driver provided")),
            "dir" => Ok(()),
            driver => match DRIVER_TOOLS.iter().find(|(d, _)| *d == driver) {
                Some((_, tool)) => Err(ApiError::internal(format!(
                    "Required tool '{tool}' is missing"
                ))),
                None => Err(ApiError::internal("Unknown driver")),
            },
        }
    }
    fn render(&self, state: &State, _: &At, object: Value) -> Value {
        pool(object).map(|p| p.to_json(state)).unwrap_or_default()
    }
    fn etag(&self, object: &Value) -> String {
        pool(object.clone()).map(|p| p.etag()).unwrap_or_default()
    }
    fn created(&self, _: &Ctx, state: &mut State, _: &At, object: &Value) {
        let name = object["name"].as_str().unwrap_or_default();
        if let Some(pool) = state.storage_pools.iter_mut().find(|p| p.name == name) {
            pool.config
                .entry("source".into())
                .or_insert_with(|| format!("/var/lib/incus/storage-pools/{name}"));
        }
    }
    fn refuse(&self, state: &State, _: &At, key: &str, _: Verb) -> Result<(), ApiError> {
        let in_use = state
            .storage_pools
            .iter()
            .find(|p| p.name == key)
            .is_some_and(|p| {
                p.to_json(state)["used_by"]
                    .as_array()
                    .is_some_and(|u| !u.is_empty())
            });
        if in_use {
            return Err(ApiError::bad_request(
                "The storage pool is currently in use",
            ));
        }
        Ok(())
    }
}

fn resources(ctx: &Ctx, _: &At, key: &str, _: &[&str]) -> ApiResult {
    if !ctx
        .app
        .snapshot()
        .state
        .storage_pools
        .iter()
        .any(|p| p.name == key)
    {
        return Err(ApiError::internal("Storage pool not found"));
    }
    Ok(envelope::sync(super::resources::pool_usage()))
}

/// 400 unless `kind` is a volume type of the API.
pub(super) fn check_type(kind: &str) -> Result<(), ApiError> {
    if VOLUME_TYPES.contains(&kind) {
        Ok(())
    } else {
        Err(ApiError::bad_request("Invalid storage volume type name"))
    }
}

pub(super) fn list_volumes(ctx: &Ctx, pool: &str, kind: Option<&str>) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return Err(pool_not_found());
    }
    let mut items = Vec::new();
    let snapshots = !ctx
        .app
        .has_extension(crate::line::POOL_VOLUME_LISTS_LEAVE_OUT_SNAPSHOTS);
    for project in ctx.projects() {
        for volume in state.volumes(pool, &project) {
            if kind.is_some_and(|k| k != volume.kind) || (volume.is_snapshot() && !snapshots) {
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
