//! Power state: `/1.0/instances/{name}/state` (read it, start, stop, restart, freeze, unfreeze) and
//! `PUT /1.0/instances`, the same change for every instance of a project it applies to. (The
//! resources' state is `crate::state`.)

use super::{instance_not_found, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::{PowerState, State};
use serde::Deserialize;
use std::time::Duration;

/// How long a start, stop, freeze or unfreeze takes in the fake (see [`Action::duration`]).
const STATE_CHANGE_DURATION: Duration = Duration::from_millis(200);
/// How long a restart takes in the fake: a stop, then a start.
const RESTART_DURATION: Duration = Duration::from_millis(400);

pub(super) fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let view = snapshot
        .instance(&project, name)
        .ok_or_else(|| instance_not_found(name, &project))?;
    Ok(envelope::sync_raw([view.state_json().as_ref()], None))
}

/// `api.InstanceStatePut`. The fields the fake does not act on are still parsed, so a
/// wrong type is the daemon's 400.
#[derive(Deserialize, Default)]
struct StateBody {
    #[serde(default)]
    #[serde(deserialize_with = "super::null_default")]
    action: String,
    #[serde(default, rename = "timeout")]
    #[serde(deserialize_with = "super::null_default")]
    _timeout: i64,
    #[serde(default, rename = "force")]
    #[serde(deserialize_with = "super::null_default")]
    _force: bool,
    #[serde(default, rename = "stateful")]
    #[serde(deserialize_with = "super::null_default")]
    _stateful: bool,
}

/// `api.InstancesPut`.
#[derive(Deserialize)]
struct InstancesPut {
    #[serde(default, deserialize_with = "super::null_default")]
    state: StateBody,
}

#[derive(Clone, Copy)]
enum Action {
    Start,
    Stop,
    Restart,
    Freeze,
    Unfreeze,
}

impl Action {
    fn parse(text: &str) -> Result<Self, ApiError> {
        Ok(match text {
            "start" => Self::Start,
            "stop" => Self::Stop,
            "restart" => Self::Restart,
            "freeze" => Self::Freeze,
            "unfreeze" => Self::Unfreeze,
            other => return Err(ApiError::bad_request(format!("Unknown action: '{other}'"))),
        })
    }
    /// How long the change takes in the fake: a real daemon takes about half a second to start, stop,
    /// freeze or unfreeze a small container and about a second to restart it, so its 202 and a wait of
    /// 0 s show the operation `Running`. Kept shorter here so that test suites stay quick; the
    /// `operation_duration` fault sets any other length, 0 included.
    fn duration(self) -> Duration {
        match self {
            Self::Restart => RESTART_DURATION,
            Self::Start | Self::Stop | Self::Freeze | Self::Unfreeze => STATE_CHANGE_DURATION,
        }
    }

    fn description(self) -> &'static str {
        match self {
            Self::Start => "Starting instance",
            Self::Stop => "Stopping instance",
            Self::Restart => "Restarting instance",
            Self::Freeze => "Freezing instance",
            Self::Unfreeze => "Unfreezing instance",
        }
    }
}

pub(super) fn put(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let (instance_url, status) = {
        let state = ctx.app.state();
        let instance = super::found_instance(&state, &project, name)?;
        (instance.url(), instance.status)
    };
    let req: StateBody = parse_body(body)?;
    let action = Action::parse(&req.action)?;
    let name = name.to_string();
    // A transition the daemon refuses fails at once (before the client has subscribed to the
    // operation, so the official client shows the bare error, without its `--show-log` hint).
    let duration = match refusal(action, status) {
        Some(_) => Duration::ZERO,
        None => action.duration(),
    };
    let spec = OpSpec::task(&project, action.description(), instance_url).lasting(duration);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| apply(state, &project, &name, action).map(|()| None)),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// `PUT /1.0/instances` (`api.InstancesPut`, `incus start --all` and the like): one operation
