//! Custom storage volumes: `POST /1.0/storage-pools/{pool}/volumes[/custom]` and `PUT`, `PATCH`,
//! `DELETE` and `POST` (rename) `/1.0/storage-pools/{pool}/volumes/custom/{name}`, as the daemon
//! answers them (all synchronous). Projects without `features.storage.volumes` use `default`'s volumes. A volume
//! attached as a disk device (`pool=POOL source=NAME`) is in its `used_by` and cannot be deleted.

use super::instances::check_etag;
use super::validation::volume_config_problem;
use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::{clock, url, Devices, State, StringMap, Volume};
use http::HeaderMap;
use serde::Deserialize;

/// `POST .../volumes[/{type}]` (Go `api.StorageVolumesPost`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct VolumeCreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(rename = "type", deserialize_with = "super::null_default")]
    kind: String,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(deserialize_with = "super::null_default")]
    config: StringMap,
}

/// `PUT`/`PATCH .../volumes/custom/{name}` (Go `api.StorageVolumePut`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct VolumePutBody {
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    config: Option<StringMap>,
}

/// `POST .../volumes/custom/{name}` (Go `api.StorageVolumePost`): a rename in the same pool.
#[derive(Deserialize, Default)]
#[serde(default)]
struct VolumeRenameBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    pool: String,
    #[serde(deserialize_with = "super::null_default")]
    migration: bool,
}

fn check_volume_name(name: &str) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(ApiError::bad_request("No name provided"));
    }
    if name.contains('/') {
        return Err(ApiError::bad_request(
            "Storage volume names may not contain slashes",
        ));
    }
    Ok(())
}

/// The custom volume `name` of `project` in `pool`, as it is now: the pool's 404 first, then
/// the volume's.
fn existing(state: &State, pool: &str, project: &str, name: &str) -> Result<Volume, ApiError> {
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return Err(pool_not_found());
    }
    state
        .custom_volume(pool, project, name)
        .cloned()
        .ok_or_else(volume_not_found)
}

fn volume_not_found() -> ApiError {
    ApiError::new(404, "Storage pool volume not found")
}

/// Creates a custom volume; `kind` is the type in the URL (`None`: the body's `type`).
pub(super) fn create(ctx: &Ctx, pool: &str, kind: Option<&str>, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let req: VolumeCreateBody = parse_body(body)?;
    let mut state = ctx.app.state();
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return Err(pool_not_found());
    }
    let kind = kind.unwrap_or(&req.kind);
    if kind != "custom" {
        return Err(ApiError::bad_request(format!(
            "Currently not allowed to create storage volumes of type \"{kind}\""
        )));
    }
    check_volume_name(&req.name)?;
    if state.custom_volume(pool, &project, &req.name).is_some() {
        return Err(ApiError::new(409, "Volume by that name already exists"));
    }
    if let Some(why) = volume_config_problem(&req.name, &req.config) {
        return Err(ApiError::internal(why));
    }
    let owner = state.volume_project(&project);
    state.storage_volumes.push(Volume {
        pool: pool.into(),
        project: owner,
        name: req.name,
        description: req.description,
        config: req.config,
        created_at: clock::now(),
    });
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}

/// `PUT` (config and description replaced) or `PATCH` (config merged; the description is
/// whatever the body says, `""` when absent, as the daemon does).
pub(super) fn update(
    ctx: &Ctx,
    pool: &str,
    name: &str,
    headers: &HeaderMap,
    body: &[u8],
    patch: bool,
) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let current = existing(&state, pool, &project, name)?;
    check_etag(headers, &current.etag())?;
    let req: VolumePutBody = parse_body(body)?;
    let mut config = if patch {
        current.config.clone()
    } else {
        StringMap::new()
    };
    config.extend(req.config.unwrap_or_default());
    // A key set to "" is removed, as the daemon stores it.
    config.retain(|_, value| !value.is_empty());
    let named = format!("{}_{}", current.project, current.name);
    if let Some(why) = volume_config_problem(&named, &config) {
        return Err(ApiError::internal(why));
    }
    if let Some(volume) = state
        .storage_volumes
        .iter_mut()
        .find(|v| v.pool == pool && v.project == current.project && v.name == name)
    {
        volume.config = config;
        volume.description = req.description;
    }
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}

/// Deletes a custom volume that nothing attaches.
pub(super) fn delete(ctx: &Ctx, pool: &str, name: &str) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let current = existing(&state, pool, &project, name)?;
    if !state.volume_used_by(&current).is_empty() {
        return Err(ApiError::bad_request("The storage volume is still in use"));
    }
    state
        .storage_volumes
        .retain(|v| !(v.pool == pool && v.project == current.project && v.name == name));
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}

/// Renames a custom volume in its pool (moves to another pool or server are not implemented):
/// 201 with the new URL, and the disk devices that attached it follow, as the daemon does.
pub(super) fn rename(ctx: &Ctx, pool: &str, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let req: VolumeRenameBody = parse_body(body)?;
    if req.migration || !(req.pool.is_empty() || req.pool == pool) {
        return Err(ApiError::not_implemented());
    }
    check_volume_name(&req.name)?;
    let mut state = ctx.app.state();
    let current = existing(&state, pool, &project, name)?;
    if state.custom_volume(pool, &project, &req.name).is_some() {
        return Err(ApiError::new(409, "Volume by that name already exists"));
    }
    let follow = |devices: &mut Devices| {
        for device in devices.values_mut() {
            let attaches = device.get("type").map(String::as_str) == Some("disk")
                && device.get("pool").map(String::as_str) == Some(pool)
                && device.get("source").map(String::as_str) == Some(name);
            if attaches {
                device.insert("source".into(), req.name.clone());
            }
        }
    };
    let users: Vec<(String, String)> = state
        .instances
        .iter()
        .filter(|i| state.volume_project(&i.project) == current.project)
        .filter(|i| {
            i.devices.values().any(|d| {
                d.get("pool").map(String::as_str) == Some(pool)
                    && d.get("source").map(String::as_str) == Some(name)
            })
        })
        .map(|i| (i.project.clone(), i.name.clone()))
        .collect();
    for (instance_project, instance) in users {
        if let Some(instance) = state.instance_mut(&instance_project, &instance) {
            follow(&mut instance.devices);
        }
    }
    let owner = current.project.clone();
    let profiles: Vec<usize> = (0..state.profiles.len())
        .filter(|&i| state.volume_project(&state.profiles[i].project) == owner)
        .collect();
    for i in profiles {
        follow(&mut state.profiles[i].devices);
    }
    if let Some(volume) = state
        .storage_volumes
        .iter_mut()
        .find(|v| v.pool == pool && v.project == owner && v.name == name)
    {
        volume.name.clone_from(&req.name);
    }
    drop(state);
    ctx.applied();
    let location = url(
        &format!("/1.0/storage-pools/{pool}/volumes/custom/{}", req.name),
        &owner,
    );
    super::profiles::created(&location)
}

/// The 404 of a storage pool that does not exist (the pool's own endpoints give it too).
pub(super) fn pool_not_found() -> ApiError {
    ApiError::new(404, "Storage pool not found")
}
