//! Custom storage volumes, declared: `/1.0/storage-pools/{pool}/volumes/custom[/{name}]` list,
//! get, create, update, rename (in the same pool) and delete, as the daemon answers them (all
//! synchronous), with `state` and the gets of snapshots. Projects without
//! `features.storage.volumes` use `default`'s volumes. A volume attached as a disk device
//! (`pool=POOL source=NAME`) is in its `used_by`, cannot be deleted, and its devices follow a
//! rename.

use super::resource::{self, Answer, At, Decl, First, Resource, Scope, Sub, Typed, Verb};
use super::validation::volume_config_problem;
use super::volume_snapshots;
use super::{parse_body, pool_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::{clock, Devices, State, StringMap, Volume};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Map, Value};

pub(super) struct Volumes;

pub(super) static VOLUMES: Volumes = Volumes;

static DECL: Decl = Decl {
    collection: "/1.0/storage-pools/{}/volumes/custom",
    scope: Scope::Project(Some("features.storage.volumes")),
    create: Answer::Empty,
    rename: Answer::Location,
    first: First::Name,
    not_found: "Storage pool volume not found",
    api_name: "storage volume",
    exists: (409, "Volume by that name already exists"),
    project_not_found: [
        "Project not found",
        "Failed to load project \"{}\": Project not found",
    ],
    store: &STORE,
    subs: &[
        Sub {
            method: "GET",
            path: &["state"],
            serve: state,
            does: "No usage (`null`), as the daemon's `dir` pool answers.",
        },
    ],
    limits: "No data: a volume is its config. No migration between servers (501), no ISO or block content types.",
    ..Decl::DEFAULTS
};

static STORE: Typed<Volume> = Typed::rows(|s| &s.storage_volumes, |s| &mut s.storage_volumes)
    .per_project()
    .under("pool");

/// `POST .../volumes/custom/{name}` (Go `api.StorageVolumePost`): what a rename may not ask.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Move {
    #[serde(deserialize_with = "super::null_default")]
    pool: String,
    #[serde(deserialize_with = "super::null_default")]
    migration: bool,
}

/// Incus 6.0's rule of a new volume name (a later line checks it as an API name first).
fn volume_name(key: &str) -> Result<(), ApiError> {
    if key.is_empty() {
        return Err(ApiError::bad_request("No name provided"));
    }
    if key.contains('/') {
        return Err(ApiError::bad_request(
            "Storage volume names may not contain slashes",
        ));
    }
    Ok(())
}

/// `POST /1.0/storage-pools/{pool}/volumes`: the body's `type` says the collection. The daemon
/// checks the name, then the type, then the pool.
pub(super) fn create_typed(ctx: &Ctx, pool: &str, _headers: &HeaderMap, body: &[u8]) -> ApiResult {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Typed {
        #[serde(deserialize_with = "super::null_default")]
        name: String,
        #[serde(rename = "type", deserialize_with = "super::null_default")]
        kind: String,
    }
    let req: Typed = parse_body(body)?;
    resource::api_name_first(&VOLUMES, ctx, body, "name")?;
    volume_name(&req.name)?;
    if req.kind != "custom" {
        return Err(ApiError::bad_request(format!(
            "Currently not allowed to create storage volumes of type \"{}\"",
            req.kind
        )));
    }
    resource::create_below(&VOLUMES, ctx, pool, body)
}

