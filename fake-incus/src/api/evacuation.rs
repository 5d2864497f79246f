//! `POST /1.0/cluster/members/{name}/state`: evacuating a member and restoring it, as Incus
//! 6.0.4 does (`api_cluster_evacuation.go`), measured on a real 3-member cluster:
//!
//! - `{"action": "evacuate", "mode": M}`: 202 `Evacuating cluster member`, `resources: {}`, on
//!   the member. The member is `Evacuated` ("Unavailable due to maintenance") from the start;
//!   its instances are handled one by one in creation order. Each instance's action is the
//!   request's `mode` unless empty or `auto`, else its expanded `cluster.evacuate` (`auto`: `migrate`,
//!   `live-migrate` for a virtual machine with `migration.stateful`). Every action but
//!   `live-migrate` first stops a running instance (keeping `volatile.last_state.power:
//!   RUNNING` so that a restore starts it again); `stop`, `force-stop` and `stateful-stop` end
//!   there. `migrate` (and `live-migrate` of a stopped instance) moves it to the candidate
//!   member with the fewest instances (in its `volatile.cluster.group` if set; none: it stays),
//!   records `volatile.evacuate.origin`, and starts it there if it was running. A
//!   `live-migrate` of a running container fails the whole operation without CRIU
//!   (`Failed to evacuate instances: Failed to migrate instance "X" in project "P": ...`): the
//!   member goes back to `Online`, the instances handled before stay moved. The operation's
//!   metadata is the last step (`evacuation_progress`). Evacuating an evacuated member fails
//!   with `Cluster member is already evacuated`.
//! - `{"action": "restore"}`: 202 `Restoring cluster member`: the member is `Online` again, its
//!   own instances stopped by the evacuation (`volatile.last_state.power: RUNNING`) start, and
//!   the instances evacuated from it (`volatile.evacuate.origin`) come back (stopped first if
//!   running, started after), their origin key removed. Restoring a member that is not
//!   evacuated fails with `Cluster member is already restored`.
//! - A `mode` outside the daemon's list is 400 `Invalid value "x" (not one of [...])`; another
//!   action 400 `Unknown action "x"`.
//!
//! `cluster.evacuate` and `migration.stateful` are read from the instance's expanded config (its
//! profiles', then its own), as `CanMigrate` does.
//!
//! Approximations: devices that cannot migrate are not looked at; a live move back on restore fails as a live evacuation does, with the restore's prefix.

