//! `POST /1.0/instances/{name}/console`: attaches to a container's console, as the daemon's
//! `instanceConsolePost`: the body, the console type, the instance, its type and power state are
//! checked in the daemon's order, then a websocket operation (`Showing console`) is created whose
//! session ([`crate::exec`]'s console) runs what the image's init runs on the console.

use super::body::check_field_kinds;
use super::{instance_not_found, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::exec::interpreter::{self, fs::Fs};
use crate::exec::{ConsoleProgram, ExecRequest};
use crate::operations::OpSpec;
use crate::state::PowerState;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The operation's description (the daemon's `ConsoleShow` type).
const DESCRIPTION: &str = "Showing console";

#[derive(Deserialize, Default)]
#[serde(default)]
struct ConsoleBody {
    #[serde(deserialize_with = "super::null_default")]
    width: i64,
    #[serde(deserialize_with = "super::null_default")]
    height: i64,
    #[serde(rename = "type")]
    #[serde(deserialize_with = "super::null_default")]
    kind: String,
    #[serde(deserialize_with = "super::null_default")]
    force: bool,
}

pub(super) fn post(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    if name.contains('/') {
        return Err(ApiError::bad_request("Invalid instance name"));
    }
    // The daemon reads the body with `json.Unmarshal`, which words an empty one so.
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("unexpected end of JSON input"));
    }
    check_field_kinds(
        body,
        "InstanceConsolePost",
        &[
            ("width", "int"),
            ("height", "int"),
            ("type", "string"),
            ("force", "bool"),
        ],
    )?;
    let req: ConsoleBody = parse_body(body)?;
    let kind = if req.kind.is_empty() {
        "console"
    } else {
        req.kind.as_str()
    };
    if !matches!(kind, "console" | "vga") {
        return Err(ApiError::bad_request(format!(
            "Unknown console type {kind:?}"
        )));
    }
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| instance_not_found(name, &project))?;
        if kind == "vga" && instance.kind != "virtual-machine" {
            return Err(ApiError::bad_request(
                "VGA console is only supported by virtual machines",
            ));
        }
        match instance.status {
            PowerState::Stopped => return Err(ApiError::bad_request("Instance is not running")),
            PowerState::Frozen => return Err(ApiError::bad_request("Instance is frozen")),
            PowerState::Running => {}
        }
        instance.url()
    };
    if let Some(attached) = attached_console(ctx, &project, &instance_url) {
        if !req.force {
            return Err(ApiError::internal(
                "This console is already connected. Force is required to take it over.",
            ));
        }
        ctx.app.operations.cancel_operation(&attached)?;
    }
    let program = console_program(ctx, &project, name);
    let spec = OpSpec {
        class: "websocket",
        may_cancel: true,
        ..OpSpec::task(&project, DESCRIPTION, instance_url)
    };
    let (id, _) = ctx.create_operation(spec);
    let fds = ctx.app.exec.start_console_session(&id, program);
    ctx.app
        .operations
        .init_operation_metadata(&id, json!({ "fds": fds }));
    let _ = (req.width, req.height);
    ctx.applied();
    let op = ctx
        .app
        .operations
        .ops()
        .get(&id)
        .map(|op| op.to_json())
        .unwrap_or(Value::Null);
    Ok(envelope::operation_created(op))
}

/// The running console operation of the instance at `url`, if one is attached.
fn attached_console(ctx: &Ctx, project: &str, url: &str) -> Option<String> {
    ctx.app
        .operations
        .ops()
        .list
        .iter()
        .find(|op| {
            op.spec.description == DESCRIPTION
                && op.spec.project == project
                && !op.status.is_final()
                && op
                    .spec
                    .resources
                    .get("instances")
                    .is_some_and(|urls| urls.iter().any(|u| u == url))
        })
        .map(|op| op.id.clone())
}

/// What the instance's init runs on its console: read from its `/etc/inittab`; a shell there
/// starts as busybox's init starts it (the environment measured on the daemon's console).
fn console_program(ctx: &Ctx, project: &str, name: &str) -> ConsoleProgram {
    let fs: Arc<dyn interpreter::FileSystem> = Arc::new(ctx.app.instance_fs(project, name));
    let inittab = Fs(Arc::clone(&fs)).read("/etc/inittab").ok();
    let inittab = inittab.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let environment = BTreeMap::from(
        [
            ("HOME", "/"),
            ("PATH", "/sbin:/usr/sbin:/bin:/usr/bin"),
            ("SHELL", "/bin/sh"),
            ("TERM", "vt102"),
            ("USER", "root"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let req = ExecRequest {
        command: vec!["/bin/sh".into()],
        environment: crate::exec::incus_environment(&environment, 0),
        user: 0,
        group: 0,
        cwd: "/".into(),
        fs,
        hostname: name.to_owned(),
    };
    ConsoleProgram::from_inittab(inittab.as_deref(), req)
}
