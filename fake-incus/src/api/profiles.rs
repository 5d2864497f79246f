//! `/1.0/profiles`, declared: list, get, create, update (PUT), patch, rename (POST) and delete,
//! as the daemon answers them (all synchronous). Projects without `features.profiles` see and
//! change `default`'s profiles. A change shows at once in the expanded config and devices of
//! the instances that use the profile (their rendered JSON is dropped with the profiles' change,
//! see `state::snapshot`).

use super::resource::{Answer, At, Decl, Resource, Scope, Typed, Verb};
use super::validation::{
    check_entity_name, config_problem, device_names_problem, missing_volume,
    profile_devices_problem,
};
use crate::envelope::ApiError;
use crate::state::{Devices, Profile, State, StringMap};
use serde_json::{json, Value};

pub(super) struct Profiles;

static DECL: Decl = Decl {
    collection: "/1.0/profiles",
    scope: Scope::Project(Some("features.profiles")),
    writable: &["config", "description", "devices"],
    rename: Answer::Location,
    not_found: "Fetch profile: Profile not found",
    exists: (
        500,
        "Error inserting \"{name}\" into database: The profile already exists",
    ),
    project_not_found: ["Failed loading project \"{}\": Project not found"; 2],
    store: &STORE,
    ..Decl::DEFAULTS
};

static STORE: Typed<Profile> = Typed::rows(|s| &s.profiles, |s| &mut s.profiles).per_project();

fn profile(object: &Value) -> Option<Profile> {
    serde_json::from_value(object.clone()).ok()
}

impl Resource for Profiles {
    fn decl(&self) -> &Decl {
        &DECL
    }
    fn template(&self) -> Value {
        json!({"description": "", "config": {}, "devices": {}, "project": ""})
    }
    /// `No name provided`, then (7.0) the API name check, then 6.0's rule.
    fn check_key(&self, key: &str, at: &At) -> Result<(), ApiError> {
        if !key.is_empty() {
            super::resource::api_name(at, "profile", key)?;
        }
        check_entity_name("Profile", key).map_err(ApiError::bad_request)
    }
    /// Config and devices are checked: a create's problem is a 400, an update's a 500.
    fn validate(
        &self,
        _: &State,
        at: &At,
        object: &Value,
        current: Option<&Value>,
    ) -> Result<(), ApiError> {
        let config: StringMap =
            serde_json::from_value(object["config"].clone()).unwrap_or_default();
        let devices: Devices =
            serde_json::from_value(object["devices"].clone()).unwrap_or_default();
        // A line whose device names are API names refuses the others first (measured on 7.0.2:
        // 400 on a create, 500 on an update, the text alone).
        let names = Some(&devices)
            .filter(|_| {
                at.line
                    .has_extension(crate::line::DEVICE_NAMES_ARE_API_NAMES)
            })
            .and_then(device_names_problem);
        let problem = config_problem(&config, at.line)
            .or(names)
            .or_else(|| profile_devices_problem(&devices));
        match problem {
            Some(why) if current.is_some() => Err(ApiError::internal(why)),
            Some(why) => Err(ApiError::bad_request(why)),
            None => Ok(()),
        }
    }
    fn render(&self, state: &State, _: &At, object: Value) -> Value {
        profile(&object)
            .map(|p| p.to_json(state))
            .unwrap_or_default()
    }
    fn not_found(&self, verb: Verb, key: &str) -> ApiError {
        match verb {
            Verb::Update => ApiError::new(
                404,
                format!("Failed to retrieve profile \"{key}\": Profile not found"),
            ),
            Verb::Patch => ApiError::new(
                404,
                format!("Failed to retrieve profile=\"{key}\": Profile not found"),
            ),
            Verb::Rename => ApiError::internal(format!("Profile \"{key}\" doesn't exist")),
            Verb::Delete => ApiError::new(404, "Profile not found"),
            _ => ApiError::new(404, DECL.not_found),
        }
    }
    fn exists(&self, verb: Verb, key: &str) -> ApiError {
        match verb {
            Verb::Rename => ApiError::internal(format!("Profile \"{key}\" already exists")),
            _ => ApiError::internal(format!(
                "Error inserting \"{key}\" into database: The profile already exists"
            )),
        }
    }
    fn protected(&self, key: &str, verb: Verb) -> Result<(), ApiError> {
        match (key, verb) {
            ("default", Verb::Rename) => Err(ApiError::new(
                403,
                "The \"default\" profile cannot be renamed",
            )),
            ("default", Verb::Delete) => Err(ApiError::new(
                403,
                "The \"default\" profile cannot be deleted",
            )),
            _ => Ok(()),
        }
    }
    fn refuse(&self, state: &State, at: &At, key: &str, verb: Verb) -> Result<(), ApiError> {
        if verb == Verb::Delete && !users(state, &at.project, key).is_empty() {
            return Err(ApiError::internal("Profile is currently in use"));
        }
        Ok(())
    }
    /// The daemon saves the profile, then updates its instances one by one and reports those
    /// whose expanded devices it refused.
    fn updated(
        &self,
        state: &mut State,
        at: &At,
        _: &Value,
        after: &Value,
    ) -> Result<(), ApiError> {
        let name = after["name"].as_str().unwrap_or_default();
        let failed: Vec<(String, String, String)> = users(state, &at.project, name)
            .into_iter()
            .filter_map(|(project, instance)| {
                let i = state.instance(&project, &instance)?;
                missing_volume(state, &project, &i.expanded_devices(state))
                    .map(|why| (project, instance, why))
            })
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        let mut message = String::from(
            "The following instances failed to update (profile change still saved):\n",
        );
        for (project, instance, why) in failed {
            message.push_str(&format!(
                " - Project: {project}, Instance: {instance}: {why}\n"
            ));
        }
        Err(ApiError::internal(message))
    }
    /// The instances that used the profile use it under its new name.
    fn renamed(&self, state: &mut State, at: &At, old: &str, new: &str) {
        for (project, instance) in users(state, &at.project, old) {
            if let Some(instance) = state.instance_mut(&project, &instance) {
                for profile in instance.profiles.iter_mut().filter(|p| *p == old) {
                    *profile = new.to_owned();
                }
            }
        }
    }
}

/// The instances (project, name) that use profile `name` of project `owner`.
fn users(state: &State, owner: &str, name: &str) -> Vec<(String, String)> {
    state
        .instances
        .iter()
        .filter(|i| {
            state.profile_project(&i.project) == owner && i.profiles.iter().any(|p| p == name)
        })
        .map(|i| (i.project.clone(), i.name.clone()))
        .collect()
}
