//! `/1.0/instances/{name}/logs[/{file}]`: the instance's log files (`lxc.log`, empty: the fake
//! runs no container, for `incus info --show-log`; the others missing, and deleted as the daemon
//! deletes a missing one); `…/logs/exec-output[/{file}]`: the output
//! recorded by task-mode exec with `record-output: true` (list, raw download, delete); and
//! `…/console?type=log` (`incus console --show-log`, empty as the daemon's for a busybox
//! container) and its `DELETE`.

use super::{instance_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use http::{header, HeaderValue, Method, Response};
use serde_json::Value;

/// The log handlers load the instance before they read its log directory (Incus commit
/// "incusd/instance_logs: Use LogPath", 6.x, which landed after `daemon_storage_logs`): the
/// log list of an unknown instance is the instance's 404.
const LOGS_LOAD_THE_INSTANCE: &str = "daemon_storage_logs";

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> ApiResult {
    // A method the route has no handler for is the daemon's 501, before anything is looked up.
    let handled = match rest {
        [_, "logs"] | [_, "logs", "exec-output"] => *method == Method::GET,
        [_, "logs", _] | [_, "logs", "exec-output", _] | [_, "console"] => {
            *method == Method::GET || *method == Method::DELETE
        }
        _ => return Err(ApiError::not_found()),
    };
    if !handled {
        return Err(ApiError::not_implemented());
    }
    let project = ctx.project();
    let name = rest.first().copied().unwrap_or_default();
    // The daemon's log directory of the instance (`/var/log/incus/<project>_<name>`).
    let dir = match project.as_str() {
        "default" => name.to_owned(),
        project => format!("{project}_{name}"),
    };
    if ctx.app.state().instance(&project, name).is_none() {
        // The log list read the instance's log directory before anything else until the
        // handlers loaded the instance first.
        if matches!(rest, [_, "logs"]) && !ctx.app.has_extension(LOGS_LOAD_THE_INSTANCE) {
            return Err(ApiError::new(
                404,
                format!("open /var/log/incus/{dir}: no such file or directory"),
            ));
        }
        return Err(instance_not_found(name, &project));
    }
    let key = (project, name.to_string());
    match (rest, method.as_str()) {
        ([_, "logs"], "GET") => Ok(envelope::sync(Value::Array(vec![Value::String(format!(
            "/1.0/instances/{name}/logs/lxc.log"
        ))]))),
        ([_, "logs", file], _) if *file != "exec-output" && !valid_log_name(file) => Err(
            ApiError::bad_request(format!("Log file name {file:?} not valid")),
        ),
        ([_, "logs", "lxc.log"], "GET") => Ok(download("lxc.log", Vec::new())),
        // The fake writes no other log file: each is missing, as it is on the daemon until
        // the instance runs a VM, migrates or is snapshotted.
        ([_, "logs", file], "GET") if *file != "exec-output" => Err(ApiError::new(
            404,
            format!("open /var/log/incus/{dir}/{file}: no such file or directory"),
        )),
        ([_, "logs", file], "DELETE") => {
            if !file.ends_with(".log") || *file == "lxc.log" || *file == "qemu.log" {
                return Err(ApiError::bad_request(
                    "Only log files excluding qemu.log and lxc.log may be deleted",
                ));
            }
            Err(ApiError::new(
                404,
                format!("remove /var/log/incus/{dir}/{file}: no such file or directory"),
            ))
        }
        ([_, "console"], "GET") => match ctx.param("type").unwrap_or("log") {
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
        },
        ([_, "console"], "DELETE") => {
            ctx.applied();
            Ok(envelope::sync(serde_json::json!({})))
        }
        ([_, "logs", "exec-output"], "GET") => {
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
        ([_, "logs", "exec-output", file], "GET") => {
            let bytes = ctx
                .app
                .exec_logs()
                .get(&key)
                .and_then(|files| files.get(*file).cloned());
            let bytes = bytes.ok_or_else(ApiError::not_found)?;
            Ok(download(file, bytes))
        }
        ([_, "logs", "exec-output", file], "DELETE") => {
            let removed = ctx
                .app
                .exec_logs()
                .get_mut(&key)
                .and_then(|files| files.remove(*file));
            removed.ok_or_else(ApiError::not_found)?;
            ctx.applied();
            Ok(envelope::empty())
        }
        _ => Err(ApiError::not_implemented()),
    }
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