impl Resource for Volumes {
    fn decl(&self) -> &Decl {
        &DECL
    }
    fn template(&self) -> Value {
        json!({"description": "", "config": {}, "created_at": "", "content_type": "filesystem"})
    }
    fn parent(&self, state: &State, at: &At) -> Result<(), ApiError> {
        if state.storage_pools.iter().any(|p| p.name == at.parent) {
            Ok(())
        } else {
            Err(pool_not_found())
        }
    }
    fn check_key(&self, key: &str, _: &At) -> Result<(), ApiError> {
        volume_name(key)
    }
    fn prepare(&self, _: &State, _: &At, object: &mut Value) -> Result<(), ApiError> {
        object["created_at"] = json!(clock::now());
        Ok(())
    }
    fn validate(
        &self,
        _: &State,
        at: &At,
        object: &Value,
        current: Option<&Value>,
    ) -> Result<(), ApiError> {
        let name = object["name"].as_str().unwrap_or_default();
        let named = match current {
            Some(_) => format!("{}_{name}", at.project),
            None => name.to_owned(),
        };
        let config: StringMap =
            serde_json::from_value(object["config"].clone()).unwrap_or_default();
        match volume_config_problem(&named, &config) {
            Some(why) => Err(ApiError::internal(why)),
            None => Ok(()),
        }
    }
    /// `PUT` replaces the config, `PATCH` merges it; the description is whatever the body says
    /// (`""` when absent) either way, as the daemon does.
    fn merge(&self, current: &Value, body: &Map<String, Value>, patch: bool) -> Value {
        let mut next = resource::merge(&["config"], &self.template(), current, body, patch);
        next["description"] = body
            .get("description")
            .filter(|d| d.is_string())
            .cloned()
            .unwrap_or(json!(""));
        next
    }
    fn render(&self, state: &State, at: &At, object: Value) -> Value {
        let name = object["name"].as_str().unwrap_or_default();
        state
            .volumes(&at.parent, &at.project)
            .into_iter()
            .find(|v| v.kind == "custom" && v.name == name)
            .map(|v| v.to_json())
            .unwrap_or_default()
    }
    fn etag(&self, object: &Value) -> String {
        crate::state::etag::hash(&json!([object["name"], "custom", object["config"]]))
    }
    /// A snapshot read as a volume (`GET .../volumes/custom/NAME%2FSNAPSHOT`, which the 6.0
    /// client's `storage volume show POOL NAME/SNAPSHOT` sends).
    fn read_other(&self, state: &State, at: &At, key: &str) -> Option<(Value, String)> {
        state
            .volumes(&at.parent, &at.project)
            .into_iter()
            .find(|v| v.kind == "custom" && v.is_snapshot() && v.name == key)
            .map(|v| (v.to_json(), v.etag()))
    }
    /// A copy (`source.type: copy`) runs as an operation (see [`volume_snapshots`]).
    fn intercept_create(&self, ctx: &Ctx, at: &At, body: &[u8]) -> Option<ApiResult> {
        volume_snapshots::is_copy(body).then(|| volume_snapshots::copy(ctx, &at.parent, body))
    }
    /// `{"restore": "snap"}` restores a snapshot instead of replacing the config.
    fn intercept_update(&self, ctx: &Ctx, at: &At, key: &str, body: &[u8]) -> Option<ApiResult> {
        volume_snapshots::restore_request(body)
            .map(|_| volume_snapshots::restore(ctx, &at.parent, key, body))
    }
    /// A new volume has no files, whatever a former namesake had.
    fn created(&self, ctx: &Ctx, _: &mut State, at: &At, object: &Value) {
        let name = object["name"].as_str().unwrap_or_default();
        ctx.app.files().remove_volume(&at.project, &at.parent, name);
    }
    /// Its snapshots, backups and files go with it.
    fn deleted(&self, ctx: &Ctx, state: &mut State, at: &At, key: &str) {
        ctx.app.files().remove_volume(&at.project, &at.parent, key);
        volume_snapshots::forget(state, &at.parent, &at.project, key);
        crate::state::volume_backups::forget(
            state,
            &mut ctx.app.files(),
            &at.parent,
            &at.project,
            key,
        );
    }
    /// A move to another pool (`pool` in the body) is an operation of its own.
    fn intercept_rename(&self, ctx: &Ctx, at: &At, key: &str, body: &[u8]) -> Option<ApiResult> {
        let req: Move = serde_json::from_slice(body).unwrap_or_default();
        (!req.migration && !req.pool.is_empty() && req.pool != at.parent)
            .then(|| move_to_pool(ctx, at, key, body))
    }
    fn check_rename(&self, body: &Map<String, Value>, _: &At) -> Result<(), ApiError> {
        let req: Move = serde_json::from_value(Value::Object(body.clone())).unwrap_or_default();
        if req.migration {
            return Err(ApiError::not_implemented());
        }
        Ok(())
    }
    fn refuse(&self, state: &State, at: &At, key: &str, verb: Verb) -> Result<(), ApiError> {
        let Some(volume) = state.custom_volume(&at.parent, &at.project, key) else {
            return Ok(());
        };
        match verb {
            Verb::Delete if !state.volume_used_by(volume).is_empty() => {
                Err(ApiError::bad_request("The storage volume is still in use"))
            }
            Verb::Rename => refuse_running_users(state, volume),
            _ => Ok(()),
        }
    }
    /// Its snapshots, backups and the disk devices that attached it (of instances and profiles) follow it.
    fn renamed(&self, state: &mut State, at: &At, old: &str, new: &str) {
        volume_snapshots::follow_rename(state, &at.parent, &at.project, old, new);
        crate::state::volume_backups::follow_rename(state, &at.parent, &at.project, old, new);
        follow_devices(state, &at.project, (&at.parent, old), (&at.parent, new));
    }
}

