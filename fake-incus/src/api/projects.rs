//! `/1.0/projects[/{name}]`: list, get, create, update (PUT), patch, rename (POST, an
//! operation) and delete, as the daemon answers them. A new project gets the features of
//! [`NEW_PROJECT_FEATURES`] unless its request sets them, and its own `default` profile (with
//! no devices) when it has `features.profiles`. `default` cannot be renamed, deleted or change
//! its features; other projects must be empty to be renamed, deleted or lose a feature.

use super::instances::check_etag;
use super::profiles::created;
use super::validation::{check_entity_name, project_config_problem};
use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::operations::OpSpec;
use crate::state::resources::{NEW_PROJECT_FEATURES, PROJECT_FEATURES};
use crate::state::{Profile, Project, State, StringMap};
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
    let items: Vec<Value> = state
        .projects
        .iter()
        .map(|p| {
            if ctx.recursion() == 0 {
                json!(format!("/1.0/projects/{}", p.name))
            } else {
                p.to_json(state)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let project = state
        .project(name)
        .ok_or_else(|| ApiError::new(404, "Project not found"))?;
    Ok(envelope::sync_etag(project.to_json(state), &project.etag()))
}

/// `POST /1.0/projects` (Go `api.ProjectsPost`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProjectCreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(deserialize_with = "super::null_default")]
    config: StringMap,
}

/// `PUT`/`PATCH /1.0/projects/{name}` (Go `api.ProjectPut`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProjectPutBody {
    description: Option<String>,
    config: Option<StringMap>,
}

/// `POST /1.0/projects/{name}` (Go `api.ProjectPost`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProjectRenameBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
}

fn is_true(config: &StringMap, key: &str) -> bool {
    config
        .get(key)
        .is_some_and(|v| ["true", "1", "yes", "on"].contains(&v.to_lowercase().as_str()))
}

fn create(ctx: &Ctx, body: &[u8]) -> ApiResult {
    let req: ProjectCreateBody = parse_body(body)?;
    check_entity_name("Project", &req.name).map_err(ApiError::bad_request)?;
    let mut config = req.config;
    for feature in NEW_PROJECT_FEATURES {
        config
            .entry((*feature).to_string())
            .or_insert_with(|| "true".into());
    }
    if let Some(why) = project_config_problem(&config) {
        return Err(ApiError::bad_request(why));
    }
    let mut state = ctx.app.state();
    if state.project(&req.name).is_some() {
        return Err(ApiError::internal(format!(
            "Failed creating project \"{}\": Failed adding database record: Failed to create \"projects\" entry: UNIQUE constraint failed: projects.name",
            req.name
        )));
    }
    if is_true(&config, "features.profiles") {
        state.profiles.push(Profile::project_default(&req.name));
    }
    let location = format!("/1.0/projects/{}", req.name);
    state.projects.push(Project {
        name: req.name,
        description: req.description,
        config,
    });
    drop(state);
    ctx.applied();
    created(&location)
}

fn update(ctx: &Ctx, name: &str, headers: &HeaderMap, body: &[u8], patch: bool) -> ApiResult {
    let mut state = ctx.app.state();
    let current = state
        .project(name)
        .cloned()
        .ok_or_else(|| ApiError::new(404, "Project not found"))?;
    check_etag(headers, &current.etag())?;
    let req: ProjectPutBody = parse_body(body)?;
    // PATCH keeps the description when absent; the config, when sent, replaces the current
    // one whole, as Incus 6.0.4 does (its merge goes into a copy it then ignores).
    let description = match (patch, req.description) {
        (_, Some(description)) => description,
        (true, None) => current.description.clone(),
        (false, None) => String::new(),
    };
    let config = match (patch, req.config) {
        (_, Some(config)) => config,
        (true, None) => current.config.clone(),
        (false, None) => StringMap::new(),
    };
    if let Some(why) = project_config_problem(&config) {
        return Err(ApiError::bad_request(why));
    }
    let changed: Vec<&str> = PROJECT_FEATURES
        .iter()
        .copied()
        .filter(|f| current.config.get(*f) != config.get(*f))
        .collect();
    if name == "default" && !changed.is_empty() {
        return Err(ApiError::bad_request(
            "You can't change the features of the default project",
        ));
    }
    if !state.project_is_empty(name) {
        // The daemon walks the changed keys in Go map order; the fake takes the features' order.
        for feature in &changed {
            if is_true(&current.config, feature) {
                return Err(ApiError::bad_request(format!(
                    "Project feature \"{feature}\" cannot be disabled on non-empty projects"
                )));
            }
            let explicitly_off = current
                .config
                .get(*feature)
                .is_some_and(|v| ["false", "0", "no", "off"].contains(&v.to_lowercase().as_str()));
            if explicitly_off && *feature != "features.networks.zones" {
                return Err(ApiError::bad_request(format!(
                    "Project feature \"{feature}\" cannot be enabled on non-empty projects"
                )));
            }
        }
    }
    let had_profiles = is_true(&current.config, "features.profiles");
    let has_profiles = is_true(&config, "features.profiles");
    if had_profiles && !has_profiles {
        state.profiles.retain(|p| p.project != name);
    } else if has_profiles && !state.profiles.iter().any(|p| p.project == name) {
        state.profiles.push(Profile::project_default(name));
    }
    if let Some(project) = state.projects.iter_mut().find(|p| p.name == name) {
        project.description = description;
        project.config = config;
    }
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}

fn rename(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    if name == "default" {
        return Err(ApiError::new(
            403,
            "The 'default' project cannot be renamed",
        ));
    }
    let req: ProjectRenameBody = parse_body(body)?;
    let (old, new) = (name.to_string(), req.name);
    let spec = OpSpec {
        resources: Default::default(),
        ..OpSpec::task("default", "Renaming project", String::new())
    };
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if state.project(&old).is_none() {
                return Err(ApiError::new(
                    404,
                    format!("Failed loading project \"{old}\": Project not found"),
                ));
            }
            if state.project(&new).is_some() {
                return Err(ApiError::internal(format!(
                    "A project named \"{new}\" already exists"
                )));
            }
            if !state.project_is_empty(&old) {
                return Err(ApiError::internal("Only empty projects can be renamed"));
            }
            check_entity_name("Project", &new).map_err(ApiError::internal)?;
            for profile in state.profiles.iter_mut().filter(|p| p.project == old) {
                profile.project.clone_from(&new);
            }
            if let Some(project) = state.projects.iter_mut().find(|p| p.name == old) {
                project.name = new;
            }
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

fn delete(ctx: &Ctx, name: &str) -> ApiResult {
    if name == "default" {
        return Err(ApiError::new(
            403,
            "The 'default' project cannot be deleted",
        ));
    }
    let mut state = ctx.app.state();
    if state.project(name).is_none() {
        return Err(ApiError::new(
            404,
            format!("Fetch project \"{name}\": Project not found"),
        ));
    }
    if !state.project_is_empty(name) {
        return Err(ApiError::internal("Only empty projects can be removed."));
    }
    state.profiles.retain(|p| p.project != name);
    state.projects.retain(|p| p.name != name);
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}
