//! `/1.0/instances` and `/1.0/instances/{name}`: list, create, get, update (PUT, restore),
//! patch and delete.

use super::filter::{FieldValue, Fields, Filter};
use super::resource::check_etag;
use super::validation::{
    check_name, config_problem, device_names_problem, devices_problem, duplicate_profile,
    has_root_disk, is_root_disk, missing_volume, validate_config, validate_devices,
};
use super::{instance_not_found, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::line::IncusLine;
use crate::operations::OpSpec;
use crate::state::snapshot::{InstanceView, Prebuilt};
use crate::state::{Devices, Instance, State, StringMap};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

/// The daemon takes a create whose body is `application/octet-stream` as a backup to import.
pub(super) fn is_backup_upload(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/octet-stream")
}

pub(super) fn list(ctx: &Ctx) -> ApiResult {
    let filter = ctx
        .param("filter")
        .filter(|f| !f.is_empty())
        .map(Filter::parse)
        .transpose()?;
    let kind = ctx.param("instance-type").filter(|t| !t.is_empty());
    let recursion = ctx.recursion();
    let snapshot = ctx.app.snapshot();
    if recursion == 0 && filter.is_none() && kind.is_none() {
        // The plain list (what a client asks before nearly everything) is kept whole per
        // snapshot and per project (or all of them): a request costs a lookup.
        let project = if ctx.all_projects() {
            ALL_PROJECTS_KEY
        } else {
            ctx.project_name()
        };
        let answer = snapshot.answer(&[LIST_KEY, project], || Prebuilt {
            body: envelope::sync_list_body(
                &snapshot
                    .instances_in(&ctx.projects())
                    .map(|view| view.url_json().as_ref())
                    .collect::<Vec<&[u8]>>(),
            ),
            etag: None,
        });
        return Ok(envelope::sync_prebuilt(answer.body, answer.etag));
    }
    let projects = ctx.projects();
    let mut items = Vec::new();
    for view in snapshot
        .instances_in(&projects)
        .filter(|view| kind.is_none_or(|k| k == view.instance.kind))
    {
        if let Some(filter) = &filter {
            if !filter.matches(&InstanceFields::new(&view))? {
                continue;
            }
        }
        items.push(view);
    }
    let items = items.iter();
    let items: Vec<&[u8]> = match recursion {
        0 => items.map(|view| view.url_json().as_ref()).collect(),
        1 => items.map(|view| view.object_json().as_ref()).collect(),
        _ => items.map(|view| view.full_json().as_ref()).collect(),
    };
    Ok(envelope::sync_list(&items))
}

/// The fields of an instance as the daemon's filter reads them, from the instance itself.
struct InstanceFields<'a> {
    view: &'a InstanceView<'a>,
}

impl<'a> InstanceFields<'a> {
    fn new(view: &'a InstanceView<'a>) -> Self {
        Self { view }
    }
}

impl Fields for InstanceFields<'_> {
    /// The fields of the daemon's `InstanceFull` with their Go types (see [`FieldValue`]).
    fn field(&self, path: &str) -> FieldValue<'_> {
        let instance = self.view.instance;
        let text = FieldValue::text;
        match path {
            "name" => return text(&instance.name),
            "project" => return text(&instance.project),
            "type" => return text(&instance.kind),
            "architecture" => return text(&instance.architecture),
            "description" => return text(&instance.description),
            "status" => return text(instance.status.name()),
            "location" => return text(instance.location.as_deref().unwrap_or("none")),
            "status_code" => return FieldValue::NamedInt,
            "created_at" | "last_used_at" => return FieldValue::Uncomparable("struct"),
            "config" | "expanded_config" | "devices" | "expanded_devices" => {
                return FieldValue::Uncomparable("map")
            }
            "state" => return FieldValue::Uncomparable("ptr"),
            "snapshots" | "backups" => return FieldValue::Slice("struct"),
            "ephemeral" => return FieldValue::Bool(instance.ephemeral),
            "stateful" => return FieldValue::Bool(instance.stateful),
            "profiles" => return FieldValue::List(instance.profiles.clone()),
            _ => {}
        }
        // A config map holds only strings, so `config.a.b` is the key `a.b`, `""` when missing.
        if let Some(key) = path.strip_prefix("config.") {
            return text(instance.config.get(key).map_or("", String::as_str));
        }
        if let Some(key) = path.strip_prefix("expanded_config.") {
            let state = self.view.state();
            let value = instance.config.get(key).or_else(|| {
                state
                    .profiles_of(instance)
                    .into_iter()
                    .rev()
                    .find_map(|p| p.config.get(key))
            });
            return text(value.map_or("", String::as_str));
        }
        // A devices map is a map of maps: one level for the device, the rest is its key.
        let devices = match path.split_once('.') {
            Some(("devices", rest)) => Some((Cow::Borrowed(&instance.devices), rest)),
            Some(("expanded_devices", rest)) => Some((
                Cow::Owned(instance.expanded_devices(self.view.state())),
                rest,
            )),
            _ => None,
        };
        let Some((devices, rest)) = devices else {
            return FieldValue::Uncomparable("invalid");
        };
        let (device, key) = rest.split_once('.').unwrap_or((rest, ""));
        match devices.get(device) {
            Some(config) if !key.is_empty() => {
                FieldValue::Str(Cow::Owned(config.get(key).cloned().unwrap_or_default()))
            }
            Some(_) => FieldValue::Uncomparable("map"),
            None => FieldValue::Uncomparable("invalid"),
        }
    }
}

