//! `POST /1.0/instances/{name}/debug/repair` (Incus 7.0, API extension
//! `instances_debug_repair`): a low-level repair of an instance; its one action,
//! `rebuild-config-volume`, remakes a stopped virtual machine's config volume on a QCOW2-backed
//! pool. The daemon's checks and texts in its order (`cmd/incusd/instance_debug.go`): the body,
//! the action, the instance, then a virtual machine, stopped, on QCOW2, which the fake's `dir`
//! pool never is.

use super::{found_instance, parse_body, Ctx};
use crate::envelope::{ApiError, ApiResult};
use crate::state::PowerState;
use serde::Deserialize;

pub(super) const EXTENSION: &str = "instances_debug_repair";

/// `api.InstanceDebugRepairPost`.
#[derive(Deserialize)]
struct InstanceDebugRepairPost {
    #[serde(default, deserialize_with = "super::null_default")]
    action: String,
}

pub(super) fn repair(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let req: InstanceDebugRepairPost = parse_body(body)?;
    if req.action != "rebuild-config-volume" {
        return Err(ApiError::bad_request(format!(
            "Invalid repair action {:?}",
            req.action
        )));
    }
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let instance = found_instance(&snapshot.state, &project, name)?;
    Err(ApiError::internal(if instance.kind != "virtual-machine" {
        "Config volume rebuild is only possible on VMs"
    } else if instance.status != PowerState::Stopped {
        "Config volume rebuild is only possible on stopped VMs"
    } else {
        "Config volume rebuild is only possible on QCOW2 backed VMs"
    }))
}
