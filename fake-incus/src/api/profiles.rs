//! `/1.0/profiles[/{name}]`: list, get, create, update (PUT), patch, rename (POST) and delete,
//! as the daemon answers them (all synchronous). Projects without `features.profiles` see and
//! change `default`'s profiles. A change shows at once in the expanded config and devices of
//! the instances that use the profile (their rendered JSON is dropped with the profiles' change,
//! see `state::snapshot`).

use super::instances::check_etag;
use super::validation::{
    check_entity_name, config_problem, missing_volume, profile_devices_problem,
};
use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::{url, Devices, Profile, State, StringMap};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) fn route(
    ctx: &Ctx,
    method: &Method,
    rest: &[&str],
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult {
    ctx.require_project(|p| format!("Failed loading project \"{p}\": Project not found"))?;
    match (rest, method.as_str()) {
        ([], "GET") => list(ctx),
        ([], "POST") => create(ctx, body),
        ([name], "GET") => get(ctx, name),
        ([name], "PUT") => update(ctx, name, headers, body, false),
        ([name], "PATCH") => update(ctx, name, headers, body, true),
        ([name], "POST") => rename(ctx, name, body),
        ([name], "DELETE") => delete(ctx, name),
        ([] | [_], _) => Err(ApiError::not_implemented()),
        _ => Err(ApiError::not_found()),
    }
}

fn list(ctx: &Ctx) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let mut items = Vec::new();
    for project in ctx.projects() {
        let owner = state.profile_project(&project);
        for profile in state.profiles.iter().filter(|p| p.project == owner) {
            items.push(if ctx.recursion() == 0 {
                json!(url(&format!("/1.0/profiles/{}", profile.name), &project))
            } else {
                profile.to_json(state)
            });
        }
    }
    Ok(envelope::sync(Value::Array(items)))
}

fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let profile = state
        .profile(&ctx.project(), name)
        .ok_or_else(|| ApiError::new(404, "Fetch profile: Profile not found"))?;
    Ok(envelope::sync_etag(profile.to_json(state), &profile.etag()))
}

/// `POST /1.0/profiles` (Go `api.ProfilesPost`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProfileCreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(deserialize_with = "super::null_default")]
    config: StringMap,
    #[serde(deserialize_with = "super::null_default")]
    devices: Devices,
}

/// `PUT`/`PATCH /1.0/profiles/{name}` (Go `api.ProfilePut`); absent fields are `None` so that
/// a PATCH keeps them.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProfilePutBody {
    description: Option<String>,
    config: Option<StringMap>,
    devices: Option<Devices>,
}

/// `POST /1.0/profiles/{name}` (Go `api.ProfilePost`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProfileRenameBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
}

/// 201 with the new object's URL in `Location` and `null` metadata, as the daemon answers a
/// synchronous create or rename.
pub(super) fn created(location: &str) -> ApiResult {
    let mut resp = envelope::sync(Value::Null);
    *resp.status_mut() = StatusCode::CREATED;
    if let Ok(value) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(http::header::LOCATION, value);
    }
    Ok(resp)
}

/// Config and devices as a profile stores them: keys set to `""` are dropped.
fn without_empty(config: StringMap) -> StringMap {
    config.into_iter().filter(|(_, v)| !v.is_empty()).collect()
}

fn create(ctx: &Ctx, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let req: ProfileCreateBody = parse_body(body)?;
    check_entity_name("Profile", &req.name).map_err(ApiError::bad_request)?;
    if let Some(why) = config_problem(&req.config).or_else(|| profile_devices_problem(&req.devices))
    {
        return Err(ApiError::bad_request(why));
    }
    let mut state = ctx.app.state();
    let owner = state.profile_project(&project);
    if state.profile(&project, &req.name).is_some() {
        return Err(ApiError::internal(format!(
            "Error inserting \"{}\" into database: The profile already exists",
            req.name
        )));
    }
    let location = url(&format!("/1.0/profiles/{}", req.name), &owner);
    state.profiles.push(Profile {
        project: owner,
        name: req.name,
        description: req.description,
        config: without_empty(req.config),
        devices: req.devices,
    });
    drop(state);
    ctx.applied();
    created(&location)
}