use super::migration::{instances_on, relocate, NO_CRIU, SOURCE_SETUP};
use super::{parse_body, Ctx};
use crate::cluster::{Cluster, Want};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::{Instance, PowerState, State};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The evacuation modes the daemon accepts (`cluster.evacuate`'s values).
const MODES: [&str; 6] = [
    "auto",
    "migrate",
    "live-migrate",
    "stop",
    "stateful-stop",
    "force-stop",
];

const ORIGIN: &str = "volatile.evacuate.origin";
const LAST_POWER: &str = "volatile.last_state.power";

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatePost {
    #[serde(deserialize_with = "super::null_default")]
    action: String,
    #[serde(deserialize_with = "super::null_default")]
    mode: String,
}

/// `POST /1.0/cluster/members/{name}/state` (the request is already on that member).
pub(super) fn post(ctx: &Ctx, cluster: &Arc<Cluster>, name: &str, body: &[u8]) -> ApiResult {
    let req: StatePost = parse_body(body)?;
    if req.action == "evacuate" && !req.mode.is_empty() && !MODES.contains(&req.mode.as_str()) {
        return Err(ApiError::bad_request(format!(
            "Invalid value \"{}\" (not one of [{}])",
            req.mode,
            MODES.join(" ")
        )));
    }
    cluster
        .index(name)
        .ok_or_else(super::cluster_groups::member_not_found)?;
    let description = match req.action.as_str() {
        "evacuate" => "Evacuating cluster member",
        "restore" => "Restoring cluster member",
        other => return Err(ApiError::bad_request(format!("Unknown action \"{other}\""))),
    };
    let spec = OpSpec {
        resources: BTreeMap::new(),
        ..OpSpec::task("default", description, String::new())
    };
    let cluster = Arc::clone(cluster);
    let member = name.to_string();
    let restore = req.action == "restore";
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let outcome = if restore {
                restore_member(&member, state)
            } else {
                evacuate_member(&cluster, &member, &req.mode, state)
            };
            outcome.map(|last| last.map(|step| json!({ "evacuation_progress": step })))
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// Sets the member's `evacuated` flag; the daemon's error when it already has that value.
fn set_evacuated(state: &mut State, member: &str, evacuated: bool) -> Result<(), ApiError> {
    let record = state.records_mut().member_mut(member);
    if record.evacuated == evacuated {
        return Err(ApiError::internal(if evacuated {
            "Cluster member is already evacuated"
        } else {
            "Cluster member is already restored"
        }));
    }
    record.evacuated = evacuated;
    Ok(())
}

/// What evacuation does with the instance `project`/`name` by default (`CanMigrate`): its
/// expanded config's `cluster.evacuate` (a profile's counts unless the instance sets its own),
/// else by its kind and `migration.stateful`.
fn default_action(state: &State, project: &str, name: &str) -> String {
    let Some(instance) = state.instance(project, name) else {
        return "migrate".into();
    };
    let config = instance.expanded_config(state);
    match config.get("cluster.evacuate").map(String::as_str) {
        Some(mode) if !mode.is_empty() && mode != "auto" => mode.to_string(),
        _ if instance.kind == "virtual-machine"
            && config
                .get("migration.stateful")
                .is_some_and(|v| v == "true") =>
        {
            "live-migrate".into()
        }
        _ => "migrate".into(),
    }
}

fn step(verb: &str, instance: &Instance) -> String {
    format!(
        "{verb} \"{}\" in project \"{}\"",
        instance.name, instance.project
    )
}

/// Stops the instance for an evacuation, remembering that it ran.
fn stop_for_evacuation(instance: &mut Instance) {
    instance.power_off();
    instance.config.insert(LAST_POWER.into(), "RUNNING".into());
}

/// The instances on `member`, as `(project, name)` in creation order.
fn instances_where(state: &State, keep: impl Fn(&Instance) -> bool) -> Vec<(String, String)> {
    state
        .instances
        .iter()
        .filter(|i| keep(i))
        .map(|i| (i.project.clone(), i.name.clone()))
        .collect()
}

fn evacuate_member(
    cluster: &Cluster,
    member: &str,
    mode: &str,
    state: &mut State,
) -> Result<Option<String>, ApiError> {
    set_evacuated(state, member, true)?;
    let mut last = None;
    let on_member = instances_where(state, |i| i.location.as_deref() == Some(member));
    for (project, name) in on_member {
        let mut action = if mode.is_empty() || mode == "auto" {
            default_action(state, &project, &name)
        } else {
            mode.to_string()
        };
        let Some(instance) = state.instance_mut(&project, &name) else {
            continue;
        };
        let running = instance.status != PowerState::Stopped;
        if action != "live-migrate" {
            if running {
                last = Some(step("Stopping", instance));
                stop_for_evacuation(instance);
            }
            if action != "migrate" {
                continue;
            }
        } else if !running {
            action = "migrate".into();
        }
        let group = instance.config.get("volatile.cluster.group").cloned();
        let want = Want {
            within: group.as_deref(),
            not: Some(member),
            ..Want::default()
        };
        let Some(to) = cluster.place(&state.records(), &want, |m| {
            instances_on(&state.instances, m)
        }) else {
            continue;
        };
        let Some(instance) = state.instance_mut(&project, &name) else {
            continue;
        };
        last = Some(format!("{} to \"{to}\"", step("Migrating", instance)));
        if !instance.config.contains_key(ORIGIN) {
            instance.config.insert(ORIGIN.into(), member.into());
        }
        if action == "live-migrate" {
            let _ = set_evacuated(state, member, false);
            return Err(ApiError::internal(format!(
                "Failed to evacuate instances: Failed to migrate instance \"{name}\" in project \"{project}\": {SOURCE_SETUP}{NO_CRIU}"
            )));
        }
        relocate(instance, &to, None);
        let autostart = instance
            .config
            .get("boot.autostart")
            .is_some_and(|v| v == "true");
        if running || autostart {
            last = Some(step("Starting", instance));
            instance.power_on();
        }
    }
    Ok(last)
}

fn restore_member(member: &str, state: &mut State) -> Result<Option<String>, ApiError> {
    set_evacuated(state, member, false)?;
    let mut last = None;
    let local = instances_where(state, |i| i.location.as_deref() == Some(member));
    for (project, name) in local {
        let Some(instance) = state.instance_mut(&project, &name) else {
            continue;
        };
        let ran = instance
            .config
            .get(LAST_POWER)
            .is_some_and(|p| p == "RUNNING");
        if ran && instance.status == PowerState::Stopped {
            last = Some(step("Starting", instance));
            instance.power_on();
        }
    }
    let evacuated = instances_where(state, |i| {
        i.location.as_deref() != Some(member) && i.config.get(ORIGIN).is_some_and(|o| o == member)
    });
    for (project, name) in evacuated {
        let live = default_action(state, &project, &name) == "live-migrate";
        let Some(instance) = state.instance_mut(&project, &name) else {
            continue;
        };
        let from = instance.location.clone().unwrap_or_default();
        last = Some(format!("{} from \"{from}\"", step("Migrating", instance)));
        let running = instance.status != PowerState::Stopped;
        if running && live {
            let _ = set_evacuated(state, member, true);
            return Err(ApiError::internal(format!(
                "Failed to restore instances: Failed to wait for migration to finish: {SOURCE_SETUP}{NO_CRIU}"
            )));
        }
        if running {
            last = Some(step("Stopping", instance));
            instance.power_off();
        }
        relocate(instance, member, None);
        instance.config.remove(ORIGIN);
        if running {
            last = Some(step("Starting", instance));
            instance.power_on();
        }
    }
    Ok(last)
}