/// that changes the state of every instance of the project the action applies to (a start the
/// stopped ones, a stop or restart the running and frozen ones, a freeze the running ones, an
/// unfreeze the frozen ones), chosen when the request comes, as the daemon chooses them. The
/// operation fails with every instance's failure, one line each, when any fails.
pub(super) fn put_all(ctx: &Ctx, body: &[u8]) -> ApiResult {
    if ctx
        .app
        .has_extension(crate::line::INSTANCES_PUT_NEEDS_PROJECT)
    {
        ctx.require_project(|_| "Project not found".into())?;
    }
    let req: InstancesPut = parse_body(body)?;
    let action = Action::parse(&req.state.action)?;
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    if state.project(&project).is_none() {
        // The daemon only finds out when it records the operation.
        return Err(ApiError::internal(format!(
            "failed to add {:?} Operation {} to database: Fetch project ID: Project not found",
            action.description(),
            uuid::Uuid::new_v4()
        )));
    }
    let chosen: Vec<(String, String)> = state
        .instances
        .iter()
        .filter(|i| i.project == project)
        .filter(|i| match (action, i.status) {
            (Action::Start, status) => status == PowerState::Stopped,
            (Action::Stop | Action::Restart | Action::Freeze, status) => {
                status != PowerState::Stopped
            }
            (Action::Unfreeze, status) => status == PowerState::Frozen,
        })
        .map(|i| (i.name.clone(), i.url()))
        .collect();
    drop(snapshot);
    let mut spec =
        OpSpec::task(&project, action.description(), String::new()).lasting(action.duration());
    spec.resources.clear();
    if !chosen.is_empty() {
        let urls = chosen.iter().map(|(_, url)| url.clone()).collect();
        spec.resources.insert("instances".into(), urls);
    }
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let mut failed = String::new();
            for (name, _) in &chosen {
                if let Err(err) = apply(state, &project, name, action) {
                    failed.push_str(&format!(" - Instance: {name}: {}\n", err.message));
                }
            }
            if failed.is_empty() {
                Ok(None)
            } else {
                Err(ApiError::internal(format!(
                    "The following instances failed to update state:\n{failed}"
                )))
            }
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// Why the daemon refuses `action` on an instance in `status` (its texts and codes), if it does.
fn refusal(action: Action, status: PowerState) -> Option<ApiError> {
    match (action, status) {
        (Action::Start, PowerState::Stopped)
        | (Action::Stop | Action::Restart, PowerState::Running | PowerState::Frozen)
        | (Action::Freeze, PowerState::Running)
        | (Action::Unfreeze, PowerState::Frozen) => None,
        (Action::Start, _) => Some(ApiError::internal("The instance is already running")),
        (Action::Stop | Action::Restart, PowerState::Stopped) => {
            Some(ApiError::bad_request("The instance is already stopped"))
        }
        (Action::Freeze, PowerState::Frozen) => {
            Some(ApiError::internal("The container is already frozen"))
        }
        (Action::Freeze, PowerState::Stopped) => {
            Some(ApiError::internal("The instance isn't running"))
        }
        (Action::Unfreeze, PowerState::Stopped) => {
            Some(ApiError::internal("The container isn't running"))
        }
        (Action::Unfreeze, PowerState::Running) => {
            Some(ApiError::internal("The container is already running"))
        }
    }
}

/// The power transition with the daemon's failure texts and codes.
fn apply(state: &mut State, project: &str, name: &str, action: Action) -> Result<(), ApiError> {
    let instance = super::found_instance_mut(state, project, name)?;
    if let Some(refused) = refusal(action, instance.status) {
        return Err(refused);
    }
    match action {
        Action::Start => instance.power_on(),
        Action::Stop => instance.power_off(),
        Action::Restart => {
            // The stop records that the instance has not reported ready yet.
            instance.power_off();
            instance.power_on();
        }
        Action::Freeze => instance.status = PowerState::Frozen,
        Action::Unfreeze => instance.status = PowerState::Running,
    }
    if matches!(action, Action::Stop) && instance.ephemeral {
        // Ephemeral instances are deleted when they stop.
        state
            .instances
            .retain(|i| !(i.project == project && i.name == name));
    }
    Ok(())
}
