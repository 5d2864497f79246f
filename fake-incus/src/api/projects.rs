//! `/1.0/projects`, declared: list, get, create, update (PUT), patch, rename (POST, an
//! operation) and delete, as the daemon answers them, with `state` (usage against `limits.*`)
//! and `access`. A new project gets the features of [`NEW_PROJECT_FEATURES`] unless its request
//! sets them, and its own `default` profile (with no devices) when it has `features.profiles`.
//! `default` cannot be renamed, deleted or change its features; other projects must be empty to
//! be renamed, deleted or lose a feature.

use super::resource::{Answer, At, Decl, Resource, Sub, Typed, Verb};
use super::validation::{project_config_problem, project_name_problem};
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::resources::{NEW_PROJECT_FEATURES, PROJECT_FEATURES};
use crate::state::{Profile, Project, State, StringMap};
use serde_json::{json, Map, Value};

pub(super) struct Projects;

static DECL: Decl = Decl {
    collection: "/1.0/projects",
    rename: Answer::Operation("Renaming project"),
    not_found: "Project not found",
    exists: (
        500,
        "Failed creating project \"{name}\": Failed adding database record: Failed to create \"projects\" entry: UNIQUE constraint failed: projects.name",
    ),
    store: &STORE,
    subs: &[
        Sub {
            method: "GET",
            path: &["state"],
            serve: state,
            does: "Usage of each `limits.*` resource the fake counts, with its limit (-1: none).",
        },
        Sub {
            method: "GET",
            path: &["access"],
            serve: access,
            does: "`null`: the fake has no fine-grained authorization.",
        },
    ],
    limits: "`state` counts instances, their `limits.cpu`/`limits.memory` and networks as the fake holds them; no disk or process usage.",
    ..Decl::DEFAULTS
};

static STORE: Typed<Project> = Typed::rows(|s| &s.projects, |s| &mut s.projects);

fn is_true(config: &Value, key: &str) -> bool {
    config[key]
        .as_str()
        .is_some_and(|v| ["true", "1", "yes", "on"].contains(&v.to_lowercase().as_str()))
}

fn config_of(object: &Value) -> StringMap {
    serde_json::from_value(object["config"].clone()).unwrap_or_default()
}

