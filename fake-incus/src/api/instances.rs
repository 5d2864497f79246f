//! `/1.0/instances` and `/1.0/instances/{name}`: list, create, get, update (PUT, restore),
//! patch and delete.

use super::filter::Filter;
use super::validation::{
    check_name, config_problem, devices_problem, validate_config, validate_devices,
};
use super::{instance_not_found, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::operations::OpSpec;
use crate::state::{Devices, Instance, State, StringMap};
use http::{HeaderMap, Method};
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) fn route(
    ctx: &Ctx,
    method: &Method,
    rest: &[&str],
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult {
    match (rest, method.as_str()) {
        ([], "GET") => list(ctx),
        ([], "POST") => create(ctx, body),
        ([], _) => Err(ApiError::not_implemented()),
        ([name], "GET") => get(ctx, name),
        ([name], "PUT") => put(ctx, name, headers, body),
        ([name], "PATCH") => patch(ctx, name, headers, body),
        ([name], "DELETE") => delete(ctx, name),
        ([name], "POST") => rename(ctx, name, body),
        ([_], _) => Err(ApiError::not_implemented()),
        _ => Err(ApiError::not_found()),
    }
}

fn list(ctx: &Ctx) -> ApiResult {
    let filter = ctx
        .param("filter")
        .filter(|f| !f.is_empty())
        .map(Filter::parse)
        .transpose()?;
    let kind = ctx
        .param("instance-type")
        .filter(|t| !t.is_empty())
        .map(String::from);
    let projects = ctx.projects();
    let recursion = ctx.recursion();
    let state = ctx.app.state();
    let mut out = Vec::new();
    for instance in state
        .instances
        .iter()
        .filter(|i| projects.contains(&i.project))
    {
        if kind.as_ref().is_some_and(|k| *k != instance.kind) {
            continue;
        }
        let object = instance.to_json(&state);
        if filter.as_ref().is_some_and(|f| !f.matches(&object)) {
            continue;
        }
        out.push(match recursion {
            0 => json!(instance.url()),
            1 => object,
            _ => instance.to_full_json(&state),
        });
    }
    Ok(envelope::sync(Value::Array(out)))
}

fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let state = ctx.app.state();
    let instance = state
        .instance(&project, name)
        .ok_or_else(|| instance_not_found(name, &project))?;
    let object = if ctx.recursion() >= 1 {
        instance.to_full_json(&state)
    } else {
        instance.to_json(&state)
    };
    Ok(envelope::sync_etag(object, &instance.etag(&state)))
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

fn create(ctx: &Ctx, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    if ctx.app.state().project(&project).is_none() {
        return Err(ApiError::new(
            404,
            "Failed loading project: Project not found",
        ));
    }
    let req: CreateBody = parse_body(body)?;
    if ctx.param("target").is_some_and(|t| !t.is_empty()) {
        return Err(ApiError::bad_request("Target only allowed when clustered"));
    }
    let name = if req.name.is_empty() {
        generated_name()
    } else {
        req.name.clone()
    };
    check_name(&name)?;
    let source = req.source.unwrap_or(Source {
        kind: String::new(),
        alias: String::new(),
        fingerprint: String::new(),
    });
    if source.kind != "image" && source.kind != "none" {
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
    let instance_url = crate::state::url(&format!("/1.0/instances/{name}"), &project);
    let spec = OpSpec::task(&project, "Creating instance", instance_url);
    let op = ctx.app.start_task(
        spec,
        ctx.fault.clone(),
        Box::new(move |state: &mut State| {
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
            if let Some(why) = config_problem(&config).or_else(|| devices_problem(&devices)) {
                return Err(ApiError::internal(format!("Failed creating instance record: {why}")));
            }
            let mut instance = Instance::from_image(&name, &project, image.as_ref());
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
            state.instances.push(instance);
            Ok(Some(json!({
                "create_instance_from_image_unpack_progress": "Unpacking image: 100% (1.00GB/s)",
                "progress": {"percent": "100", "speed": "1000000000", "stage": "create_instance_from_image_unpack"},
            })))
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

fn find_image(
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

/// If-Match: quotes stripped, compared literally with the current ETag.
pub(super) fn check_etag(headers: &HeaderMap, current: &str) -> Result<(), ApiError> {
    let Some(sent) = headers.get(http::header::IF_MATCH) else {
        return Ok(());
    };
    let sent = String::from_utf8_lossy(sent.as_bytes());
    let sent = sent.trim_matches('"');
    if sent == current {
        Ok(())
    } else {
        Err(ApiError::new(
            412,
            format!("ETag doesn't match: {current} vs {sent}"),
        ))
    }
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

fn put(ctx: &Ctx, name: &str, headers: &HeaderMap, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| instance_not_found(name, &project))?;
        check_etag(headers, &instance.etag(&state))?;
        instance.url()
    };
    let req: PutBody = parse_body(body)?;
    let name = name.to_string();
    let (description, work): (&'static str, crate::app::Work) = if req.restore.is_empty() {
        (
            "Updating instance",
            Box::new(move |state: &mut State| update(state, &project, &name, req)),
        )
    } else {
        (
            "Restoring snapshot",
            Box::new(move |state: &mut State| restore(state, &project, &name, &req.restore)),
        )
    };
    let op = ctx.app.start_task(
        OpSpec::task(&ctx.project(), description, instance_url),
        ctx.fault.clone(),
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
) -> Result<Option<Value>, ApiError> {
    let instance = state
        .instance(project, name)
        .ok_or_else(|| instance_not_found(name, project))?;
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
    validate_config(&req.config).map_err(ApiError::internal)?;
    validate_devices(&req.devices).map_err(ApiError::internal)?;
    let instance = state
        .instance_mut(project, name)
        .ok_or_else(|| instance_not_found(name, project))?;
    instance.config = req.config;
    instance.devices = req.devices;
    instance.profiles = req.profiles.unwrap_or_default();
    instance.description = req.description;
    instance.ephemeral = req.ephemeral;
    instance.stateful = req.stateful;
    Ok(None)
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
    let instance = state
        .instance_mut(project, name)
        .ok_or_else(|| instance_not_found(name, project))?;
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

fn patch(ctx: &Ctx, name: &str, headers: &HeaderMap, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let current = state
        .instance(&project, name)
        .ok_or_else(|| instance_not_found(name, &project))?;
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
    validate_config(&config).map_err(ApiError::internal)?;
    let mut devices = current.devices.clone();
    devices.extend(req.devices.unwrap_or_default());
    validate_devices(&devices).map_err(ApiError::internal)?;
    let instance = state
        .instance_mut(&project, name)
        .ok_or_else(|| instance_not_found(name, &project))?;
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

fn delete(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| instance_not_found(name, &project))?;
        if instance.status != crate::state::PowerState::Stopped {
            return Err(ApiError::bad_request("Instance is running"));
        }
        instance.url()
    };
    let name = name.to_string();
    let spec = OpSpec::task(&project, "Deleting instance", instance_url);
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.app.start_task(
        spec,
        ctx.fault.clone(),
        Box::new(move |state: &mut State| {
            state
                .instances
                .retain(|i| !(i.project == project && i.name == name));
            // Its recorded exec output goes with it, as the daemon removes the instance's logs.
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
}

/// `POST /1.0/instances/{name}` with a new name (renames only; migration is out of scope).
fn rename(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| instance_not_found(name, &project))?;
        instance.url()
    };
    let req: RenameBody = parse_body(body)?;
    if req.migration {
        return Err(ApiError::not_implemented());
    }
    check_name(&req.name)?;
    let (old, new) = (name.to_string(), req.name);
    let spec = OpSpec::task(&project, "Renaming instance", instance_url);
    let op = ctx.app.start_task(
        spec,
        ctx.fault.clone(),
        Box::new(move |state: &mut State| {
            if state.instance(&project, &new).is_some() {
                return Err(ApiError::internal(format!("Name \"{new}\" already in use")));
            }
            let instance = state
                .instance_mut(&project, &old)
                .ok_or_else(|| instance_not_found(&old, &project))?;
            if instance.status != crate::state::PowerState::Stopped {
                return Err(ApiError::bad_request(
                    "Renaming of running instance not allowed",
                ));
            }
            instance.name = new;
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
