//! Instances across cluster members, as a real Incus 6.0.4 cluster without CRIU answers:
//! moves (`POST /1.0/instances/{name}?target=...` with `"migration": true`, what `incus move c
//! --target m3` sends), the checks a copy across members and an evacuated member add, and the
//! relocation that moves and evacuation share.
//!
//! Measured on a real 3-member cluster (loopback, dir pools, busybox containers):
//! - a stopped instance moves: 202 `Migrating instance`, the operation on the member the
//!   instance was on, its `location` (and its snapshots' and volumes') the target's after;
//! - to its own member: 400 `Requested target server is the same as current server`;
//! - a running one with `live: false`: 400 `Instance must be stopped to be moved statelessly`;
//!   with `live: true` (the CLI's default) the operation fails with `Failed setting up instance
//!   migration on source: ` and [`NO_CRIU`];
//! - `@group` picks the group's member with the fewest instances other than the current one and
//!   records `volatile.cluster.group`; a member target removes it; an unknown group is 400
//!   `Cluster group "x" doesn't exist`, an unknown member 404 `Cluster member "x" not found`;
//! - moving onto an evacuated member is allowed; creating there (any source) and any state
//!   change but `stop` of an instance there are 403 `Cluster member is evacuated`;
//! - a copy of a running instance with `source.live: true` (the CLI's default for a running
//!   source) onto another member is a 500 [`NO_CRIU`] at once; onto its own member, or with
//!   `live: false`, it is made.

use super::router::segments;
use super::{parse_body, Ctx};
use crate::cluster::{Cluster, Want};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::{PowerState, State};
use bytes::Bytes;
use http::{Method, Request};
use serde::Deserialize;
use serde_json::{json, Value};

/// The daemon's text for a live migration of a container on a host without CRIU.
pub(super) const NO_CRIU: &str = "Unable to perform live container migration. CRIU isn't installed on the source server. To migrate the container, stop the container before migration or install CRIU on the source server";

/// The prefix a failed migration's source side puts before [`NO_CRIU`].
pub(super) const SOURCE_SETUP: &str = "Failed setting up instance migration on source: ";

/// The cluster's own answer to a request, before its resource handler sees it (`None`: the
/// handler serves it).
pub(super) fn before(ctx: &Ctx, cluster: &Cluster, req: &Request<Bytes>) -> Option<ApiResult> {
    let segs = segments(req.uri().path());
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let method = req.method();
    match segs.as_slice() {
        ["1.0", "instances", name] if method == Method::POST && !super::is_upgrade(req) => {
            let target = ctx.param("target").filter(|t| !t.is_empty())?;
            let body: MoveBody = match parse_body(req.body()) {
                Ok(body) => body,
                Err(e) => return Some(Err(e)),
            };
            body.migration
                .then(|| move_instance(ctx, cluster, name, target, body))
        }
        ["1.0", "instances"] if method == Method::POST && !super::is_upgrade(req) => {
            creation(ctx, req.body()).err().map(Err)
        }
        ["1.0", "instances", _, "state"] if method == Method::PUT => {
            state_change(ctx, req.body()).err().map(Err)
        }
        _ => None,
    }
}

fn evacuated() -> ApiError {
    ApiError::new(403, "Cluster member is evacuated")
}

/// A creation on an evacuated member is refused; a live copy of a running instance on another
/// member needs CRIU.
fn creation(ctx: &Ctx, body: &[u8]) -> Result<(), ApiError> {
    let Some(here) = ctx.location() else {
        return Ok(());
    };
    if ctx.app.snapshot().state.records().evacuated(&here) {
        return Err(evacuated());
    }
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    let source = &body["source"];
    if source["type"].as_str() != Some("copy") || source["live"].as_bool() != Some(true) {
        return Ok(());
    }
    let project = source["project"]
        .as_str()
        .filter(|p| !p.is_empty())
        .map_or_else(|| ctx.project(), str::to_string);
    let name = source["source"].as_str().unwrap_or_default();
    let state = ctx.app.state();
    let Some(from) = state.instance(&project, name) else {
        return Ok(());
    };
    if from.status != PowerState::Stopped && from.location.as_deref() != Some(here.as_str()) {
        return Err(ApiError::internal(NO_CRIU));
    }
    Ok(())
}

/// Any state change but `stop` on an evacuated member is refused (a body that does not parse
/// is the handler's 400).
fn state_change(ctx: &Ctx, body: &[u8]) -> Result<(), ApiError> {
    let Some(here) = ctx.location() else {
        return Ok(());
    };
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    if body["action"].as_str() != Some("stop")
        && ctx.app.snapshot().state.records().evacuated(&here)
    {
        return Err(evacuated());
    }
    Ok(())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MoveBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    migration: bool,
    #[serde(deserialize_with = "super::null_default")]
    live: bool,
}