impl Resource for Projects {
    fn decl(&self) -> &Decl {
        &DECL
    }
    /// (7.0) The API name check first, the empty name included, then 6.0's rule.
    fn check_key(&self, key: &str, at: &At) -> Result<(), ApiError> {
        super::resource::api_name(at, "project", key)?;
        project_name_problem(key).map_or(Ok(()), |why| Err(ApiError::bad_request(why)))
    }
    fn prepare(&self, _: &State, _: &At, object: &mut Value) -> Result<(), ApiError> {
        for feature in NEW_PROJECT_FEATURES {
            if object["config"].get(*feature).is_none() {
                object["config"][*feature] = json!("true");
            }
        }
        Ok(())
    }
    fn validate(
        &self,
        state: &State,
        _: &At,
        object: &Value,
        current: Option<&Value>,
    ) -> Result<(), ApiError> {
        let config = config_of(object);
        if let Some(why) = project_config_problem(&config) {
            return Err(ApiError::bad_request(why));
        }
        let Some(current) = current else {
            return Ok(());
        };
        let name = object["name"].as_str().unwrap_or_default();
        let before = config_of(current);
        let changed: Vec<&str> = PROJECT_FEATURES
            .iter()
            .copied()
            .filter(|f| before.get(*f) != config.get(*f))
            .collect();
        if name == "default" && !changed.is_empty() {
            return Err(ApiError::bad_request(
                "You can't change the features of the default project",
            ));
        }
        if state.project_is_empty(name) {
            return Ok(());
        }
        // The daemon walks the changed keys in Go map order; the fake takes the features' order.
        for feature in changed {
            if is_true(&current["config"], feature) {
                return Err(ApiError::bad_request(format!(
                    "Project feature \"{feature}\" cannot be disabled on non-empty projects"
                )));
            }
            let explicitly_off = before
                .get(feature)
                .is_some_and(|v| ["false", "0", "no", "off"].contains(&v.to_lowercase().as_str()));
            if explicitly_off && feature != "features.networks.zones" {
                return Err(ApiError::bad_request(format!(
                    "Project feature \"{feature}\" cannot be enabled on non-empty projects"
                )));
            }
        }
        Ok(())
    }
    /// `features.networks` needs OVN on a line that says so
    /// ([`crate::line::PROJECT_NETWORKS_NEED_OVN`]); the fake has none. On an update, only when
    /// the feature changes to on.
    fn validate_for_line(
        &self,
        ctx: &Ctx,
        _: &State,
        _: &At,
        object: &Value,
        current: Option<&Value>,
    ) -> Result<(), ApiError> {
        let wanted = is_true(&object["config"], "features.networks");
        let changed = current.is_none_or(|current| {
            current["config"].get("features.networks") != object["config"].get("features.networks")
        });
        if wanted
            && changed
            && ctx
                .app
                .has_extension(crate::line::PROJECT_NETWORKS_NEED_OVN)
        {
            return Err(ApiError::bad_request(
                "OVN is required for projects with \"features.networks\" enabled",
            ));
        }
        Ok(())
    }
    /// PATCH keeps the description when absent; the config, when sent, replaces the current
    /// one whole, as Incus 6.0.4 does (its merge goes into a copy it then ignores).
    fn merge(&self, current: &Value, body: &Map<String, Value>, patch: bool) -> Value {
        let mut next = current.clone();
        for field in ["description", "config"] {
            next[field] = match (body.get(field).filter(|v| !v.is_null()), patch) {
                (Some(sent), _) => sent.clone(),
                (None, true) => current[field].clone(),
                (None, false) => self.template()[field].clone(),
            };
        }
        next
    }
    /// A restricted certificate lists only the projects it may use (the daemon's permission
    /// checker of `GET /1.0/projects`).
    fn shown_to(&self, ctx: &Ctx, object: &Value) -> bool {
        let name = object["name"].as_str().unwrap_or_default();
        super::certificates::restricted_to(ctx)
            .is_none_or(|allowed| allowed.iter().any(|p| p == name))
    }
    fn render(&self, state: &State, _: &At, object: Value) -> Value {
        serde_json::from_value::<Project>(object)
            .map(|p| p.to_json(state))
            .unwrap_or_default()
    }
    fn not_found(&self, verb: Verb, key: &str) -> ApiError {
        match verb {
            Verb::Delete => {
                ApiError::new(404, format!("Fetch project \"{key}\": Project not found"))
            }
            Verb::Rename => ApiError::new(
                404,
                format!("Failed loading project \"{key}\": Project not found"),
            ),
            _ => ApiError::new(404, DECL.not_found),
        }
    }
    /// A create onto a taken name, on a line whose database layer maps the conflict
    /// ([`crate::line::GENERATED_CONFLICTS_ARE_409`]): 409 `This "Project" entry already exists`.
    fn intercept_create(&self, ctx: &Ctx, _: &At, body: &[u8]) -> Option<ApiResult> {
        if !ctx
            .app
            .has_extension(crate::line::GENERATED_CONFLICTS_ARE_409)
        {
            return None;
        }
        let sent = super::resource::body_object(body).ok()?;
        let name = sent.get("name")?.as_str()?;
        ctx.app.snapshot().state.project(name)?;
        Some(Err(ApiError::new(
            409,
            format!("Failed creating project \"{name}\": Failed adding database record: This \"Project\" entry already exists"),
        )))
    }
    fn exists(&self, verb: Verb, key: &str) -> ApiError {
        match verb {
            Verb::Rename => ApiError::internal(format!("A project named \"{key}\" already exists")),
            _ => ApiError::internal(DECL.exists.1.replace("{name}", key)),
        }
    }
    fn protected(&self, key: &str, verb: Verb) -> Result<(), ApiError> {
        match (key, verb) {
            ("default", Verb::Rename) => Err(ApiError::new(
                403,
                "The 'default' project cannot be renamed",
            )),
            ("default", Verb::Delete) => Err(ApiError::new(
                403,
                "The 'default' project cannot be deleted",
            )),
            _ => Ok(()),
        }
    }
    fn refuse(&self, state: &State, _: &At, key: &str, verb: Verb) -> Result<(), ApiError> {
        if state.project_is_empty(key) {
            return Ok(());
        }
        Err(ApiError::internal(match verb {
            Verb::Rename => "Only empty projects can be renamed",
            _ => "Only empty projects can be removed.",
        }))
    }
    fn created(&self, _: &Ctx, state: &mut State, _: &At, object: &Value) {
        if is_true(&object["config"], "features.profiles") {
            let name = object["name"].as_str().unwrap_or_default();
            state.profiles.push(Profile::project_default(name));
        }
    }
    fn updated(
        &self,
        state: &mut State,
        _: &At,
        before: &Value,
        after: &Value,
    ) -> Result<(), ApiError> {
        let name = after["name"].as_str().unwrap_or_default();
        let had = is_true(&before["config"], "features.profiles");
        let has = is_true(&after["config"], "features.profiles");
        if had && !has {
            state.profiles.retain(|p| p.project != name);
        } else if has && !state.profiles.iter().any(|p| p.project == name) {
            state.profiles.push(Profile::project_default(name));
        }
        Ok(())
    }
    fn renamed(&self, state: &mut State, _: &At, old: &str, new: &str) {
        for profile in state.profiles.iter_mut().filter(|p| p.project == old) {
            profile.project = new.to_owned();
        }
    }
    fn deleted(&self, _: &Ctx, state: &mut State, _: &At, key: &str) {
        state.profiles.retain(|p| p.project != key);
    }
}