/// The daemon's refusal to rename or move a volume that a running instance attaches.
fn refuse_running_users(state: &State, volume: &Volume) -> Result<(), ApiError> {
    let running = state
        .volume_instances(volume)
        .any(|i| i.status == crate::state::PowerState::Running);
    if running {
        return Err(ApiError::internal(
            "Volume is still in use by running instances",
        ));
    }
    Ok(())
}

/// The disk devices (of the instances and profiles of project `owner`) that attach the volume
/// `from` (pool, name) attach `to` instead, as the daemon updates a renamed or moved volume's users.
fn follow_devices(state: &mut State, owner: &str, from: (&str, &str), to: (&str, &str)) {
    let attaches = |device: &crate::state::StringMap| {
        device.get("type").map(String::as_str) == Some("disk")
            && device.get("pool").map(String::as_str) == Some(from.0)
            && device.get("source").map(String::as_str) == Some(from.1)
    };
    let follow = |devices: &mut Devices| {
        for device in devices.values_mut().filter(|d| attaches(d)) {
            device.insert("pool".into(), to.0.to_owned());
            device.insert("source".into(), to.1.to_owned());
        }
    };
    let users: Vec<usize> = (0..state.instances.len())
        .filter(|&i| state.volume_project(&state.instances[i].project) == owner)
        .filter(|&i| state.instances[i].devices.values().any(&attaches))
        .collect();
    for i in users {
        follow(&mut std::sync::Arc::make_mut(&mut state.instances[i]).devices);
    }
    let profiles: Vec<usize> = (0..state.profiles.len())
        .filter(|&i| state.volume_project(&state.profiles[i].project) == owner)
        .collect();
    for i in profiles {
        follow(&mut state.profiles[i].devices);
    }
}

fn state(ctx: &Ctx, at: &At, key: &str, _: &[&str]) -> ApiResult {
    if ctx
        .app
        .snapshot()
        .state
        .custom_volume(&at.parent, &at.project, key)
        .is_none()
    {
        return Err(ApiError::new(
            404,
            format!(
                "Storage volume {key:?} in project {:?} of type \"custom\" does not exist on pool {:?}: Storage volume not found",
                ctx.project(),
                at.parent
            ),
        ));
    }
    // 6.0's `dir` driver cannot tell a volume's usage: `null`. Since 7.0 the usage is always
    // there, `used` left out when the driver cannot tell and `total` the volume's `size` (0
    // without one).
    if !ctx.app.has_extension(crate::line::VOLUME_USAGE_ALWAYS) {
        return Ok(envelope::sync(json!({"usage": null})));
    }
    let size = ctx
        .app
        .snapshot()
        .state
        .custom_volume(&at.parent, &at.project, key)
        .and_then(|v| v.config.get("size").cloned())
        .unwrap_or_default();
    Ok(envelope::sync(
        json!({"usage": {"total": byte_size(&size)}}),
    ))
}