/// Where a `?target=` sends an instance now on `current`: the member, or the `@group`'s member
/// with the fewest instances other than `current`.
pub(super) fn resolve_target(
    ctx: &Ctx,
    cluster: &Cluster,
    target: &str,
    current: Option<&str>,
) -> Result<String, ApiError> {
    if let Some(group) = target.strip_prefix('@') {
        let snapshot = ctx.app.snapshot();
        let records = snapshot.state.records();
        if records.group(group).is_none() {
            return Err(ApiError::bad_request(format!(
                "Cluster group \"{group}\" doesn't exist"
            )));
        }
        let want = Want {
            group: Some(group),
            not: current,
            ..Want::default()
        };
        return cluster
            .place(&records, &want, |m| {
                instances_on(&snapshot.state.instances, m)
            })
            .ok_or_else(|| ApiError::internal("Couldn't find a cluster member for the instance"));
    }
    if cluster.member(target).is_none() {
        return Err(ApiError::new(
            404,
            format!("Cluster member \"{target}\" not found"),
        ));
    }
    Ok(target.to_string())
}

/// How many instances live on `member`.
pub(super) fn instances_on<I: std::ops::Deref<Target = crate::state::Instance>>(
    instances: &[I],
    member: &str,
) -> usize {
    instances
        .iter()
        .filter(|i| i.location.as_deref() == Some(member))
        .count()
}

/// `POST /1.0/instances/{name}?target=T {"migration": true}`.
fn move_instance(
    ctx: &Ctx,
    cluster: &Cluster,
    name: &str,
    target: &str,
    req: MoveBody,
) -> ApiResult {
    let project = ctx.project();
    let (url, running, current) = {
        let state = ctx.app.state();
        let instance = super::found_instance(&state, &project, name)?;
        (
            instance.url(),
            instance.status != PowerState::Stopped,
            instance.location.clone(),
        )
    };
    let new_name = Some(req.name).filter(|n| !n.is_empty() && n != name);
    if let Some(new_name) = &new_name {
        super::validation::check_name(new_name)?;
        if ctx.app.state().instance(&project, new_name).is_some() {
            return Err(ApiError::new(
                409,
                format!("Name \"{new_name}\" already in use"),
            ));
        }
    }
    if running && !req.live {
        return Err(ApiError::bad_request(
            "Instance must be stopped to be moved statelessly",
        ));
    }
    if running && new_name.is_some() {
        return Err(ApiError::bad_request(
            "Instance must be stopped to change their names",
        ));
    }
    let to = resolve_target(ctx, cluster, target, current.as_deref())?;
    if cluster.status(&to, &ctx.app.snapshot().state.records()).0 == "Offline" {
        return Err(ApiError::bad_request("Target cluster member is offline"));
    }
    if current.as_deref() == Some(to.as_str()) {
        return Err(ApiError::bad_request(
            "Requested target server is the same as current server",
        ));
    }
    let group = target.strip_prefix('@').map(str::to_string);
    let spec = OpSpec::task(&project, "Migrating instance", url);
    let name = name.to_string();
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let instance = super::found_instance_mut(state, &project, &name)?;
            if instance.status != PowerState::Stopped {
                return Err(ApiError::internal(format!("{SOURCE_SETUP}{NO_CRIU}")));
            }
            relocate(instance, &to, group.as_deref());
            if let Some(new_name) = new_name {
                instance.name.clone_from(&new_name);
                app.files().rename_instance(&project, &name, &new_name);
            }
            Ok(Some(unpacked()))
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// Puts the instance on member `to`; a `@group` target is recorded in
/// `volatile.cluster.group`, a member target clears it.
pub(super) fn relocate(instance: &mut crate::state::Instance, to: &str, group: Option<&str>) {
    instance.location = Some(to.to_string());
    match group {
        Some(group) => {
            instance
                .config
                .insert("volatile.cluster.group".into(), group.into());
        }
        None => {
            instance.config.remove("volatile.cluster.group");
        }
    }
}

/// The metadata a finished move has: the target unpacked the instance's volume.
fn unpacked() -> Value {
    json!({
        "create_instance_from_image_unpack_progress": "Unpacking image: 100% (1.00GB/s)",
        "progress": {"percent": "100", "speed": "1000000000", "stage": "create_instance_from_image_unpack"},
    })
}