fn state(ctx: &Ctx, _: &At, key: &str, _: &[&str]) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let project = snapshot
        .state
        .project(key)
        .ok_or_else(|| ApiError::new(404, "Fetch project database object: Project not found"))?;
    Ok(envelope::sync(usage(&snapshot.state, project)))
}

/// `null` (no identity has fine-grained access on a server without an authorizer), even for a
/// project that does not exist, as the daemon answers.
fn access(_: &Ctx, _: &At, _: &str, _: &[&str]) -> ApiResult {
    Ok(envelope::sync(Value::Null))
}

/// `api.ProjectState`: usage against the project's `limits.*` (`-1`: no limit).
fn usage(state: &State, project: &Project) -> Value {
    let instances: Vec<_> = state
        .instances
        .iter()
        .filter(|i| i.project == project.name)
        .collect();
    let count = |kind: Option<&str>| {
        instances
            .iter()
            .filter(|i| kind.is_none_or(|k| i.kind == k))
            .count() as i64
    };
    let networks = state
        .networks
        .iter()
        .filter(|n| n.project == project.name && n.managed)
        .count() as i64;
    let limit = |key: &str| {
        project
            .config
            .get(&format!("limits.{key}"))
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(-1)
    };
    let entry =
        |key: &str, usage: i64| (key.to_owned(), json!({"Limit": limit(key), "Usage": usage}));
    let resources: Map<String, Value> = [
        entry("containers", count(Some("container"))),
        entry("cpu", 0),
        entry("disk", 0),
        entry("instances", count(None)),
        entry("memory", 0),
        entry("networks", networks),
        entry("processes", 0),
        entry("virtual-machines", count(Some("virtual-machine"))),
    ]
    .into_iter()
    .collect();
    json!({"resources": resources})
}
