//! Custom volume snapshots (`/1.0/storage-pools/{pool}/volumes/custom/{name}/snapshots[/{snap}]`:
//! create, list, get, update, rename, delete), restoring one (`PUT` of the volume with
//! `restore`), the volume's state, and `storage volume copy` (a `Copying storage volume`
//! operation, the source's snapshots unless `volume_only`), as the daemon answers them.

use super::resource::check_etag;
use super::{parse_body, pool_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::volume_snapshots::VolumeSnapshot;
use crate::state::{clock, State, Volume};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(super) fn volume_not_found() -> ApiError {
    ApiError::new(404, "Storage pool volume not found")
}

/// The custom volume, or the pool's then the volume's 404.
pub(super) fn volume(state: &State, ctx: &Ctx, pool: &str, name: &str) -> Result<Volume, ApiError> {
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return Err(pool_not_found());
    }
    state
        .custom_volume(pool, &ctx.project(), name)
        .cloned()
        .ok_or_else(volume_not_found)
}

/// The snapshots of a volume, in creation order.
pub(super) fn snapshots_of<'a>(
    state: &'a State,
    volume: &'a Volume,
) -> impl Iterator<Item = &'a VolumeSnapshot> {
    state.volume_snapshots.iter().filter(move |s| {
        s.pool == volume.pool && s.project == volume.project && s.volume == volume.name
    })
}

fn snapshot(
    state: &State,
    ctx: &Ctx,
    pool: &str,
    name: &str,
    snap: &str,
) -> Result<VolumeSnapshot, ApiError> {
    let volume = volume(state, ctx, pool, name)?;
    let found = snapshots_of(state, &volume)
        .find(|s| s.name == snap)
        .cloned();
    found.ok_or_else(volume_not_found)
}

