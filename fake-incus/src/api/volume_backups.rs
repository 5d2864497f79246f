//! Custom volume backups: `/1.0/storage-pools/{pool}/volumes/custom/{vol}/backups[/{name}[/export]]`
//! (create, list, get, rename, delete, export) and `incus storage volume import` (`POST` of a
//! backup tarball to `.../volumes/custom`) as the daemon answers them. A backup is the
//! daemon's tarball layout for a custom volume of a `dir` pool, made when the backup is created:
//! `backup/index.yaml`, then `backup/volume-snapshots/{snap}/` (unless `volume_only`), then
//! `backup/volume/` (the fake's volumes hold no files, so the directories are empty). The
//! tarballs are kept with the instance backups' (see [`TARBALLS`]), under the same budget.

use super::backups::{backup_name, check_backup_name, tarball_response, within_budget};
use super::image_archive::{yaml, Tarball};
use super::volume_snapshots::{snapshots_of, spec, volume};
use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::volume_backups::{VolumeBackup, TARBALLS};
use crate::state::{clock, State, Volume};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

fn backup_not_found() -> ApiError {
    ApiError::new(404, "Storage volume backup not found")
}

fn backups_of<'a>(state: &'a State, volume: &'a Volume) -> impl Iterator<Item = &'a VolumeBackup> {
    state
        .volume_backups
        .iter()
        .filter(move |b| b.of(&volume.pool, &volume.project, &volume.name))
}

/// The volume and its backup `backup`, or the pool's, the volume's or the backup's 404.
fn backup(
    ctx: &Ctx,
    pool: &str,
    name: &str,
    backup: &str,
) -> Result<(Volume, VolumeBackup), ApiError> {
    let state = ctx.app.state();
    let volume = volume(&state, ctx, pool, name)?;
    let found = backups_of(&state, &volume)
        .find(|b| b.name == backup)
        .cloned()
        .ok_or_else(backup_not_found)?;
    Ok((volume, found))
}