/// The answer cache key of the plain instance list (see [`list`]); project names hold no NUL.
const LIST_KEY: &str = "\0GET /1.0/instances";
/// The project part of that key under `all-projects=true`.
const ALL_PROJECTS_KEY: &str = "\0all-projects";

pub(super) fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project_name();
    let snapshot = ctx.app.snapshot();
    let view = snapshot
        .instance(project, name)
        .ok_or_else(|| instance_not_found(name, project))?;
    if ctx.recursion() >= 1 {
        return Ok(envelope::sync_raw(
            [view.full_json().as_ref()],
            Some(view.etag()),
        ));
    }
    // Kept whole per instance and snapshot, like the object it wraps.
    let answer = view.get_answer(|object, etag| Prebuilt {
        body: envelope::sync_body(&[object.as_ref()]),
        etag: envelope::etag_header(etag),
    });
    Ok(envelope::sync_prebuilt(
        answer.body.clone(),
        answer.etag.clone(),
    ))
}

#[derive(Deserialize)]
struct Source {
    #[serde(default, rename = "type")]
    #[serde(deserialize_with = "super::null_default")]
    kind: String,
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    alias: String,
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    fingerprint: String,
    /// The instance a `copy` copies.
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    source: String,
    /// A `copy` without the snapshots.
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    instance_only: bool,
}

#[derive(Deserialize)]
struct CreateBody {
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(default)]
    source: Option<Source>,
    #[serde(default)]
    config: Option<StringMap>,
    #[serde(default)]
    devices: Option<Devices>,
    #[serde(default)]
    profiles: Option<Vec<String>>,
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    ephemeral: bool,
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    start: bool,
    #[serde(default, rename = "type")]
    #[serde(deserialize_with = "super::null_default")]
    kind: String,
}

