//! `/1.0/instances/{name}/logs[/{file}]`: the instance's log files (`lxc.log`, empty: the fake
//! runs no container, for `incus info --show-log`; the others missing, and deleted as the daemon
//! deletes a missing one); `…/logs/exec-output[/{file}]`: the output
//! recorded by task-mode exec with `record-output: true` (list, raw download, delete); and
//! `…/console?type=log` (`incus console --show-log`, empty as the daemon's for a busybox
//! container) and its `DELETE`.

use super::{instance_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use http::{header, HeaderValue, Response};
use serde_json::Value;

/// The log handlers load the instance before they read its log directory (Incus commit
/// "incusd/instance_logs: Use LogPath", 6.x, which landed after `daemon_storage_logs`): the
/// log list of an unknown instance is the instance's 404.
const LOGS_LOAD_THE_INSTANCE: &str = "daemon_storage_logs";

/// What every log endpoint reads first: the instance (its 404), and where the daemon keeps its
/// logs (`/var/log/incus/<project>_<name>`) with the key of its recorded exec output. `listing`:
/// the log list, which read the log directory before anything else until the handlers loaded
/// the instance first.
fn instance_logs(
    ctx: &Ctx,
    name: &str,
    listing: bool,
) -> Result<(String, (String, String)), ApiError> {
    let project = ctx.project();
    // The daemon's log directory of the instance (`/var/log/incus/<project>_<name>`).
    let dir = match project.as_str() {
        "default" => name.to_owned(),
        project => format!("{project}_{name}"),
    };
    if ctx.app.state().instance(&project, name).is_none() {
        // The log list read the instance's log directory before anything else until the
        // handlers loaded the instance first.
        if listing && !ctx.app.has_extension(LOGS_LOAD_THE_INSTANCE) {
            return Err(ApiError::new(
                404,
                format!("open /var/log/incus/{dir}: no such file or directory"),
            ));
        }
        return Err(instance_not_found(name, &project));
    }
    Ok((dir, (project, name.to_string())))
}

/// `GET /1.0/instances/{name}/logs`.
pub(super) fn list(ctx: &Ctx, name: &str) -> ApiResult {
    instance_logs(ctx, name, true)?;
    Ok(envelope::sync(Value::Array(vec![Value::String(format!(
        "/1.0/instances/{name}/logs/lxc.log"
    ))])))
}

/// A log file's name, as the daemon checks it.
fn check_log_name(file: &str) -> Result<(), ApiError> {
    if valid_log_name(file) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "Log file name {file:?} not valid"
        )))
    }
}

/// `GET /1.0/instances/{name}/logs/{file}`.
pub(super) fn file(ctx: &Ctx, name: &str, file: &str) -> ApiResult {
    let (dir, _) = instance_logs(ctx, name, false)?;
    check_log_name(file)?;
    if file == "lxc.log" {
        return Ok(download("lxc.log", Vec::new()));
    }
    // The fake writes no other log file: each is missing, as it is on the daemon until
    // the instance runs a VM, migrates or is snapshotted.
    Err(ApiError::new(
        404,
        format!("open /var/log/incus/{dir}/{file}: no such file or directory"),
    ))
}

/// `DELETE /1.0/instances/{name}/logs/{file}`.
pub(super) fn delete_file(ctx: &Ctx, name: &str, file: &str) -> ApiResult {
    let (dir, _) = instance_logs(ctx, name, false)?;
    check_log_name(file)?;
    if !file.ends_with(".log") || file == "lxc.log" || file == "qemu.log" {
        return Err(ApiError::bad_request(
            "Only log files excluding qemu.log and lxc.log may be deleted",
        ));
    }
    Err(ApiError::new(
        404,
        format!("remove /var/log/incus/{dir}/{file}: no such file or directory"),
    ))
}

/// `GET /1.0/instances/{name}/console` (`type=log`, the default): the console log, empty.
pub(super) fn console(ctx: &Ctx, name: &str) -> ApiResult {
    instance_logs(ctx, name, false)?;
    match ctx.param("type").unwrap_or("log") {
        "log" | "" => {
            let mut response = Response::new(envelope::full(Vec::new()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            Ok(response)
        }
        other => Err(ApiError::internal(format!(
            "Invalid value for type parameter: {other}"
        ))),
    }
}

/// `DELETE /1.0/instances/{name}/console`: the console log cleared.
pub(super) fn clear_console(ctx: &Ctx, name: &str) -> ApiResult {
    instance_logs(ctx, name, false)?;
    ctx.applied();
    Ok(envelope::sync(serde_json::json!({})))
}

/// `GET /1.0/instances/{name}/logs/exec-output`.
pub(super) fn exec_outputs(ctx: &Ctx, name: &str) -> ApiResult {
    let (_, key) = instance_logs(ctx, name, false)?;
    let logs = ctx.app.exec_logs();
    let files: Vec<String> = logs
        .get(&key)
        .map(|files| files.keys().cloned().collect())
        .unwrap_or_default();
    let urls = files
        .iter()
        .map(|f| Value::String(format!("/1.0/instances/{name}/logs/exec-output/{f}")));
    Ok(envelope::sync(Value::Array(urls.collect())))
}

/// `GET /1.0/instances/{name}/logs/exec-output/{file}`.
pub(super) fn exec_output(ctx: &Ctx, name: &str, file: &str) -> ApiResult {
    let (_, key) = instance_logs(ctx, name, false)?;
    let bytes = ctx
        .app
        .exec_logs()
        .get(&key)
        .and_then(|files| files.get(file).cloned());
    let bytes = bytes.ok_or_else(ApiError::not_found)?;
    Ok(download(file, bytes))
}

/// `DELETE /1.0/instances/{name}/logs/exec-output/{file}`.
pub(super) fn delete_exec_output(ctx: &Ctx, name: &str, file: &str) -> ApiResult {
    let (_, key) = instance_logs(ctx, name, false)?;
    let removed = ctx
        .app
        .exec_logs()
        .get_mut(&key)
        .and_then(|files| files.remove(file));
    removed.ok_or_else(ApiError::not_found)?;
    ctx.applied();
    Ok(envelope::empty())
}

/// A file as the daemon sends it: octet-stream, `inline;filename=`.
fn download(file: &str, bytes: impl Into<bytes::Bytes>) -> Response<crate::envelope::Body> {
    let mut resp = Response::new(envelope::full(bytes));
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("inline;filename={file}")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    resp
}

/// The daemon's `validLogFileName`: its own log names, and migration and snapshot logs (a name,
/// never a path).
fn valid_log_name(file: &str) -> bool {
    !file.contains('/')
        && (matches!(
            file,
            "lxc.log" | "qemu.log" | "qemu.early.log" | "qemu.qmp.log"
        ) || file.starts_with("migration_")
            || file.starts_with("snapshot_"))
}