/// Incus's `units.ParseByteSizeString` for a well-formed size (`10MiB`, `1GB`, `512`); 0 for
/// anything else.
fn byte_size(text: &str) -> i64 {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let Ok(number) = digits.parse::<i64>() else {
        return 0;
    };
    let multiplier: i64 = match suffix {
        "" | "B" => 1,
        "kB" | "KB" => 1000,
        "MB" => 1000_i64.pow(2),
        "GB" => 1000_i64.pow(3),
        "TB" => 1000_i64.pow(4),
        "PB" => 1000_i64.pow(5),
        "EB" => 1000_i64.pow(6),
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "PiB" => 1 << 50,
        "EiB" => 1 << 60,
        _ => return 0,
    };
    number.saturating_mul(multiplier)
}

/// A volume of any type of a pool, as seen from the request's project (snapshots as
/// `NAME/SNAPSHOT`).
pub(super) fn get_volume(ctx: &Ctx, pool: &str, kind: &str, name: &str) -> ApiResult {
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

#[derive(Deserialize, Default)]
#[serde(default)]
struct MoveBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    pool: String,
}

/// `POST …/volumes/custom/{name}` with another `pool` (`incus storage volume move
/// pool/v1 other/v2`), in the daemon's order (`storagePoolVolumePost`): the new name, the
/// target pool (404 `Storage pool not found`), a name taken there (409), the volume itself, a
/// running instance that attaches it (500 `Volume is still in use by running instances`); then a
/// `Moving storage volume` operation that points the users' disk devices at the new pool and name
/// and moves the volume with its description, config and snapshots (the daemon copies it with
/// its snapshots and deletes the source; the source's backups go with the source).
fn move_to_pool(ctx: &Ctx, at: &At, key: &str, body: &[u8]) -> ApiResult {
    let req: MoveBody = parse_body(body)?;
    if req.name.is_empty() {
        return Err(ApiError::bad_request("No name provided"));
    }
    if req.name.contains('/') {
        return Err(ApiError::bad_request(
            "Storage volume names may not contain slashes",
        ));
    }
    let project = ctx.project();
    {
        let state = ctx.app.state();
        if !state.storage_pools.iter().any(|p| p.name == req.pool) {
            return Err(pool_not_found());
        }
        if state
            .custom_volume(&req.pool, &project, &req.name)
            .is_some()
        {
            return Err(ApiError::new(409, "Volume by that name already exists"));
        }
        let volume = state
            .custom_volume(&at.parent, &project, key)
            .ok_or_else(volume_snapshots::volume_not_found)?;
        refuse_running_users(&state, volume)?;
    }
    let (from_pool, from) = (at.parent.clone(), key.to_owned());
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        volume_snapshots::spec(ctx, "Moving storage volume", Default::default()),
        Box::new(move |state: &mut State| {
            if state
                .custom_volume(&req.pool, &project, &req.name)
                .is_some()
            {
                return Err(ApiError::new(409, "Volume by that name already exists"));
            }
            let owner = state
                .custom_volume(&from_pool, &project, &from)
                .map(|v| v.project.clone())
                .ok_or_else(volume_snapshots::volume_not_found)?;
            follow_devices(state, &owner, (&from_pool, &from), (&req.pool, &req.name));
            crate::state::volume_backups::forget(
                state,
                &mut app.files(),
                &from_pool,
                &owner,
                &from,
            );
            for snapshot in &mut state.volume_snapshots {
                if snapshot.pool == from_pool
                    && snapshot.project == owner
                    && snapshot.volume == from
                {
                    snapshot.pool.clone_from(&req.pool);
                    snapshot.volume.clone_from(&req.name);
                }
            }
            let volume = state
                .storage_volumes
                .iter_mut()
                .find(|v| v.pool == from_pool && v.project == owner && v.name == from)
                .ok_or_else(volume_snapshots::volume_not_found)?;
            volume.pool.clone_from(&req.pool);
            volume.name.clone_from(&req.name);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