pub(super) fn list(ctx: &Ctx, pool: &str, name: &str) -> ApiResult {
    let state = ctx.app.state();
    let volume = volume(&state, ctx, pool, name)?;
    let items: Vec<Value> = snapshots_of(&state, &volume)
        .map(|s| {
            if ctx.recursion() == 0 {
                json!(format!(
                    "/1.0/storage-pools/{pool}/volumes/custom/{name}/snapshots/{}",
                    s.name
                ))
            } else {
                s.to_json(false)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

pub(super) fn get(ctx: &Ctx, pool: &str, name: &str, snap: &str) -> ApiResult {
    let found = snapshot(&ctx.app.state(), ctx, pool, name, snap)?;
    Ok(envelope::sync_etag(found.to_json(true), &found.etag()))
}

pub(super) fn spec(
    ctx: &Ctx,
    description: &'static str,
    resources: BTreeMap<String, Vec<String>>,
) -> OpSpec {
    OpSpec {
        project: ctx.project(),
        class: "task",
        description,
        resources,
        metadata: Value::Null,
        may_cancel: false,
        duration: std::time::Duration::ZERO,
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    expires_at: Option<String>,
}

/// A new snapshot name: on a line that checks it
/// ([`crate::line::OBJECT_NAMES_ARE_API_NAMES`]) as an API name, before that without `/`.
fn check_snapshot_name(ctx: &Ctx, name: &str) -> Result<(), ApiError> {
    if ctx
        .app
        .has_extension(crate::line::OBJECT_NAMES_ARE_API_NAMES)
    {
        return super::validation::checked_api_name(true, "storage volume snapshot", name);
    }
    if name.contains('/') {
        return Err(ApiError::bad_request("Storage name cannot contain \"/\""));
    }
    if name.chars().any(char::is_whitespace) {
        return Err(ApiError::bad_request(
            "Storage name cannot contain white space",
        ));
    }
    Ok(())
}

/// The name of a snapshot taken without one, from the volume's `snapshots.pattern`, as the
/// line's handler computes it ([`crate::state::snapshot_names`]).
fn generated_snapshot_name(ctx: &Ctx, state: &State, volume: &Volume) -> Result<String, ApiError> {
    use crate::state::snapshot_names::{self, PatternError};
    let error = |e: PatternError| ApiError::new(e.status(), e.to_string());
    let pattern = snapshot_names::pattern_or_default(
        volume.config.get("snapshots.pattern").map(String::as_str),
    );
    let rendered =
        snapshot_names::render(pattern, time::OffsetDateTime::now_utc()).map_err(error)?;
    // The index counts the snapshots of every custom volume of that name in the pool, whatever
    // its project (`GetNextStorageVolumeSnapshotIndex` has no project in its query).
    let indexed = state
        .volume_snapshots
        .iter()
        .filter(|s| s.pool == volume.pool && s.volume == volume.name)
        .map(|s| s.name.as_str());
    let has_index = rendered.matches("%d").count() == 1;
    if has_index
        || !ctx
            .app
            .has_extension(crate::line::VOLUME_SNAPSHOT_PATTERN_NEEDS_INDEX)
    {
        if !rendered.contains("%d") && indexed.clone().next().is_some() {
            // 6.0 splits the pattern at `%d` and reads the second part: an index out of range.
            return Err(ApiError::new(
                501,
                "fake-incus does not imitate this: Incus 6.0 panics (index out of range) naming a \
                 volume snapshot from a snapshots.pattern without %d once the volume has \
                 snapshots, and drops the connection",
            ));
        }
        let index = snapshot_names::next_index(&rendered, indexed);
        return crate::go::fmt::sprintf_index(&rendered, index)
            .ok_or_else(|| error(PatternError::Unsupported(rendered.clone())));
    }
    if rendered != pattern
        && ctx
            .app
            .has_extension(crate::line::VOLUME_SNAPSHOT_TEMPLATE_NAMES)
    {
        return Ok(rendered);
    }
    Err(ApiError::bad_request("Couldn't determine snapshot name"))
}

pub(super) fn create(ctx: &Ctx, pool: &str, name: &str, body: &[u8]) -> ApiResult {
    let volume = volume(&ctx.app.state(), ctx, pool, name)?;
    let req: CreateBody = parse_body(body)?;
    let snap = if req.name.is_empty() {
        generated_snapshot_name(ctx, &ctx.app.state(), &volume)?
    } else {
        // Only a name given is checked against the volume's snapshots before the operation.
        if snapshots_of(&ctx.app.state(), &volume).any(|s| s.name == req.name) {
            return Err(ApiError::new(
                409,
                format!("Snapshot {:?} already in use", req.name),
            ));
        }
        req.name.clone()
    };
    // The daemon checks the name it will use, a generated one too.
    check_snapshot_name(ctx, &snap)?;
    let expires_at = match req.expires_at.filter(|e| !e.is_empty()) {
        Some(at) => Some(super::snapshots::parse_time(&at)?),
        // Without an expiry in the request, the volume's `snapshots.expiry` from now.
        None => {
            let expression = volume
                .config
                .get("snapshots.expiry")
                .map_or("", String::as_str);
            crate::state::expiry::expiry(&clock::now(), expression)
                .map_err(ApiError::bad_request)?
        }
    };
    let taken = VolumeSnapshot {
        pool: volume.pool.clone(),
        project: volume.project.clone(),
        volume: volume.name.clone(),
        name: snap,
        description: volume.description.clone(),
        config: volume.config.clone(),
        created_at: clock::now(),
        expires_at,
    };
    let resources = BTreeMap::from([
        ("storage_volume_snapshots".to_string(), vec![taken.url()]),
        ("storage_volumes".to_string(), vec![volume.url()]),
    ]);
    let op = ctx.start_task(
        spec(ctx, "Creating storage volume snapshot", resources),
        Box::new(move |state: &mut State| {
            if state.volume_snapshots.iter().any(|s| {
                s.pool == taken.pool
                    && s.project == taken.project
                    && s.volume == taken.volume
                    && s.name == taken.name
            }) {
                // The storage backend's check (`backend.go`), on both lines.
                return Err(ApiError::new(409, "Snapshot by that name already exists"));
            }
            state.volume_snapshots.push(taken);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// Applies a change to one snapshot in the state.
fn change(
    state: &mut State,
    found: &VolumeSnapshot,
    apply: impl FnOnce(&mut VolumeSnapshot),
) -> Result<(), ApiError> {
    let snapshot = state
        .volume_snapshots
        .iter_mut()
        .find(|s| {
            s.pool == found.pool
                && s.project == found.project
                && s.volume == found.volume
                && s.name == found.name
        })
        .ok_or_else(volume_not_found)?;
    apply(snapshot);
    Ok(())
}

/// `PUT` (description and expiry replaced) and `PATCH` (the fields sent), synchronous.
pub(super) fn update(
    ctx: &Ctx,
    pool: &str,
    name: &str,
    snap: &str,
    headers: &HeaderMap,
    body: &[u8],
    patch: bool,
) -> ApiResult {
    let found = snapshot(&ctx.app.state(), ctx, pool, name, snap)?;
    check_etag(headers, &found.etag())?;
    let fields: serde_json::Map<String, Value> = parse_body(body)?;
    let description = match fields.get("description") {
        Some(Value::String(d)) => Some(d.clone()),
        _ if patch => None,
        _ => Some(String::new()),
    };
    let expires_at = match fields.get("expires_at") {
        Some(Value::String(at)) if at != clock::ZERO_TIME => {
            Some(Some(super::snapshots::parse_time(at)?))
        }
        Some(_) => Some(None),
        None if patch => None,
        None => Some(None),
    };
    change(&mut ctx.app.state(), &found, |s| {
        if let Some(description) = description {
            s.description = description;
        }
        if let Some(expires_at) = expires_at {
            s.expires_at = expires_at;
        }
    })?;
    ctx.applied();
    Ok(envelope::empty())
}

pub(super) fn rename(ctx: &Ctx, pool: &str, name: &str, snap: &str, body: &[u8]) -> ApiResult {
    let found = snapshot(&ctx.app.state(), ctx, pool, name, snap)?;
    let req: super::RenameBody = parse_body(body)?;
    check_snapshot_name(ctx, &req.name)?;
    let resources = BTreeMap::from([("storage_volume_snapshots".to_string(), vec![found.url()])]);
    let op = ctx.start_task(
        spec(ctx, "Renaming storage volume snapshot", resources),
        Box::new(move |state: &mut State| {
            let taken = state.volume_snapshots.iter().any(|s| {
                s.pool == found.pool
                    && s.project == found.project
                    && s.volume == found.volume
                    && s.name == req.name
            });
            if taken {
                return Err(ApiError::new(
                    409,
                    format!("Snapshot {:?} already in use", req.name),
                ));
            }
            change(state, &found, |s| s.name.clone_from(&req.name))?;
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

pub(super) fn delete(ctx: &Ctx, pool: &str, name: &str, snap: &str) -> ApiResult {
    let found = snapshot(&ctx.app.state(), ctx, pool, name, snap)?;
    let resources = BTreeMap::from([("storage_volume_snapshots".to_string(), vec![found.url()])]);
    let op = ctx.start_task(
        spec(ctx, "Deleting storage volume snapshot", resources),
        Box::new(move |state: &mut State| {
            state.volume_snapshots.retain(|s| {
                !(s.pool == found.pool
                    && s.project == found.project
                    && s.volume == found.volume
                    && s.name == found.name)
            });
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// The snapshot a volume `PUT` asks to restore (`{"restore": "snap"}`), if any.
pub(super) fn restore_request(body: &[u8]) -> Option<String> {
    let fields: serde_json::Map<String, Value> = serde_json::from_slice(body).ok()?;
    fields
        .get("restore")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Restores a volume's config from the snapshot a `PUT` names (synchronous `{}`), or the
/// daemon's 500 `Snapshot not found`, leaving the volume as it was.
pub(super) fn restore(ctx: &Ctx, pool: &str, name: &str, body: &[u8]) -> ApiResult {
    let snap = restore_request(body).unwrap_or_default();
    let mut state = ctx.app.state();
    let volume = volume(&state, ctx, pool, name)?;
    let found = snapshots_of(&state, &volume)
        .find(|s| s.name == snap)
        .cloned()
        .ok_or_else(|| ApiError::internal("Snapshot not found"))?;
    if let Some(target) = state
        .storage_volumes
        .iter_mut()
        .find(|v| v.pool == volume.pool && v.project == volume.project && v.name == volume.name)
    {
        target.config = found.config;
    }
    drop(state);
    ctx.applied();
    Ok(envelope::sync(json!({})))
}

/// After a volume was deleted (`owner`: the project that owns it): drops its snapshots.
pub(super) fn forget(state: &mut State, pool: &str, owner: &str, name: &str) {
    state
        .volume_snapshots
        .retain(|s| !(s.pool == pool && s.project == owner && s.volume == name));
}

/// After a volume was renamed: its snapshots follow.
pub(super) fn follow_rename(state: &mut State, pool: &str, owner: &str, old: &str, new: &str) {
    for s in &mut state.volume_snapshots {
        if s.pool == pool && s.project == owner && s.volume == old {
            s.volume = new.to_owned();
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CopyBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    config: Option<crate::state::StringMap>,
    #[serde(deserialize_with = "super::null_default")]
    source: CopySource,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CopySource {
    #[serde(rename = "type", deserialize_with = "super::null_default")]
    kind: String,
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    pool: String,
    #[serde(deserialize_with = "super::null_default")]
    volume_only: bool,
}

/// Whether a volume create is a copy (`source.type: copy`).
pub(super) fn is_copy(body: &[u8]) -> bool {
    serde_json::from_slice::<CopyBody>(body).is_ok_and(|b| b.source.kind == "copy")
}

/// `POST …/volumes/custom` with `source.type: copy` (`incus storage volume copy`): the name
/// checks synchronously, then a `Copying storage volume` operation that creates the volume with
/// the source's (or the source snapshot's) config under the request's, and the source's
/// snapshots unless `volume_only`.
pub(super) fn copy(ctx: &Ctx, pool: &str, body: &[u8]) -> ApiResult {
    let req: CopyBody = parse_body(body)?;
    let project = ctx.project();
    {
        let state = ctx.app.state();
        if !state.storage_pools.iter().any(|p| p.name == pool) {
            return Err(pool_not_found());
        }
        if req.name.is_empty() {
            return Err(ApiError::bad_request("No name provided"));
        }
        if state.custom_volume(pool, &project, &req.name).is_some() {
            return Err(ApiError::new(409, "Volume by that name already exists"));
        }
    }
    let source_pool = if req.source.pool.is_empty() {
        pool.to_string()
    } else {
        req.source.pool.clone()
    };
    let pool = pool.to_string();
    let op = ctx.start_task(
        spec(ctx, "Copying storage volume", BTreeMap::new()),
        Box::new(move |state: &mut State| {
            let (parent, snap) = match req.source.name.split_once('/') {
                Some((parent, snap)) => (parent.to_string(), Some(snap.to_string())),
                None => (req.source.name.clone(), None),
            };
            let source = state
                .custom_volume(&source_pool, &project, &parent)
                .cloned()
                .ok_or_else(volume_not_found)?;
            let config = match &snap {
                None => source.config.clone(),
                Some(snap) => snapshots_of(state, &source)
                    .find(|s| &s.name == snap)
                    .map(|s| s.config.clone())
                    .ok_or_else(volume_not_found)?,
            };
            if state.custom_volume(&pool, &project, &req.name).is_some() {
                return Err(ApiError::new(409, "Volume by that name already exists"));
            }
            let mut config = config;
            config.extend(req.config.clone().unwrap_or_default());
            let owner = state.volume_project(&project);
            let copied = Volume {
                pool: pool.clone(),
                project: owner,
                name: req.name.clone(),
                description: req.description.clone(),
                config,
                created_at: clock::now(),
                content_type: source.content_type.clone(),
            };
            if snap.is_none() && !req.source.volume_only {
                let snapshots: Vec<VolumeSnapshot> = snapshots_of(state, &source)
                    .map(|s| VolumeSnapshot {
                        pool: copied.pool.clone(),
                        project: copied.project.clone(),
                        volume: copied.name.clone(),
                        created_at: clock::now(),
                        ..s.clone()
                    })
                    .collect();
                state.volume_snapshots.extend(snapshots);
            }
            state.storage_volumes.push(copied);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
