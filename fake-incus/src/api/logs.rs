//! `/1.0/instances/{name}/logs[/{file}]`: the instance's log files (`lxc.log`, empty: the fake
//! runs no container, for `incus info --show-log`); `…/logs/exec-output[/{file}]`: the output
//! recorded by task-mode exec with `record-output: true` (list, raw download, delete); and
//! `…/console?type=log` (`incus console --show-log`, empty as the daemon's for a busybox
//! container) and its `DELETE`.

use super::{instance_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use http::{header, HeaderValue, Method, Response};
use serde_json::Value;

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> ApiResult {
    let project = ctx.project();
    let name = rest.first().copied().unwrap_or_default();
    if ctx.app.state().instance(&project, name).is_none() {
        // The log list reads the instance's log directory before anything else.
        if matches!(rest, [_, "logs"]) && method == Method::GET {
            let dir = match project.as_str() {
                "default" => name.to_owned(),
                project => format!("{project}_{name}"),
            };
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
        ([_, "logs", "lxc.log"], "GET") => Ok(download("lxc.log", Vec::new())),
        ([_, "logs", file], "GET") if *file != "exec-output" && !valid_log_name(file) => Err(
            ApiError::bad_request(format!("Log file name {file:?} not valid")),
        ),
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
        ([_, "logs", "exec-output"] | [_, "logs", "exec-output", _], _) => {
            Err(ApiError::not_implemented())
        }
        _ => Err(ApiError::not_found()),
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

/// The daemon's `validLogFileName`: its own log names and exec output files.
fn valid_log_name(file: &str) -> bool {
    matches!(file, "lxc.log" | "lxc.conf" | "qemu.log" | "qemu.conf")
        || (file.starts_with("exec_") && !file.contains('/'))
        || file.starts_with("migration_")
}
