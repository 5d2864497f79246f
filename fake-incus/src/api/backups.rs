//! Instance backups: `/1.0/instances/{name}/backups[/{backup}[/export]]` (create, list, get,
//! rename, delete, export) and `POST /1.0/instances` with a backup tarball body (`incus import`).
//! A backup is the daemon's tarball layout for a `dir` pool, made when the backup is created:
//! `backup/index.yaml`, `backup/container/{backup.yaml,metadata.yaml,rootfs/,templates/}` and,
//! unless `instance_only`, `backup/snapshots/{snap}/{metadata.yaml,rootfs/}`. An instance's
//! tarballs together stay within [`BACKUP_BUDGET`] (so do a custom volume's): a backup past it
//! fails its operation like a full disk would on the daemon.

use super::image_archive::{yaml, Tarball};
use super::{instance_not_found, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::files::Tree;
use crate::state::instances::Backup;
use crate::state::{clock, Instance, State};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Read;
use std::sync::Arc;

fn backup_not_found() -> ApiError {
    ApiError::new(404, "Instance backup not found")
}

/// The instance (cloned) or the per-instance 404.
fn instance(ctx: &Ctx, name: &str) -> Result<Instance, ApiError> {
    let project = ctx.project();
    ctx.app
        .state()
        .instance(&project, name)
        .cloned()
        .ok_or_else(|| instance_not_found(name, &project))
}

pub(super) fn list(ctx: &Ctx, name: &str) -> ApiResult {
    let instance = instance(ctx, name)?;
    let items: Vec<Value> = instance
        .backups
        .iter()
        .map(|b| {
            if ctx.recursion() == 0 {
                json!(format!("/1.0/instances/{name}/backups/{}", b.name))
            } else {
                json!(b)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

/// The daemon loads the backup by its full name first: an unknown instance's backup is an
/// unknown backup.
pub(super) fn get(ctx: &Ctx, name: &str, backup: &str) -> ApiResult {
    let instance = instance(ctx, name).map_err(|_| backup_not_found())?;
    let found = instance
        .backups
        .iter()
        .find(|b| b.name == backup)
        .ok_or_else(backup_not_found)?;
    Ok(envelope::sync(json!(found)))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    expires_at: Option<String>,
    #[serde(deserialize_with = "super::null_default")]
    instance_only: bool,
    #[serde(deserialize_with = "super::null_default")]
    optimized_storage: bool,
}

/// The operation's resources: the backup, then the instance, as the daemon lists them.
fn backup_spec(
    ctx: &Ctx,
    description: &'static str,
    instance: &Instance,
    backup: Option<&str>,
) -> OpSpec {
    let project = ctx.project();
    let mut spec = OpSpec::task(&project, description, instance.url());
    if let Some(backup) = backup {
        spec.resources.insert(
            "backups".into(),
            vec![crate::state::url(
                &format!("/1.0/instances/{}/backups/{backup}", instance.name),
                &project,
            )],
        );
    }
    spec
}

pub(super) fn create(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let current = instance(ctx, name)?;
    let req: CreateBody = parse_body(body)?;
    let backup_name = backup_name(&req.name, |n| current.backups.iter().any(|b| b.name == n))?;
    let spec = backup_spec(ctx, "Backing up instance", &current, Some(&backup_name));
    let (project, name) = (ctx.project(), name.to_string());
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let instance = state
                .instance(&project, &name)
                .cloned()
                .ok_or_else(|| instance_not_found(&name, &project))?;
            if instance.backups.iter().any(|b| b.name == backup_name) {
                return Err(ApiError::internal(format!(
                    "Create backup: Backup \"{name}/{backup_name}\" already exists"
                )));
            }
            let tarball = backup_tarball(&app, state, &instance, req.instance_only)?;
            let kept = {
                let files = app.files();
                instance
                    .backups
                    .iter()
                    .filter_map(|b| files.backup(&project, &name, &b.name))
                    .map(|t| t.len())
                    .sum()
            };
            within_budget("Create backup", "instance", kept, tarball.len())?;
            let backup = Backup {
                name: backup_name.clone(),
                created_at: clock::now(),
                expires_at: req
                    .expires_at
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| clock::ZERO_TIME.into()),
                instance_only: req.instance_only,
                optimized_storage: req.optimized_storage,
            };
            if let Some(instance) = state.instance_mut(&project, &name) {
                instance.backups.push(backup);
            }
            app.files()
                .set_backup(&project, &name, &backup_name, Some(Bytes::from(tarball)));
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// The backup tarball of an instance as it is now.
fn backup_tarball(
    app: &crate::app::App,
    state: &State,
    instance: &Instance,
    instance_only: bool,
) -> Result<Vec<u8>, ApiError> {
    let project = &instance.project;
    let snapshots: Vec<&crate::state::instances::InstanceSnapshot> = if instance_only {
        Vec::new()
    } else {
        instance.snapshots.iter().collect()
    };
    let pool = instance.pool(state).unwrap_or_else(|| "default".into());
    let config = json!({
        "container": instance.to_json(state),
        "snapshots": snapshots.iter().map(|s| s.to_json(instance, state, app.settings.line)).collect::<Vec<_>>(),
        "pool": {"name": pool, "driver": "dir", "description": "", "config": {},
            "status": "Created", "locations": ["none"], "used_by": []},
        "profiles": state.profiles_of(instance).iter().map(|p| json!({
            "name": p.name, "description": p.description, "config": p.config,
            "devices": p.devices, "used_by": [], "project": p.project})).collect::<Vec<_>>(),
        "volume": {"name": instance.name, "type": instance.kind, "config": {},
            "description": "", "used_by": [], "location": "none",
            "content_type": "filesystem", "project": project,
            "created_at": instance.created_at},
    });
    let mut index = json!({
        "name": instance.name, "backend": "dir", "pool": pool, "optimized": false,
        "optimized_header": false, "type": instance.kind, "config": config,
    });
    if !snapshots.is_empty() {
        index["snapshots"] = json!(snapshots.iter().map(|s| s.name.clone()).collect::<Vec<_>>());
    }
    let metadata = instance.metadata.clone().unwrap_or_else(|| json!({}));
    let files = app.files();
    let tree_of = |snap: Option<&str>| {
        files
            .tree_of(project, &instance.name, snap)
            .unwrap_or_default()
    };
    let mut tarball = Tarball::new();
    tarball.file("backup/index.yaml", yaml(&index)?.as_bytes(), 0o644)?;
    tarball.dir("backup/container", 0o100)?;
    tarball.file(
        "backup/container/backup.yaml",
        yaml(&config)?.as_bytes(),
        0o400,
    )?;
    tarball.file(
        "backup/container/metadata.yaml",
        yaml(&metadata)?.as_bytes(),
        0o644,
    )?;
    tarball.tree("backup/container/rootfs", &tree_of(None))?;
    tarball.dir("backup/container/templates", 0o711)?;
    for (file, content) in &instance.templates {
        tarball.file(
            &format!("backup/container/templates/{file}"),
            content.as_bytes(),
            0o644,
        )?;
    }
    for snapshot in &snapshots {
        let base = format!("backup/snapshots/{}", snapshot.name);
        tarball.dir(&base, 0o100)?;
        tarball.file(
            &format!("{base}/metadata.yaml"),
            yaml(&metadata)?.as_bytes(),
            0o644,
        )?;
        tarball.tree(&format!("{base}/rootfs"), &tree_of(Some(&snapshot.name)))?;
    }
    tarball.finish()
}

pub(super) fn rename(ctx: &Ctx, name: &str, backup: &str, body: &[u8]) -> ApiResult {
    let current = instance(ctx, name).map_err(|_| backup_not_found())?;
    if !current.backups.iter().any(|b| b.name == backup) {
        return Err(backup_not_found());
    }
    let req: super::RenameBody = parse_body(body)?;
    check_backup_name(&req.name)?;
    let spec = backup_spec(ctx, "Renaming instance backup", &current, None);
    let (project, name, old, new) = (
        ctx.project(),
        name.to_string(),
        backup.to_string(),
        req.name,
    );
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let instance = state
                .instance_mut(&project, &name)
                .ok_or_else(|| instance_not_found(&name, &project))?;
            let found = instance
                .backups
                .iter_mut()
                .find(|b| b.name == old)
                .ok_or_else(backup_not_found)?;
            found.name.clone_from(&new);
            let mut files = app.files();
            let tarball = files.backup(&project, &name, &old);
            files.set_backup(&project, &name, &old, None);
            files.set_backup(&project, &name, &new, tarball);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

pub(super) fn delete(ctx: &Ctx, name: &str, backup: &str) -> ApiResult {
    let current = instance(ctx, name).map_err(|_| backup_not_found())?;
    if !current.backups.iter().any(|b| b.name == backup) {
        return Err(backup_not_found());
    }
    let spec = backup_spec(ctx, "Removing instance backup", &current, None);
    let (project, name, backup) = (ctx.project(), name.to_string(), backup.to_string());
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if let Some(instance) = state.instance_mut(&project, &name) {
                instance.backups.retain(|b| b.name != backup);
            }
            app.files().set_backup(&project, &name, &backup, None);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// The tarball, as the daemon sends it (octet-stream, `inline;filename=` with no name).
pub(super) fn export(ctx: &Ctx, name: &str, backup: &str) -> ApiResult {
    let current = instance(ctx, name).map_err(|_| backup_not_found())?;
    if !current.backups.iter().any(|b| b.name == backup) {
        return Err(backup_not_found());
    }
    let tarball = ctx
        .app
        .files()
        .backup(&ctx.project(), name, backup)
        .ok_or_else(backup_not_found)?;
    Ok(tarball_response(tarball))
}

/// How many bytes of backup tarballs the fake keeps per instance or per custom volume: four full
/// trees ([`crate::state::files::TREE_LIMIT`]), so that a backup of a full instance with three
/// snapshots fits once. The fake holds them in memory; the daemon writes them to its backups
/// directory, bounded only by the disk (where a full disk fails the backup's operation).
pub(crate) const BACKUP_BUDGET: usize = 4 * crate::state::files::TREE_LIMIT;

/// Refuses a new tarball of `size` bytes when the owner's `kept` ones and it pass
/// [`BACKUP_BUDGET`], with the daemon's text for a full disk (`{what}: ... no space left on
/// device`) and the fake's bound.
pub(super) fn within_budget(
    what: &str,
    owner: &str,
    kept: usize,
    size: usize,
) -> Result<(), ApiError> {
    if kept.saturating_add(size) > BACKUP_BUDGET {
        return Err(ApiError::internal(format!(
            "{what}: Failed to write backup file: no space left on device (the fake keeps at most \
             {} MiB of backups per {owner}; {} MiB are kept and this one is {} KiB)",
            BACKUP_BUDGET >> 20,
            kept >> 20,
            size >> 10
        )));
    }
    Ok(())
}

/// The daemon's check of a backup's new name.
pub(super) fn check_backup_name(name: &str) -> Result<(), ApiError> {
    if name.contains('/') {
        return Err(ApiError::bad_request(
            "Backup names may not contain slashes",
        ));
    }
    Ok(())
}

/// The name a new backup gets: the requested one, or the first free `backup{n}`.
pub(super) fn backup_name(
    requested: &str,
    taken: impl Fn(&str) -> bool,
) -> Result<String, ApiError> {
    check_backup_name(requested)?;
    if !requested.is_empty() {
        return Ok(requested.to_string());
    }
    Ok((0..)
        .map(|n| format!("backup{n}"))
        .find(|n| !taken(n))
        .unwrap_or_default())
}

/// A backup's tarball as the daemon sends it (octet-stream, `inline;filename=` with no name).
pub(super) fn tarball_response(tarball: Bytes) -> Response<envelope::Body> {
    let mut response = Response::new(envelope::full(tarball));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("inline;filename="),
    );
    response
}

/// What an imported backup holds.
pub(super) struct Imported {
    pub(super) index: Value,
    trees: Vec<(Option<String>, Tree)>,
    templates: crate::state::StringMap,
}

/// Reads a backup tarball (gzip or plain tar): its index and the trees of the instance and its
/// snapshots; anything else is the daemon's `Unsupported compression`.
pub(super) fn read_backup(body: &[u8]) -> Result<Imported, ApiError> {
    let reader: Box<dyn Read + '_> = if body.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(body))
    } else if body.len() > 262 && &body[257..262] == b"ustar" {
        Box::new(body)
    } else {
        return Err(ApiError::internal("Unsupported compression"));
    };
    let bad = |e: std::io::Error| ApiError::internal(format!("Failed to read backup: {e}"));
    let mut archive = tar::Archive::new(reader);
    let mut index = None;
    let mut trees: Vec<(Option<String>, Tree)> = Vec::new();
    let mut templates = crate::state::StringMap::new();
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.to_string_lossy().into_owned();
        if path == "backup/index.yaml" {
            let mut text = String::new();
            entry.read_to_string(&mut text).map_err(bad)?;
            let value: Value = serde_yaml_ng::from_str(&text)
                .map_err(|e| ApiError::internal(format!("Failed to parse index.yaml: {e}")))?;
            index = Some(value);
            continue;
        }
        if let Some(file) = path.strip_prefix("backup/container/templates/") {
            let mut text = String::new();
            entry.read_to_string(&mut text).map_err(bad)?;
            templates.insert(file.to_string(), text);
            continue;
        }
        let (owner, inner) = if let Some(rest) = path.strip_prefix("backup/container/rootfs") {
            (None, rest)
        } else if let Some(rest) = path.strip_prefix("backup/snapshots/") {
            match rest.split_once("/rootfs") {
                Some((snap, inner)) => (Some(snap.to_string()), inner),
                None => continue,
            }
        } else {
            continue;
        };
        let inner = if inner.is_empty() { "/" } else { inner };
        if !inner.starts_with('/') {
            continue;
        }
        let at = match trees.iter().position(|(o, _)| *o == owner) {
            Some(at) => at,
            None => {
                trees.push((owner.clone(), Tree::empty()));
                trees.len() - 1
            }
        };
        if !super::image_upload::archive_entry(&mut trees[at].1, inner, &mut entry) {
            return Err(ApiError::internal(format!(
                "Failed to read backup: cannot hold {path}"
            )));
        }
    }
    let index = index
        .ok_or_else(|| ApiError::internal("Failed to read backup: backup/index.yaml not found"))?;
    Ok(Imported {
        index,
        trees,
        templates,
    })
}

/// `POST /1.0/instances` with a backup tarball (`Content-Type: application/octet-stream`): a
/// `Restoring backup` operation that creates the instance (named by `X-Incus-name` or the
/// backup) with its config, devices, profiles, snapshots and files.
pub(super) fn import(ctx: &Ctx, headers: &HeaderMap, body: &[u8]) -> ApiResult {
    let imported = read_backup(body)?;
    let project = ctx.project();
    let name = headers
        .get("x-incus-name")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .or_else(|| imported.index["name"].as_str().map(str::to_string))
        .unwrap_or_default();
    super::validation::check_name(&name)?;
    let spec = OpSpec::task(
        &project,
        "Restoring backup",
        crate::state::url(&format!("/1.0/instances/{name}"), &project),
    );
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if state.instance(&project, &name).is_some() {
                return Err(ApiError::internal(
                    "Create instance from backup: Cannot restore volume, already exists on target",
                ));
            }
            let config = &imported.index["config"];
            let container = &config["container"];
            let mut instance = Instance::from_image(&name, &project, None);
            let object = |value: &Value| -> crate::state::StringMap {
                serde_json::from_value(value.clone()).unwrap_or_default()
            };
            instance.config = object(&container["config"]);
            instance.devices =
                serde_json::from_value(container["devices"].clone()).unwrap_or_default();
            instance.profiles = serde_json::from_value(container["profiles"].clone())
                .unwrap_or_else(|_| vec!["default".into()]);
            instance.description = container["description"].as_str().unwrap_or_default().into();
            instance.ephemeral = container["ephemeral"].as_bool().unwrap_or_default();
            if let Some(kind) = container["type"].as_str() {
                instance.kind = kind.into();
            }
            if let Some(architecture) = container["architecture"].as_str() {
                instance.architecture = architecture.into();
            }
            instance.templates = imported.templates.clone();
            for snapshot in config["snapshots"].as_array().into_iter().flatten() {
                let mut taken = instance.take_snapshot(
                    snapshot["name"].as_str().unwrap_or_default(),
                    snapshot["stateful"].as_bool().unwrap_or_default(),
                    snapshot["expires_at"].as_str().map(str::to_string),
                );
                taken.config = object(&snapshot["config"]);
                taken.devices =
                    serde_json::from_value(snapshot["devices"].clone()).unwrap_or_default();
                instance.snapshots.push(taken);
            }
            state.instances.push(Arc::new(instance));
            let mut files = app.files();
            files.remove_instance(&project, &name);
            for (owner, tree) in imported.trees {
                files.set_tree(&project, &name, owner.as_deref(), Some(tree));
            }
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