pub(super) fn create(ctx: &Ctx, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    if ctx.app.state().project(&project).is_none() {
        return Err(ApiError::new(
            404,
            "Failed loading project: Project not found",
        ));
    }
    let mut req: CreateBody = parse_body(body)?;
    if ctx.param("target").is_some_and(|t| !t.is_empty()) && ctx.app.cluster().is_none() {
        return Err(ApiError::bad_request("Target only allowed when clustered"));
    }
    let name = if req.name.is_empty() {
        generated_name()
    } else {
        req.name.clone()
    };
    check_name(&name)?;
    let source = req.source.take().unwrap_or(Source {
        kind: String::new(),
        alias: String::new(),
        fingerprint: String::new(),
        source: String::new(),
        instance_only: false,
    });
    if !matches!(source.kind.as_str(), "image" | "none" | "copy") {
        return Err(ApiError::bad_request(format!(
            "Unknown source type {}",
            source.kind
        )));
    }
    if let Some(missing) = req
        .profiles
        .iter()
        .flatten()
        .find(|p| ctx.app.state().profile(&project, p).is_none())
    {
        return Err(ApiError::internal(format!(
            "Requested profile \"{missing}\" doesn't exist"
        )));
    }
    if source.kind == "copy" {
        return copy(ctx, name, source, req);
    }
    refuse_existing(ctx, &project, &name)?;
    let instance_url = crate::state::url(&format!("/1.0/instances/{name}"), &project);
    let spec = OpSpec::task(&project, "Creating instance", instance_url);
    let location = ctx.location();
    let group = target_group(ctx);
    let app = std::sync::Arc::clone(&ctx.app);
    let line = ctx.app.settings.line;
    let op = ctx.start_task(spec, Box::new(move |state: &mut State| {
            if state.instance(&project, &name).is_some() {
                return Err(ApiError::internal(
                    "Failed creating instance record: Add instance info to the database: Failed to create \"instances\" entry: UNIQUE constraint failed: instances.project_id, instances.name",
                ));
            }
            let image = if source.kind == "image" {
                let found = find_image(state, &project, &source.alias, &source.fingerprint);
                Some(found.ok_or_else(|| ApiError::internal("Image not provided for instance creation"))?)
            } else {
                None
            };
            let config = req.config.unwrap_or_default();
            let devices = req.devices.unwrap_or_default();
            if let Some(why) = config_problem(&config, line).or_else(|| devices_problem(&devices)) {
                return Err(ApiError::internal(format!("Failed creating instance record: {why}")));
            }
            // Without profiles in the request, the image's (or `default`).
            let profiles = req.profiles.clone().unwrap_or_else(|| {
                image.as_ref().map_or_else(|| vec!["default".to_string()], |i| i.profiles.clone())
            });
            if let Some(why) = duplicate_profile(&profiles) {
                return Err(ApiError::internal(format!("Failed creating instance record: {why}")));
            }
            if !has_root_disk(&expanded_devices(state, &project, &profiles, &devices)) {
                return Err(ApiError::internal(
                    "Failed creating instance record: Failed initializing instance: Failed getting root disk: No root device could be found",
                ));
            }
            if let Some(why) = missing_volume(state, &project, &devices) {
                return Err(ApiError::new(404, format!("Failed creating instance record: Failed initializing instance: {why}")));
            }
            let mut instance = Instance::from_image(&name, &project, image.as_ref());
            instance.location = location;
            if let Some(group) = group {
                instance.config.insert(CLUSTER_GROUP.into(), group);
            }
            if !req.kind.is_empty() {
                instance.kind = req.kind;
            }
            instance.config.extend(config);
            instance.devices = devices;
            if let Some(profiles) = req.profiles {
                instance.profiles = profiles;
            }
            instance.description = req.description;
            instance.ephemeral = req.ephemeral;
            if req.start {
                instance.power_on();
            }
            let base_image = instance.config.get("volatile.base_image").cloned();
            state.instances.push(std::sync::Arc::new(instance));
            // A new instance starts with the image's files, never a former namesake's.
            let executables = image.as_ref().and_then(|i| i.executables.clone());
            app.files().create_instance(&project, &name, base_image.as_deref(), executables.as_deref());
            Ok(Some(json!({
                "create_instance_from_image_unpack_progress": "Unpacking image: 100% (1.00GB/s)",
                "progress": {"percent": "100", "speed": "1000000000", "stage": "create_instance_from_image_unpack"},
            })))
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// Since Incus 6.16 (7.0 LTS) a create whose name is taken is refused before any operation,
/// `500 Instance "NAME" already exists` (`instances_post.go`, "Improve instance creation
/// errors"); 6.0 accepts it and fails the operation.
fn refuse_existing(ctx: &Ctx, project: &str, name: &str) -> Result<(), ApiError> {
    if ctx
        .app
        .has_extension(crate::line::CREATE_REFUSES_EXISTING_NAME)
        && ctx.app.snapshot().state.instance(project, name).is_some()
    {
        return Err(ApiError::internal(format!(
            "Instance {name:?} already exists"
        )));
    }
    Ok(())
}

/// `POST /1.0/instances` with `source.type: copy` on the same server: the source's local
/// config (without its `volatile.` keys, except `volatile.base_image` and
/// `volatile.last_state.idmap`) and devices under what the request sets, fresh identity keys,
/// `volatile.apply_template: copy`, the source's snapshots unless `instance_only`, and its
/// files. A snapshot source (`c1/s1`) gives its own config, devices and files, and no snapshots.
/// The config key that records the `@group` an instance was placed in.
const CLUSTER_GROUP: &str = "volatile.cluster.group";

/// The group of a `?target=@group` creation on a cluster (the daemon records it in
/// `volatile.cluster.group`, measured).
fn target_group(ctx: &Ctx) -> Option<String> {
    ctx.app.cluster()?;
    ctx.param("target")?.strip_prefix('@').map(str::to_string)
}

fn copy(ctx: &Ctx, name: String, source: Source, req: CreateBody) -> ApiResult {
    let project = ctx.project();
    if source.source.is_empty() {
        return Err(ApiError::bad_request("Must specify a source instance"));
    }
    let (parent, snap) = match source.source.split_once('/') {
        Some((parent, snap)) => (parent.to_string(), Some(snap.to_string())),
        None => (source.source.clone(), None),
    };
    let from = {
        let state = ctx.app.state();
        let mut from = match &snap {
            None => super::found_instance(&state, &project, &parent)?,
            Some(snap) => state
                .instance(&project, &parent)
                .filter(|i| i.snapshot(snap).is_some())
                .ok_or_else(|| super::snapshot_not_found(&parent, snap, &project))?,
        }
        .clone();
        if let Some(snapshot) = snap.as_deref().and_then(|s| from.snapshot(s)).cloned() {
            from.config = snapshot.config;
            from.devices = snapshot.devices;
            from.profiles = snapshot.profiles;
            from.snapshots.clear();
        }
        if !req.kind.is_empty() && req.kind != from.kind {
            return Err(ApiError::bad_request(
                "Instance type should not be specified or should match source type",
            ));
        }
        from
    };
    refuse_existing(ctx, &project, &name)?;
    let source_url = crate::state::url(
        &format!(
            "/1.0/instances/{}",
            percent_encoding::utf8_percent_encode(&source.source, SEGMENT)
        ),
        &project,
    );
    let mut spec = OpSpec::task(
        &project,
        "Creating instance",
        crate::state::url(&format!("/1.0/instances/{name}"), &project),
    );
    // A copy onto another cluster member names only the new instance (measured).
    let mut urls = vec![crate::state::url(
        &format!("/1.0/instances/{name}"),
        &project,
    )];
    if from.location == ctx.location() {
        urls.push(source_url);
    }
    spec.resources.insert("instances".into(), urls);
    let app = std::sync::Arc::clone(&ctx.app);
    let location = ctx.location();
    let across = from.location.is_some() && from.location != location;
    let group = target_group(ctx);
    let line = ctx.app.settings.line;
    let op = ctx.start_task(spec, Box::new(move |state: &mut State| {
            if state.instance(&project, &name).is_some() {
                return Err(ApiError::internal(
                    "Failed creating instance record: Add instance info to the database: Failed to create \"instances\" entry: UNIQUE constraint failed: instances.project_id, instances.name",
                ));
            }
            let mut config = req.config.unwrap_or_default();
            let mut devices = req.devices.unwrap_or_default();
            if across {
                // A migration: the new instance is what the request says (the official client
                // sends the source's config and devices), its root disk made a local device.
                let profiles = req.profiles.clone().unwrap_or_else(|| vec!["default".into()]);
                let expanded = expanded_devices(state, &project, &profiles, &devices);
                if let Some((name, root)) = expanded.iter().find(|(_, d)| is_root_disk(d)) {
                    devices.entry(name.clone()).or_insert_with(|| root.clone());
                }
            } else {
                for (key, value) in &from.config {
                    let kept = key == "volatile.base_image"
                        || key == "volatile.last_state.idmap"
                        || !key.starts_with("volatile.");
                    if kept && !config.contains_key(key) {
                        config.insert(key.clone(), value.clone());
                    }
                }
                for (key, value) in &from.devices {
                    devices.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
            if let Some(why) = config_problem(&config, line).or_else(|| devices_problem(&devices)) {
                return Err(ApiError::internal(format!("Failed creating instance record: {why}")));
            }
            let mut instance = Instance::from_image(&name, &project, None);
            instance.location = location;
            instance.config.extend(config);
            if let Some(group) = group {
                instance.config.insert(CLUSTER_GROUP.into(), group);
            }
            instance
                .config
                .insert("volatile.apply_template".into(), "copy".into());
            instance.kind.clone_from(&from.kind);
            instance.architecture.clone_from(&from.architecture);
            instance.devices = devices;
            if let Some(profiles) = req.profiles {
                instance.profiles = profiles;
            }
            instance.description = req.description;
            instance.ephemeral = req.ephemeral;
            if !source.instance_only {
                instance.snapshots.clone_from(&from.snapshots);
            }
            if req.start {
                instance.power_on();
            }
            state.instances.push(std::sync::Arc::new(instance));
            let mut files = app.files();
            match &snap {
                None => files.copy_instance(&project, &from.name, &name, !source.instance_only),
                Some(snap) => {
                    files.remove_instance(&project, &name);
                    let tree = files.tree_of(&project, &from.name, Some(snap));
                    files.set_tree(&project, &name, None, tree);
                }
            }
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// What a path segment escapes (Go's `url.PathEscape`): everything but unreserved characters.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(super) fn find_image(
    state: &State,
    project: &str,
    alias: &str,
    fingerprint: &str,
) -> Option<crate::state::Image> {
    let owner = state.image_project(project);
    let images = state.images.iter().filter(|i| i.project == owner);
    let mut found = images.clone().filter(|i| {
        (!alias.is_empty() && i.aliases.iter().any(|a| a.name == alias))
            || (alias.is_empty()
                && !fingerprint.is_empty()
                && i.fingerprint.starts_with(fingerprint))
    });
    let first = found.next()?;
    found.next().is_none().then(|| first.clone())
}

fn generated_name() -> String {
    format!("fake-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PutBody {
    #[serde(deserialize_with = "super::null_default")]
    config: StringMap,
    #[serde(deserialize_with = "super::null_default")]
    devices: Devices,
    profiles: Option<Vec<String>>,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(deserialize_with = "super::null_default")]
    ephemeral: bool,
    #[serde(deserialize_with = "super::null_default")]
    restore: String,
    #[serde(deserialize_with = "super::null_default")]
    stateful: bool,
}

pub(super) fn put(ctx: &Ctx, name: &str, headers: &HeaderMap, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        let instance = super::found_instance(&state, &project, name)?;
        check_etag(headers, &instance.etag(&state))?;
        instance.url()
    };
    let req: PutBody = parse_body(body)?;
    if req.restore.is_empty() {
        check_profiles(&ctx.app.state(), &project, req.profiles.iter().flatten())?;
    }
    let name = name.to_string();
    let app = std::sync::Arc::clone(&ctx.app);
    let line = ctx.app.settings.line;
    let (description, work): (&'static str, crate::operations::Work) = if req.restore.is_empty() {
        (
            "Updating instance",
            Box::new(move |state: &mut State| update(state, &project, &name, req, line)),
        )
    } else {
        (
            "Restoring snapshot",
            Box::new(move |state: &mut State| {
                let short = req
                    .restore
                    .strip_prefix(&format!("{name}/"))
                    .unwrap_or(&req.restore)
                    .to_string();
                let outcome = restore(state, &project, &name, &req.restore)?;
                // The snapshot's rootfs comes back, files included.
                app.files().restore(&project, &name, &short);
                Ok(outcome)
            }),
        )
    };
    let op = ctx.start_task(
        OpSpec::task(&ctx.project(), description, instance_url),
        work,
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

fn update(
    state: &mut State,
    project: &str,
    name: &str,
    req: PutBody,
    line: IncusLine,
) -> Result<Option<Value>, ApiError> {
    let instance = super::found_instance(state, project, name)?;
    // The config's keys and values are checked before its volatile keys (measured: an edit
    // that drops the idmap keys and adds an unknown key is refused for the unknown key).
    validate_config(&req.config, line).map_err(ApiError::internal)?;
    let idmap_dropped = instance
        .config
        .keys()
        .filter(|k| k.starts_with("volatile.idmap.") || *k == "volatile.last_state.idmap")
        .any(|k| !req.config.contains_key(k));
    if idmap_dropped {
        return Err(ApiError::internal(
            "Volatile idmap keys can't be deleted by the user",
        ));
    }
    check_device_names(line.has_extension(DEVICE_NAMES), &req.devices)?;
    validate_devices(&req.devices).map_err(ApiError::internal)?;
    // The daemon checks the expanded devices: the new profiles' ones, then the local ones.
    let expanded = expanded_devices(
        state,
        project,
        req.profiles.as_deref().unwrap_or_default(),
        &req.devices,
    );
    if let Some(why) = duplicate_profile(req.profiles.as_deref().unwrap_or_default()) {
        return Err(ApiError::internal(why));
    }
    if !has_root_disk(&expanded) {
        return Err(ApiError::internal(NO_ROOT_ON_UPDATE));
    }
    if let Some(why) = missing_volume(state, project, &expanded) {
        return Err(ApiError::new(404, why));
    }
    let running = instance.status == crate::state::PowerState::Running;
    live_user_keys(line, running, &instance.devices, &req.devices)?;
    let instance = super::found_instance_mut(state, project, name)?;
    instance.config = req.config;
    instance.devices = req.devices;
    instance.profiles = req.profiles.unwrap_or_default();
    instance.description = req.description;
    instance.ephemeral = req.ephemeral;
    instance.stateful = req.stateful;
    Ok(None)
}

/// On a line whose `user.*` device keys update live ([`crate::line::USER_KEYS_UPDATE_LIVE`]), a
/// running instance refuses a change of only `user.*` keys to a device that cannot be updated
/// (`Failed to update device "d1": Device does not support updates`); before, the daemon
/// removed and added the device again.
fn live_user_keys(
    line: IncusLine,
    running: bool,
    old: &Devices,
    new: &Devices,
) -> Result<(), ApiError> {
    if !running || !line.has_extension(crate::line::USER_KEYS_UPDATE_LIVE) {
        return Ok(());
    }
    let without_user = |device: &StringMap| -> StringMap {
        device
            .iter()
            .filter(|(k, _)| !k.starts_with("user."))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    // `disk` and the nics whose driver has `Update` (bridged, macvlan, OVN, physical, routed).
    let updatable = |device: &StringMap| match device.get("type").map(String::as_str) {
        Some("disk") => true,
        Some("nic") => !device
            .get("nictype")
            .is_some_and(|t| ["p2p", "sriov", "ipvlan"].contains(&t.as_str())),
        _ => false,
    };
    let refused = new.iter().find(|(name, device)| {
        old.get(*name).is_some_and(|before| {
            before != *device && without_user(before) == without_user(device) && !updatable(device)
        })
    });
    match refused {
        Some((name, _)) => Err(ApiError::internal(format!(
            "Failed to update device {name:?}: Device does not support updates"
        ))),
        None => Ok(()),
    }
}

/// The extension since which device names must be API names (`Invalid device name "a/b"`).
const DEVICE_NAMES: &str = crate::line::DEVICE_NAMES_ARE_API_NAMES;

/// On a line whose devices' names must be API names, the first that is not, as the daemon
/// refuses it when it loads the instance's devices (`instance/drivers/load.go`).
fn check_device_names(api_names: bool, devices: &Devices) -> Result<(), ApiError> {
    match device_names_problem(devices).filter(|_| api_names) {
        Some(why) => Err(ApiError::internal(format!("Invalid devices: {why}"))),
        None => Ok(()),
    }
}

/// The daemon's update error for an instance left without a root disk.
const NO_ROOT_ON_UPDATE: &str = "Invalid root disk device: No root device could be found";

/// The devices of `profiles` (in order) under the local `devices`.
fn expanded_devices(
    state: &State,
    project: &str,
    profiles: &[String],
    devices: &Devices,
) -> Devices {
    let mut expanded = Devices::new();
    for profile in profiles {
        if let Some(profile) = state.profile(project, profile) {
            expanded.extend(profile.devices.clone());
        }
    }
    expanded.extend(devices.clone());
    expanded
}

/// 404 `Profile not found` when an update names a profile the project does not see.
fn check_profiles<'a>(
    state: &State,
    project: &str,
    mut names: impl Iterator<Item = &'a String>,
) -> Result<(), ApiError> {
    match names.any(|name| state.profile(project, name).is_none()) {
        true => Err(ApiError::new(404, "Profile not found")),
        false => Ok(()),
    }
}

fn restore(
    state: &mut State,
    project: &str,
    name: &str,
    snapshot: &str,
) -> Result<Option<Value>, ApiError> {
    let short = snapshot
        .strip_prefix(&format!("{name}/"))
        .unwrap_or(snapshot);
    let instance = super::found_instance_mut(state, project, name)?;
    let snap = instance
        .snapshot(short)
        .cloned()
        .ok_or_else(|| ApiError::internal(format!("Snapshot {name}/{short} does not exist")))?;
    instance.restore(&snap);
    Ok(None)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PatchBody {
    config: Option<StringMap>,
    devices: Option<Devices>,
    profiles: Option<Vec<String>>,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    ephemeral: Option<bool>,
    #[serde(deserialize_with = "super::null_default")]
    restore: String,
}

pub(super) fn patch(ctx: &Ctx, name: &str, headers: &HeaderMap, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let current = super::found_instance(&state, &project, name)?;
    check_etag(headers, &current.etag(&state))?;
    let req: PatchBody = parse_body(body)?;
    if !req.restore.is_empty() {
        return Err(ApiError::bad_request("Can't call PATCH in restore mode"));
    }
    let mut config = current.config.clone();
    for (key, value) in req.config.unwrap_or_default() {
        if value.is_empty() {
            config.remove(&key);
        } else {
            config.insert(key, value);
        }
    }
    validate_config(&config, ctx.app.settings.line).map_err(ApiError::internal)?;
    let mut devices = current.devices.clone();
    devices.extend(req.devices.unwrap_or_default());
    check_device_names(ctx.app.has_extension(DEVICE_NAMES), &devices)?;
    validate_devices(&devices).map_err(ApiError::internal)?;
    check_profiles(&state, &project, req.profiles.iter().flatten())?;
    let profiles = req.profiles.as_ref().unwrap_or(&current.profiles);
    if let Some(why) = duplicate_profile(profiles) {
        return Err(ApiError::internal(why));
    }
    if !has_root_disk(&expanded_devices(&state, &project, profiles, &devices)) {
        return Err(ApiError::internal(NO_ROOT_ON_UPDATE));
    }
    if let Some(why) = missing_volume(&state, &project, &devices) {
        return Err(ApiError::new(404, why));
    }
    let running = current.status == crate::state::PowerState::Running;
    live_user_keys(ctx.app.settings.line, running, &current.devices, &devices)?;
    let instance = super::found_instance_mut(&mut state, &project, name)?;
    instance.config = config;
    instance.devices = devices;
    if let Some(profiles) = req.profiles {
        instance.profiles = profiles;
    }
    if let Some(ephemeral) = req.ephemeral {
        instance.ephemeral = ephemeral;
    }
    instance.description = req.description;
    ctx.applied();
    Ok(envelope::empty())
}

pub(super) fn delete(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        let instance = super::found_instance(&state, &project, name)?;
        if instance.status != crate::state::PowerState::Stopped {
            return Err(ApiError::bad_request("Instance is running"));
        }
        instance.url()
    };
    let name = name.to_string();
    let spec = OpSpec::task(&project, "Deleting instance", instance_url);
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            state
                .instances
                .retain(|i| !(i.project == project && i.name == name));
            // Its recorded exec output goes with it, as the daemon removes the instance's logs.
            app.files().remove_instance(&project, &name);
            app.exec_logs().remove(&(project, name));
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RenameBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    migration: bool,
    /// A move to another project (with `migration`).
    #[serde(deserialize_with = "super::null_default")]
    project: String,
    #[serde(deserialize_with = "super::null_default")]
    instance_only: bool,
    #[serde(deserialize_with = "super::null_default")]
    live: bool,
}

/// `POST /1.0/instances/{name}` with a new name (renames only; migration is out of scope).
pub(super) fn rename(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        // The daemon looks the instance's member up first, with its own text.
        let instance = state.instance(&project, name).ok_or_else(|| {
            ApiError::new(
                404,
                "Failed to get address of instance's member: Instance not found",
            )
        })?;
        instance.url()
    };
    let req: RenameBody = parse_body(body)?;
    let no_target = ctx.param("target").is_none_or(str::is_empty);
    if req.migration && !req.project.is_empty() && no_target {
        let request = super::instance_move::ProjectMove {
            project: req.project,
            name: req.name,
            instance_only: req.instance_only,
            live: req.live,
        };
        return super::instance_move::move_to_project(ctx, name, request);
    }
    if req.migration {
        return Err(ApiError::not_implemented());
    }
    check_name(&req.name)?;
    if ctx.app.state().instance(&project, &req.name).is_some() {
        return Err(ApiError::new(
            409,
            format!("Name \"{}\" already in use", req.name),
        ));
    }
    let (old, new) = (name.to_string(), req.name);
    let spec = OpSpec::task(&project, "Renaming instance", instance_url);
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if state.instance(&project, &new).is_some() {
                return Err(ApiError::internal(format!("Name \"{new}\" already in use")));
            }
            let instance = super::found_instance_mut(state, &project, &old)?;
            if instance.status != crate::state::PowerState::Stopped {
                return Err(ApiError::internal(
                    "Renaming of running instance not allowed",
                ));
            }
            instance.name.clone_from(&new);
            // As the daemon: the templates of the `rename` trigger apply at the next start.
            instance
                .config
                .insert("volatile.apply_template".into(), "rename".into());
            app.files().rename_instance(&project, &old, &new);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{serve, Outcome, Peer};
    use crate::app::{App, Identity, Settings};
    use crate::journal::Listener;
    use crate::line::IncusLine;
    use crate::state::Project;
    use bytes::Bytes;
    use http::Request;
    use http_body_util::BodyExt;
    use std::sync::Arc;

    /// Instances in two projects, of both types, running and stopped, with profile config, local
    /// config, devices and snapshots.
    fn state() -> State {
        let mut state = State::default_state();
        state
            .profiles
            .iter_mut()
            .for_each(|p| _ = p.config.insert("limits.cpu".into(), "2".into()));
        state.projects.push(Project {
            name: "other".into(),
            description: String::new(),
            config: [("features.profiles".to_string(), "false".to_string())].into(),
        });
        for (name, project, kind, running) in [
            ("c1", "default", "container", false),
            ("v1", "default", "virtual-machine", true),
            ("c2", "other", "container", true),
            ("c3", "default", "container", false),
        ] {
            let mut instance = Instance::from_image(name, project, None);
            instance.kind = kind.into();
            instance.config.insert("user.role".into(), name.into());
            if running {
                instance.power_on();
                instance.config.insert("limits.cpu".into(), "4".into());
                instance
                    .snapshots
                    .push(instance.take_snapshot("s0", false, None));
            }
            instance.devices.insert(
                "eth0".into(),
                [("type".to_string(), "nic".to_string())].into(),
            );
            state.instances.push(Arc::new(instance));
        }
        state
    }

    /// The list as it was built before the snapshots: every object as a value, per request.
    fn reference_list(state: &State, line: IncusLine, query: &[(&str, &str)]) -> Vec<u8> {
        let param = |key: &str| query.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let filter = param("filter")
            .filter(|f| !f.is_empty())
            .map(|f| Filter::parse(f).unwrap());
        let kind = param("instance-type").filter(|t| !t.is_empty());
        let projects: Vec<String> = if param("all-projects") == Some("true") {
            state.projects.iter().map(|p| p.name.clone()).collect()
        } else {
            vec![param("project")
                .filter(|p| !p.is_empty())
                .unwrap_or("default")
                .into()]
        };
        let recursion: u8 = param("recursion").and_then(|r| r.parse().ok()).unwrap_or(0);
        let mut out = Vec::new();
        for instance in state
            .instances
            .iter()
            .filter(|i| projects.contains(&i.project))
        {
            if kind.is_some_and(|k| k != instance.kind) {
                continue;
            }
            let object = instance.to_json(state);
            if filter
                .as_ref()
                .is_some_and(|f| !f.matches(&object).unwrap())
            {
                continue;
            }
            out.push(match recursion {
                0 => json!(instance.url()),
                1 => object,
                _ => instance.to_full_json(state, line),
            });
        }
        body_of(
            json!({"type": "sync", "status": "Success", "status_code": 200, "operation": "",
            "error_code": 0, "error": "", "metadata": out}),
        )
    }

    fn body_of(value: Value) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&value).unwrap();
        bytes.push(b'\n');
        bytes
    }

    async fn get(app: &Arc<App>, path: &str) -> (u16, Option<String>, Vec<u8>) {
        let req = Request::get(path).body(Bytes::new()).unwrap();
        let peer = Peer {
            listener: Listener::Unix,
            fingerprint: None,
            member: None,
        };
        let Outcome::Respond(resp) = serve(app, req, peer).await else {
            panic!("no response")
        };
        let etag = resp
            .headers()
            .get(http::header::ETAG)
            .map(|v| v.to_str().unwrap().to_string());
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, etag, bytes.to_vec())
    }

    #[tokio::test]
    async fn lists_from_cached_json_are_byte_for_byte_the_lists_built_per_request() {
        for line in IncusLine::all() {
            lists_of_a_line_are_the_lists_built_per_request(line).await;
        }
    }

    async fn lists_of_a_line_are_the_lists_built_per_request(line: IncusLine) {
        let state = state();
        let settings = Settings {
            line,
            ..Settings::default()
        };
        let app = App::new(state.clone(), Identity::default(), settings);
        let queries: &[&[(&str, &str)]] = &[
            &[],
            &[("recursion", "1")],
            &[("recursion", "2")],
            &[("recursion", "7")],
            &[("recursion", "x")],
            &[("project", "other"), ("recursion", "1")],
            &[("all-projects", "true"), ("recursion", "1")],
            &[("instance-type", "virtual-machine"), ("recursion", "1")],
            &[("filter", "status eq Running"), ("recursion", "1")],
            &[("filter", "config.user.role eq c3 or name eq c1")],
            &[
                ("filter", "expanded_config.limits.cpu eq 2"),
                ("recursion", "1"),
            ],
            &[(
                "filter",
                "not expanded_config.limits.cpu eq 4 and type eq container",
            )],
            &[("filter", "status eq RUNNING"), ("all-projects", "true")],
            &[("filter", "devices.eth0.type eq nic"), ("recursion", "2")],
            &[("filter", "ephemeral eq false and location eq none")],
            &[("filter", r#"profiles eq ["default"]"#), ("recursion", "1")],
            &[("filter", "name eq C.* or name eq v1 and type eq container")],
        ];
        for query in queries {
            let encoded: String = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(query.iter())
                .finish();
            let (status, _, body) = get(&app, &format!("/1.0/instances?{encoded}")).await;
            assert_eq!(status, 200, "{line}: {query:?}");
            let expected = reference_list(&state, line, query);
            assert_eq!(
                String::from_utf8_lossy(&body),
                String::from_utf8_lossy(&expected),
                "{line}: {query:?}"
            );
        }
    }

    #[tokio::test]
    async fn gets_from_cached_json_are_byte_for_byte_the_objects_built_per_request() {
        for line in IncusLine::all() {
            gets_of_a_line_are_the_objects_built_per_request(line).await;
        }
    }

    async fn gets_of_a_line_are_the_objects_built_per_request(line: IncusLine) {
        let state = state();
        let settings = Settings {
            line,
            ..Settings::default()
        };
        let app = App::new(state.clone(), Identity::default(), settings);
        for instance in &state.instances {
            let base = format!(
                "/1.0/instances/{}?project={}",
                instance.name, instance.project
            );
            let etag = Some(format!("\"{}\"", instance.etag(&state)));
            let (_, tag, body) = get(&app, &base).await;
            assert_eq!(
                (tag, body),
                (
                    etag.clone(),
                    body_of(envelope::sync_envelope(instance.to_json(&state)))
                )
            );
            let (_, tag, body) = get(&app, &format!("{base}&recursion=1")).await;
            let full = body_of(envelope::sync_envelope(instance.to_full_json(&state, line)));
            assert_eq!((tag, body), (etag, full));
            let state_path = format!(
                "/1.0/instances/{}/state?project={}",
                instance.name, instance.project
            );
            let (_, tag, body) = get(&app, &state_path).await;
            assert_eq!(
                (tag, body),
                (
                    None,
                    body_of(envelope::sync_envelope(instance.state_json(line)))
                )
            );
        }
    }

    #[tokio::test]
    async fn a_change_is_seen_by_the_next_read_and_other_instances_keep_their_bytes() {
        let app = App::new(state(), Identity::default(), Settings::default());
        let (_, before_tag, before) = get(&app, "/1.0/instances/c1").await;
        let (_, _, c3_before) = get(&app, "/1.0/instances/c3").await;
        if let Some(c1) = app.state().instance_mut("default", "c1") {
            c1.config.insert("user.changed".into(), "yes".into());
        }
        let (_, after_tag, after) = get(&app, "/1.0/instances/c1").await;
        assert_ne!(before_tag, after_tag);
        assert_ne!(before, after);
        assert!(String::from_utf8_lossy(&after).contains("user.changed"));
        assert_eq!(get(&app, "/1.0/instances/c3").await.2, c3_before);
        let live = app.state().clone();
        let (_, _, list) = get(&app, "/1.0/instances?recursion=1").await;
        let line = Settings::default().line;
        assert_eq!(list, reference_list(&live, line, &[("recursion", "1")]));
    }

    #[test]
    fn fields_read_from_the_instance_equal_the_fields_of_its_rendered_object() {
        let state = state();
        let snapshot = crate::state::Snapshot::new(state.clone(), IncusLine::V6_0);
        let projects: Vec<String> = state.projects.iter().map(|p| p.name.clone()).collect();
        let paths = [
            "name",
            "project",
            "type",
            "architecture",
            "description",
            "status",
            "location",
            "ephemeral",
            "stateful",
            "config.user.role",
            "config.limits.cpu",
            "config.nope",
            "config.volatile.uuid",
            "expanded_config.limits.cpu",
            "expanded_config.user.role",
            "expanded_config.nope",
            "devices.eth0.type",
            "expanded_devices.root.pool",
            "profiles",
            "nope",
            "name.x",
            "",
        ];
        for view in snapshot.instances_in(&projects) {
            let object = view.instance.to_json(&state);
            let fields = InstanceFields::new(&view);
            for path in paths {
                assert_eq!(
                    fields.field(path),
                    Fields::field(&object, path),
                    "{} {path}",
                    view.instance.name
                );
            }
        }
    }
}
