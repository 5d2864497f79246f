//! `POST /1.0/instances/{name}/exec`: validates synchronously, then creates the websocket (or
//! task) operation handled by [`crate::exec`].

use super::{instance_not_found, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::exec::{self, ExecRequest};
use crate::operations::OpSpec;
use crate::state::PowerState;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

#[derive(Deserialize, Default)]
#[serde(default)]
struct ExecBody {
    #[serde(deserialize_with = "super::null_default")]
    command: Vec<String>,
    #[serde(deserialize_with = "super::null_default")]
    environment: BTreeMap<String, String>,
    #[serde(rename = "wait-for-websocket")]
    #[serde(deserialize_with = "super::null_default")]
    wait_for_websocket: bool,
    #[serde(deserialize_with = "super::null_default")]
    interactive: bool,
    #[serde(rename = "record-output")]
    #[serde(deserialize_with = "super::null_default")]
    record_output: bool,
    #[serde(deserialize_with = "super::null_default")]
    width: i64,
    #[serde(deserialize_with = "super::null_default")]
    height: i64,
    #[serde(deserialize_with = "super::null_default")]
    user: u32,
    #[serde(deserialize_with = "super::null_default")]
    group: u32,
    #[serde(deserialize_with = "super::null_default")]
    cwd: String,
}

pub(super) fn post(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let (instance_url, config_env) = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| instance_not_found(name, &project))?;
        match instance.status {
            PowerState::Stopped => return Err(ApiError::bad_request("Instance is not running")),
            PowerState::Frozen => return Err(ApiError::bad_request("Instance is frozen")),
            PowerState::Running => {}
        }
        let env: BTreeMap<String, String> = instance
            .expanded_config(&state)
            .into_iter()
            .filter_map(|(k, v)| k.strip_prefix("environment.").map(|k| (k.to_string(), v)))
            .collect();
        (instance.url(), env)
    };
    // The command runs on the instance's own files, the ones `incus file` and SFTP reach.
    let fs = std::sync::Arc::new(ctx.app.instance_fs(&project, name));
    let req: ExecBody = parse_body(body)?;
    if req.record_output && req.wait_for_websocket {
        return Err(ApiError::bad_request(
            "Cannot use \"record-output\" in combination with \"wait-for-websocket\"",
        ));
    }
    if req.interactive && req.record_output {
        return Err(ApiError::bad_request(
            "Cannot use \"interactive\" in combination with \"record-output\"",
        ));
    }
    let mut environment = config_env;
    environment.extend(req.environment);
    let environment = exec::incus_environment(&environment, req.user);
    // What the container's own environment (`lxc.environment`) adds for the process, which
    // the operation's metadata does not show.
    let mut process_environment = environment.clone();
    if ctx.app.has_extension(crate::line::SYSTEMD_CREDENTIALS) {
        process_environment
            .entry("CREDENTIALS_DIRECTORY".into())
            .or_insert_with(|| "/dev/.incus-systemd-credentials".into());
    }
    let command = ExecRequest {
        command: req.command.clone(),
        environment: process_environment,
        user: req.user,
        group: req.group,
        cwd: req.cwd,
        fs,
        hostname: name.to_string(),
    };
    let _ = (req.width, req.height);
    let op = if req.wait_for_websocket {
        let spec = OpSpec {
            class: "websocket",
            may_cancel: ctx.app.has_extension(crate::line::EXEC_CANCELLABLE),
            ..OpSpec::task(&project, "Executing command", instance_url)
        };
        let (id, _) = ctx.create_operation(spec);
        let fds = ctx.app.exec.start_websocket_session(
            &id,
            command,
            req.interactive,
            ctx.exec_faults(),
            ctx.operation_fault(),
        );
        let metadata = json!({
            "command": req.command, "environment": environment, "fds": fds, "interactive": req.interactive,
        });
        ctx.app.operations.init_operation_metadata(&id, metadata);
        operation_json(ctx, &id)
    } else {
        let mut spec = OpSpec::task(&project, "Executing command", instance_url.clone());
        spec.resources
            .insert("containers".into(), vec![instance_url]);
        let (id, _) = ctx.create_operation(spec);
        let record = req.record_output.then(|| exec::Recording {
            project: project.clone(),
            instance: name.to_string(),
        });
        ctx.app.exec.start_task_session(
            &id,
            command,
            ctx.exec_faults(),
            ctx.operation_fault(),
            record,
        );
        operation_json(ctx, &id)
    };
    ctx.applied();
    Ok(envelope::operation_created(op))
}

fn operation_json(ctx: &Ctx, id: &str) -> Value {
    ctx.app
        .operations
        .ops()
        .get(id)
        .map(|op| op.to_json())
        .unwrap_or(Value::Null)
}