fn update(ctx: &Ctx, name: &str, headers: &HeaderMap, body: &[u8], patch: bool) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let current = state.profile(&project, name).cloned().ok_or_else(|| {
        ApiError::new(
            404,
            format!("Failed to retrieve profile \"{name}\": Profile not found"),
        )
    })?;
    check_etag(headers, &current.etag())?;
    let req: ProfilePutBody = parse_body(body)?;
    let (config, devices, description) = if patch {
        let mut config = current.config.clone();
        config.extend(req.config.unwrap_or_default());
        let mut devices = current.devices.clone();
        devices.extend(req.devices.unwrap_or_default());
        let description = req.description.unwrap_or(current.description.clone());
        (config, devices, description)
    } else {
        (
            req.config.unwrap_or_default(),
            req.devices.unwrap_or_default(),
            req.description.unwrap_or_default(),
        )
    };
    if let Some(why) = config_problem(&config).or_else(|| profile_devices_problem(&devices)) {
        return Err(ApiError::internal(why));
    }
    let owner = current.project.clone();
    if let Some(profile) = state
        .profiles
        .iter_mut()
        .find(|p| p.project == owner && p.name == name)
    {
        profile.config = without_empty(config);
        profile.devices = devices;
        profile.description = description;
    }
    ctx.applied();
    // The daemon saves the profile, then updates its instances one by one and reports those
    // whose expanded devices it refused.
    let failed = instances_refusing(&state, &owner, name);
    drop(state);
    if failed.is_empty() {
        return Ok(envelope::empty());
    }
    let mut message =
        String::from("The following instances failed to update (profile change still saved):\n");
    for (project, instance, why) in failed {
        message.push_str(&format!(
            " - Project: {project}, Instance: {instance}: {why}\n"
        ));
    }
    Err(ApiError::internal(message))
}

/// The instances that use a profile and whose expanded devices attach a missing volume.
fn instances_refusing(state: &State, owner: &str, name: &str) -> Vec<(String, String, String)> {
    state
        .instances
        .iter()
        .filter(|i| {
            state.profile_project(&i.project) == owner && i.profiles.iter().any(|p| p == name)
        })
        .filter_map(|i| {
            missing_volume(state, &i.project, &i.expanded_devices(state))
                .map(|why| (i.project.clone(), i.name.clone(), why))
        })
        .collect()
}

fn rename(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    if name == "default" {
        return Err(ApiError::new(
            403,
            "The \"default\" profile cannot be renamed",
        ));
    }
    let project = ctx.project();
    let req: ProfileRenameBody = parse_body(body)?;
    check_entity_name("Profile", &req.name).map_err(ApiError::bad_request)?;
    let mut state = ctx.app.state();
    let owner = state.profile_project(&project);
    if state.profile(&project, &req.name).is_some() {
        return Err(ApiError::internal(format!(
            "Profile \"{}\" already exists",
            req.name
        )));
    }
    if state.profile(&project, name).is_none() {
        return Err(ApiError::internal(format!(
            "Profile \"{name}\" doesn't exist"
        )));
    }
    let users: Vec<(String, String)> = state
        .instances
        .iter()
        .filter(|i| {
            state.profile_project(&i.project) == owner && i.profiles.iter().any(|p| p == name)
        })
        .map(|i| (i.project.clone(), i.name.clone()))
        .collect();
    for (instance_project, instance) in users {
        if let Some(instance) = state.instance_mut(&instance_project, &instance) {
            for profile in instance.profiles.iter_mut().filter(|p| *p == name) {
                profile.clone_from(&req.name);
            }
        }
    }
    if let Some(profile) = state
        .profiles
        .iter_mut()
        .find(|p| p.project == owner && p.name == name)
    {
        profile.name.clone_from(&req.name);
    }
    drop(state);
    ctx.applied();
    created(&url(&format!("/1.0/profiles/{}", req.name), &owner))
}

fn delete(ctx: &Ctx, name: &str) -> ApiResult {
    if name == "default" {
        return Err(ApiError::new(
            403,
            "The \"default\" profile cannot be deleted",
        ));
    }
    let project = ctx.project();
    let mut state = ctx.app.state();
    let owner = state.profile_project(&project);
    if state.profile(&project, name).is_none() {
        return Err(ApiError::new(404, "Profile not found"));
    }
    let in_use = state.instances.iter().any(|i| {
        state.profile_project(&i.project) == owner && i.profiles.iter().any(|p| p == name)
    });
    if in_use {
        return Err(ApiError::internal("Profile is currently in use"));
    }
    state
        .profiles
        .retain(|p| !(p.project == owner && p.name == name));
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}