pub(super) fn list(ctx: &Ctx, pool: &str, name: &str) -> ApiResult {
    let state = ctx.app.state();
    let volume = volume(&state, ctx, pool, name)?;
    let items: Vec<Value> = backups_of(&state, &volume)
        .map(|b| {
            if ctx.recursion() == 0 {
                json!(format!(
                    "/1.0/storage-pools/{pool}/volumes/custom/{name}/backups/{}",
                    b.name
                ))
            } else {
                b.to_json()
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

pub(super) fn get(ctx: &Ctx, pool: &str, name: &str, name_of_backup: &str) -> ApiResult {
    let (_, found) = backup(ctx, pool, name, name_of_backup)?;
    Ok(envelope::sync(found.to_json()))
}

/// The operation's resources: the backup (by the URL the daemon gives), then the volume.
fn resources(volume: &Volume, backup_url: String) -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([
        ("backups".to_string(), vec![backup_url]),
        ("storage_volumes".to_string(), vec![volume.url()]),
    ])
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    expires_at: Option<String>,
    #[serde(deserialize_with = "super::null_default")]
    volume_only: bool,
    #[serde(deserialize_with = "super::null_default")]
    optimized_storage: bool,
}

/// On a line that checks it ([`crate::line::OBJECT_NAMES_ARE_API_NAMES`]), a backup's new name as
/// an API name (a generated `backup{n}` always is one).
fn check_name(ctx: &Ctx, name: &str) -> Result<(), ApiError> {
    let checked = ctx
        .app
        .has_extension(crate::line::OBJECT_NAMES_ARE_API_NAMES);
    super::validation::checked_api_name(checked, "storage volume backup", name)
}

pub(super) fn create(ctx: &Ctx, pool: &str, name: &str, body: &[u8]) -> ApiResult {
    let volume = volume(&ctx.app.state(), ctx, pool, name)?;
    let req: CreateBody = parse_body(body)?;
    if !req.name.is_empty() {
        check_name(ctx, &req.name)?;
    }
    let made = {
        let state = ctx.app.state();
        backup_name(&req.name, |n| {
            backups_of(&state, &volume).any(|b| b.name == n)
        })?
    };
    let made = VolumeBackup {
        pool: volume.pool.clone(),
        project: volume.project.clone(),
        volume: volume.name.clone(),
        name: made,
        created_at: String::new(),
        expires_at: req
            .expires_at
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| clock::ZERO_TIME.into()),
        volume_only: req.volume_only,
        optimized_storage: req.optimized_storage,
        tarball: uuid::Uuid::new_v4().simple().to_string(),
    };
    let spec = spec(
        ctx,
        "Creating custom volume backup",
        resources(&volume, made.url()),
    );
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let volume = state
                .custom_volume(&made.pool, &made.project, &made.volume)
                .cloned()
                .ok_or_else(|| ApiError::new(404, "Storage pool volume not found"))?;
            let backups: Vec<VolumeBackup> = backups_of(state, &volume).cloned().collect();
            if backups.iter().any(|b| b.name == made.name) {
                return Err(ApiError::internal(format!(
                    "Create volume backup: Backup \"{}/{}\" already exists",
                    volume.name, made.name
                )));
            }
            let tarball = volume_tarball(state, &volume, made.volume_only)?;
            let kept = {
                let files = app.files();
                backups
                    .iter()
                    .filter_map(|b| files.backup(&b.project, TARBALLS, &b.tarball))
                    .map(|t| t.len())
                    .sum()
            };
            within_budget("Create volume backup", "volume", kept, tarball.len())?;
            app.files().set_backup(
                &made.project,
                TARBALLS,
                &made.tarball,
                Some(Bytes::from(tarball)),
            );
            state.volume_backups.push(VolumeBackup {
                created_at: clock::now(),
                ..made
            });
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// The backup tarball of a custom volume as it is now.
fn volume_tarball(state: &State, volume: &Volume, volume_only: bool) -> Result<Vec<u8>, ApiError> {
    let snapshots: Vec<_> = if volume_only {
        Vec::new()
    } else {
        snapshots_of(state, volume).cloned().collect()
    };
    let mut config = json!({
        "volume": {
            "config": volume.config, "description": volume.description, "name": volume.name,
            "type": "custom", "used_by": [], "location": "none",
            "content_type": "filesystem", "project": volume.project,
            "created_at": volume.created_at,
        },
    });
    let mut index = json!({"name": volume.name, "backend": "dir", "pool": volume.pool});
    if !snapshots.is_empty() {
        index["snapshots"] = json!(snapshots.iter().map(|s| &s.name).collect::<Vec<_>>());
        config["volume_snapshots"] = json!(snapshots
            .iter()
            .map(|s| json!({
                "description": s.description,
                "expires_at": s.expires_at.as_deref().unwrap_or(clock::ZERO_TIME),
                "name": s.name, "config": s.config, "content_type": "filesystem",
                "created_at": s.created_at,
            }))
            .collect::<Vec<_>>());
    }
    index["optimized"] = json!(false);
    index["optimized_header"] = json!(false);
    index["type"] = json!("custom");
    index["config"] = config;
    let mut tarball = Tarball::new();
    tarball.file("backup/index.yaml", yaml(&index)?.as_bytes(), 0o644)?;
    for snapshot in &snapshots {
        tarball.dir(&format!("backup/volume-snapshots/{}", snapshot.name), 0o711)?;
    }
    tarball.dir("backup/volume", 0o711)?;
    tarball.finish()
}

/// Applies a change to one backup in the state (gone meanwhile: the backup's 404).
fn change(
    state: &mut State,
    found: &VolumeBackup,
    apply: impl FnOnce(&mut Vec<VolumeBackup>, usize),
) -> Result<(), ApiError> {
    let at = state
        .volume_backups
        .iter()
        .position(|b| b.of(&found.pool, &found.project, &found.volume) && b.name == found.name)
        .ok_or_else(backup_not_found)?;
    apply(&mut state.volume_backups, at);
    Ok(())
}

pub(super) fn rename(ctx: &Ctx, pool: &str, name: &str, old: &str, body: &[u8]) -> ApiResult {
    let (volume, found) = backup(ctx, pool, name, old)?;
    let req: super::RenameBody = parse_body(body)?;
    check_name(ctx, &req.name)?;
    check_backup_name(&req.name)?;
    // The daemon names the backup by its full name `{volume}/{backup}` here.
    let url = crate::state::url(
        &format!("/1.0/storage-pools/{pool}/volumes/custom/{name}/backups/{name}%2F{old}"),
        &volume.project,
    );
    let spec = spec(
        ctx,
        "Renaming custom volume backup",
        resources(&volume, url),
    );
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            change(state, &found, |backups, at| backups[at].name = req.name)?;
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

pub(super) fn delete(ctx: &Ctx, pool: &str, name: &str, backup_name: &str) -> ApiResult {
    let (volume, found) = backup(ctx, pool, name, backup_name)?;
    let spec = spec(
        ctx,
        "Deleting custom volume backup",
        resources(&volume, found.url()),
    );
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            change(state, &found, |backups, at| {
                backups.remove(at);
            })?;
            app.files()
                .set_backup(&found.project, TARBALLS, &found.tarball, None);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

pub(super) fn export(ctx: &Ctx, pool: &str, name: &str, backup_name: &str) -> ApiResult {
    let (_, found) = backup(ctx, pool, name, backup_name)?;
    let tarball = ctx
        .app
        .files()
        .backup(&found.project, TARBALLS, &found.tarball)
        .ok_or_else(backup_not_found)?;
    Ok(tarball_response(tarball))
}

/// Whether a `POST /1.0/storage-pools/{pool}/volumes/custom` carries a backup tarball
/// (`incus storage volume import`) rather than a JSON volume.
pub(super) fn is_import(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/octet-stream")
}

/// `POST /1.0/storage-pools/{pool}/volumes/custom` with a backup tarball: a `Restoring custom
/// volume backup` operation that creates the volume (named by `X-Incus-name` or the backup)
/// with its config, description and snapshots.
pub(super) fn import(ctx: &Ctx, pool: &str, headers: &http::HeaderMap, body: &[u8]) -> ApiResult {
    if !ctx.app.state().storage_pools.iter().any(|p| p.name == pool) {
        return Err(super::pool_not_found());
    }
    let imported = super::backups::read_backup(body)?;
    let index = imported.index;
    let name = headers
        .get("x-incus-name")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .or_else(|| index["name"].as_str())
        .unwrap_or_default()
        .to_string();
    let volume = Volume {
        pool: pool.to_string(),
        project: ctx.app.state().volume_project(&ctx.project()),
        name,
        description: index["config"]["volume"]["description"]
            .as_str()
            .unwrap_or_default()
            .into(),
        config: serde_json::from_value(index["config"]["volume"]["config"].clone())
            .unwrap_or_default(),
        created_at: String::new(),
        content_type: index["config"]["volume"]["content_type"]
            .as_str()
            .filter(|t| !t.is_empty())
            .unwrap_or("filesystem")
            .to_owned(),
    };
    let spec = spec(
        ctx,
        "Restoring custom volume backup",
        BTreeMap::from([("storage_volumes".to_string(), vec![volume.url()])]),
    );
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if state
                .custom_volume(&volume.pool, &volume.project, &volume.name)
                .is_some()
            {
                return Err(ApiError::internal(format!(
                    "Create custom volume from backup: Volume {:?} already exists in pool {:?}",
                    volume.name, volume.pool
                )));
            }
            let snapshots = index["config"]["volume_snapshots"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| crate::state::volume_snapshots::VolumeSnapshot {
                    pool: volume.pool.clone(),
                    project: volume.project.clone(),
                    volume: volume.name.clone(),
                    name: s["name"].as_str().unwrap_or_default().into(),
                    description: s["description"].as_str().unwrap_or_default().into(),
                    config: serde_json::from_value(s["config"].clone()).unwrap_or_default(),
                    created_at: s["created_at"]
                        .as_str()
                        .map_or_else(clock::now, str::to_string),
                    expires_at: s["expires_at"]
                        .as_str()
                        .filter(|e| *e != clock::ZERO_TIME)
                        .map(str::to_string),
                });
            let snapshots: Vec<_> = snapshots.collect();
            state.volume_snapshots.extend(snapshots);
            state.storage_volumes.push(Volume {
                created_at: clock::now(),
                ..volume
            });
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
